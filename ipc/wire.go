package ipc

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
)

// appendU16 and friends append little-endian integers.
func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendString appends s as a protocol string: a u32 count of UTF-16 code
// units including the terminating NUL, then the UTF-16LE code units and the
// NUL. The empty string is written as count 1 (only the NUL), as the .NET
// client does.
func appendString(b []byte, s string) []byte {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	b = appendU32(b, uint32(n+1))
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' || r2 != '\uFFFD' {
			b = appendU16(b, uint16(r1))
			b = appendU16(b, uint16(r2))
			continue
		}
		b = appendU16(b, uint16(r))
	}
	return appendU16(b, 0)
}

// appendOptionalString writes "" as count 0 (a null string) and anything
// else as appendString does. Used where the protocol documents a count of 0
// as "absent".
func appendOptionalString(b []byte, s string) []byte {
	if s == "" {
		return appendU32(b, 0)
	}
	return appendString(b, s)
}

// decoder is a sticky-error cursor over a payload. Every getter checks the
// remaining length before reading or allocating; after the first failure all
// getters return zero values and Err reports the failure.
type decoder struct {
	b   []byte
	off int
	err error
	// what names the structure being decoded, for error messages.
	what string
}

func newDecoder(what string, b []byte) *decoder { return &decoder{b: b, what: what} }

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) fail(field string, need int) {
	if d.err == nil {
		d.err = &ProtocolError{
			What:     d.what + " " + field,
			Offset:   d.off,
			Expected: need,
			Got:      d.remaining(),
		}
	}
}

func (d *decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.remaining() < n {
		d.fail(field, n)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) u8(field string) uint8 {
	p := d.take(field, 1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) boolean(field string) bool {
	v := d.u8(field)
	if d.err == nil && v > 1 {
		d.err = &ProtocolError{What: d.what + " " + field, Offset: d.off - 1, Reason: fmt.Sprintf("bool byte is %d, want 0 or 1", v)}
	}
	return v == 1
}

func (d *decoder) u16(field string) uint16 {
	p := d.take(field, 2)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (d *decoder) u32(field string) uint32 {
	p := d.take(field, 4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (d *decoder) u64(field string) uint64 {
	p := d.take(field, 8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *decoder) guid(field string) GUID {
	var g GUID
	copy(g[:], d.take(field, 16))
	return g
}

// str reads a protocol string. A count of 0 is the empty string (the .NET
// client crashes on it; the runtime may send it). The count is checked
// against the remaining bytes before anything is allocated, and a trailing
// NUL is dropped.
func (d *decoder) str(field string) string {
	n := d.u32(field + " length")
	if d.err != nil || n == 0 {
		return ""
	}
	if uint64(n)*2 > uint64(d.remaining()) {
		d.err = &ProtocolError{
			What:     d.what + " " + field,
			Offset:   d.off,
			Expected: int(min(uint64(n)*2, math.MaxInt32)),
			Got:      d.remaining(),
			Reason:   fmt.Sprintf("string claims %d UTF-16 code units", n),
		}
		return ""
	}
	p := d.take(field, int(n)*2)
	units := make([]uint16, n)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(p[2*i:])
	}
	if units[len(units)-1] == 0 {
		units = units[:len(units)-1]
	}
	return string(utf16.Decode(units))
}

// count reads an array length and checks that count items of at least
// minItem bytes each can still follow, so the caller may allocate count
// items safely.
func (d *decoder) count(field string, minItem int) int {
	n := d.u32(field + " count")
	if d.err != nil {
		return 0
	}
	if minItem < 1 {
		minItem = 1
	}
	if uint64(n)*uint64(minItem) > uint64(d.remaining()) {
		d.err = &ProtocolError{
			What:     d.what + " " + field,
			Offset:   d.off,
			Expected: int(min(uint64(n)*uint64(minItem), math.MaxInt32)),
			Got:      d.remaining(),
			Reason:   fmt.Sprintf("array claims %d items", n),
		}
		return 0
	}
	return int(n)
}

// finish returns the sticky error, if any.
func (d *decoder) finish() error { return d.err }
