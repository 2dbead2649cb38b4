package wire

import (
	"encoding/binary"
	"math"
)

// Builder appends little-endian values to B, the writing counterpart of a
// Cursor: event payloads and records for tests and encoders, one chained
// call a field. The zero value is an empty payload with 8-byte pointers.
type Builder struct {
	B []byte
	// PtrSize is the size Ptr writes: 4, or 8 for any other value.
	PtrSize int
}

// U8 appends v.
func (b *Builder) U8(v uint8) *Builder { b.B = append(b.B, v); return b }

// U16 appends v.
func (b *Builder) U16(v uint16) *Builder { b.B = binary.LittleEndian.AppendUint16(b.B, v); return b }

// U32 appends v.
func (b *Builder) U32(v uint32) *Builder { b.B = binary.LittleEndian.AppendUint32(b.B, v); return b }

// U64 appends v.
func (b *Builder) U64(v uint64) *Builder { b.B = binary.LittleEndian.AppendUint64(b.B, v); return b }

// F64 appends v's IEEE 754 bits.
func (b *Builder) F64(v float64) *Builder { return b.U64(math.Float64bits(v)) }

// Ptr appends v in PtrSize bytes.
func (b *Builder) Ptr(v uint64) *Builder {
	if b.PtrSize == 4 {
		return b.U32(uint32(v))
	}
	return b.U64(v)
}

// UTF16Z appends s in UTF-16 and a 16-bit zero.
func (b *Builder) UTF16Z(s string) *Builder {
	b.B = append(AppendUTF16(b.B, s), 0, 0)
	return b
}

// GUID appends g as it is (wire byte order).
func (b *Builder) GUID(g [16]byte) *Builder { b.B = append(b.B, g[:]...); return b }
