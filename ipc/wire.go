package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/clrdiag/clrdiag/internal/wire"
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
	b = appendU32(b, uint32(wire.UTF16Len(s)+1))
	b = wire.AppendUTF16(b, s)
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

// decoder is a sticky-error cursor over a payload (an internal/wire Cursor
// whose failures become *ProtocolError). Every getter checks the remaining
// length before reading or allocating; after the first failure all getters
// return zero values and finish reports the failure. Code may also set err
// directly to stop decoding.
type decoder struct {
	c   wire.Cursor
	err error
	// what names the structure being decoded, for error messages.
	what string
}

func newDecoder(what string, b []byte) *decoder { return &decoder{c: wire.NewCursor(b), what: what} }

func (d *decoder) remaining() int { return d.c.Remaining() }

func (d *decoder) offset() int { return d.c.Offset() }

// check turns a cursor failure into d.err and reports whether decoding may
// go on.
func (d *decoder) check() bool {
	if d.err != nil {
		return false
	}
	e := d.c.Failure()
	if e == nil {
		return true
	}
	pe := &ProtocolError{What: d.what + " " + e.Field, Offset: e.Offset, Expected: e.Need, Got: e.Have}
	switch {
	case errors.Is(e.Err, wire.ErrCount) && strings.HasSuffix(e.Field, " length"):
		pe.What = d.what + " " + strings.TrimSuffix(e.Field, " length")
		pe.Reason = fmt.Sprintf("string claims %d UTF-16 code units", e.Count)
	case errors.Is(e.Err, wire.ErrCount):
		pe.Reason = fmt.Sprintf("array claims %d items", e.Count)
	case !errors.Is(e.Err, wire.ErrShort):
		pe.Reason = e.Err.Error()
	}
	d.err = pe
	return false
}

// take returns the next n bytes (aliasing the payload).
func (d *decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	p := d.c.Take(field, n)
	d.check()
	return p
}

func (d *decoder) u8(field string) uint8 {
	if d.err != nil {
		return 0
	}
	v := d.c.U8(field)
	d.check()
	return v
}

func (d *decoder) boolean(field string) bool {
	v := d.u8(field)
	if d.err == nil && v > 1 {
		d.err = &ProtocolError{What: d.what + " " + field, Offset: d.c.Offset() - 1, Reason: fmt.Sprintf("bool byte is %d, want 0 or 1", v)}
	}
	return v == 1
}

func (d *decoder) u16(field string) uint16 {
	if d.err != nil {
		return 0
	}
	v := d.c.U16(field)
	d.check()
	return v
}

func (d *decoder) u32(field string) uint32 {
	if d.err != nil {
		return 0
	}
	v := d.c.U32(field)
	d.check()
	return v
}

func (d *decoder) u64(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v := d.c.U64(field)
	d.check()
	return v
}

func (d *decoder) guid(field string) GUID {
	if d.err != nil {
		return GUID{}
	}
	g := d.c.GUID(field)
	d.check()
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
	s := d.c.UTF16N(field+" length", uint64(n))
	if !d.check() {
		return ""
	}
	return s
}

// count reads an array length and checks that count items of at least
// minItem bytes each can still follow, so the caller may allocate count
// items safely.
func (d *decoder) count(field string, minItem int) int {
	n := d.u32(field + " count")
	if d.err != nil {
		return 0
	}
	k := d.c.Count(field, uint64(n), minItem)
	d.check()
	return k
}

// finish returns the sticky error, if any.
func (d *decoder) finish() error { return d.err }
