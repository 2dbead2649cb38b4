package clrevents

import (
	"encoding/binary"
	"math"
	"unicode/utf16"
)

// payload builds little-endian test payloads.
type payload struct {
	b       []byte
	ptrSize int
}

func (p *payload) u8(v uint8) *payload   { p.b = append(p.b, v); return p }
func (p *payload) u16(v uint16) *payload { p.b = binary.LittleEndian.AppendUint16(p.b, v); return p }
func (p *payload) u32(v uint32) *payload { p.b = binary.LittleEndian.AppendUint32(p.b, v); return p }
func (p *payload) u64(v uint64) *payload { p.b = binary.LittleEndian.AppendUint64(p.b, v); return p }
func (p *payload) f64(v float64) *payload {
	return p.u64(math.Float64bits(v))
}
func (p *payload) ptr(v uint64) *payload {
	if p.ptrSize == 4 {
		return p.u32(uint32(v))
	}
	return p.u64(v)
}
func (p *payload) str(s string) *payload {
	for _, u := range utf16.Encode([]rune(s)) {
		p.u16(u)
	}
	return p.u16(0)
}
func (p *payload) guid(g [16]byte) *payload { p.b = append(p.b, g[:]...); return p }
