package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Errors a Cursor records (wrapped in an *Error).
var (
	// ErrShort: the data ends before the field.
	ErrShort = errors.New("data too short")
	// ErrUnterminated: a NUL-terminated UTF-16 string has no terminator.
	ErrUnterminated = errors.New("string not NUL-terminated")
	// ErrCount: an element count needs more bytes than are left.
	ErrCount = errors.New("element count exceeds the data")
	// ErrPointerSize: a pointer size other than 4 or 8.
	ErrPointerSize = errors.New("pointer size must be 4 or 8")
	// ErrVarint: an unsigned LEB128 value is cut or longer than 10 bytes.
	ErrVarint = errors.New("bad varint")
)

// Error is the first failure of a Cursor.
type Error struct {
	// Field names what was being read.
	Field string
	// Offset is where the field starts.
	Offset int
	// Need is the number of bytes the field needs (0 when unknown, as for
	// an unterminated string); Have the number that were left.
	Need, Have int
	// Count is the element count read from the data, for ErrCount.
	Count uint64
	// Err is ErrShort, ErrUnterminated, ErrCount, ErrPointerSize or an
	// error given to Cursor.Fail.
	Err error
}

func (e *Error) Error() string {
	if e.Need > 0 {
		return fmt.Sprintf("%s at offset %d: %v (need %d bytes, %d left)", e.Field, e.Offset, e.Err, e.Need, e.Have)
	}
	return fmt.Sprintf("%s at offset %d: %v", e.Field, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Cursor reads little-endian values from a byte slice. The zero value reads
// an empty slice. Methods take the name of the field they read, for the
// error; after the first failure they return zero values.
type Cursor struct {
	b   []byte
	off int
	err *Error
}

// NewCursor returns a Cursor at the start of b.
func NewCursor(b []byte) Cursor { return Cursor{b: b} }

// Bytes returns the data the cursor reads, from its start.
func (c *Cursor) Bytes() []byte { return c.b }

// Offset is the position of the next read.
func (c *Cursor) Offset() int { return c.off }

// Remaining is the number of bytes not read yet.
func (c *Cursor) Remaining() int { return len(c.b) - c.off }

// Failed reports whether a read has failed.
func (c *Cursor) Failed() bool { return c.err != nil }

// Failure returns the first failure, or nil.
func (c *Cursor) Failure() *Error { return c.err }

// Err returns the first failure as an error, or nil.
func (c *Cursor) Err() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// Fail records err for field at the current offset unless a failure is
// already recorded.
func (c *Cursor) Fail(field string, err error) {
	if c.err == nil {
		c.err = &Error{Field: field, Offset: c.off, Have: c.Remaining(), Err: err}
	}
}

func (c *Cursor) short(field string, n int) {
	if c.err == nil {
		c.err = &Error{Field: field, Offset: c.off, Need: n, Have: c.Remaining(), Err: ErrShort}
	}
}

// Seek moves to offset off of the data (0 to its length), recording
// ErrShort beyond it.
func (c *Cursor) Seek(field string, off int) {
	if c.err != nil {
		return
	}
	if off < 0 || off > len(c.b) {
		c.short(field, off-c.off)
		return
	}
	c.off = off
}

// Uvarint reads an unsigned LEB128 value of at most 10 bytes.
func (c *Cursor) Uvarint(field string) uint64 {
	if c.err != nil {
		return 0
	}
	v, p := UvarintAt(c.b, c.off)
	if p < 0 {
		c.Fail(field, ErrVarint)
		return 0
	}
	c.off = p
	return v
}

// UvarintAt decodes an unsigned LEB128 value at b[p:]. It returns the
// value and the position after it, or p = -1 if the varint is cut or
// longer than 10 bytes. It is small enough to be inlined: the event
// header decoder of nettrace calls it for every field.
func UvarintAt(b []byte, p int) (uint64, int) {
	if p < len(b) && b[p] < 0x80 {
		return uint64(b[p]), p + 1
	}
	var v uint64
	for s := uint(0); s < 70; s += 7 {
		if p >= len(b) {
			return 0, -1
		}
		c := b[p]
		p++
		v |= uint64(c&0x7f) << s
		if c < 0x80 {
			return v, p
		}
	}
	return 0, -1
}

// Take returns the next n bytes (aliasing the data), or nil after
// recording ErrShort.
func (c *Cursor) Take(field string, n int) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || len(c.b)-c.off < n {
		c.short(field, n)
		return nil
	}
	p := c.b[c.off : c.off+n : c.off+n]
	c.off += n
	return p
}

// U8 reads a byte.
func (c *Cursor) U8(field string) uint8 {
	if c.err == nil && c.off < len(c.b) {
		v := c.b[c.off]
		c.off++
		return v
	}
	c.short(field, 1)
	return 0
}

// U16 reads a little-endian uint16.
func (c *Cursor) U16(field string) uint16 {
	if c.err == nil && len(c.b)-c.off >= 2 {
		v := binary.LittleEndian.Uint16(c.b[c.off:])
		c.off += 2
		return v
	}
	c.short(field, 2)
	return 0
}

// U32 reads a little-endian uint32.
func (c *Cursor) U32(field string) uint32 {
	if c.err == nil && len(c.b)-c.off >= 4 {
		v := binary.LittleEndian.Uint32(c.b[c.off:])
		c.off += 4
		return v
	}
	c.short(field, 4)
	return 0
}

// U64 reads a little-endian uint64.
func (c *Cursor) U64(field string) uint64 {
	if c.err == nil && len(c.b)-c.off >= 8 {
		v := binary.LittleEndian.Uint64(c.b[c.off:])
		c.off += 8
		return v
	}
	c.short(field, 8)
	return 0
}

// F32 reads a little-endian IEEE 754 single.
func (c *Cursor) F32(field string) float32 { return math.Float32frombits(c.U32(field)) }

// F64 reads a little-endian IEEE 754 double.
func (c *Cursor) F64(field string) float64 { return math.Float64frombits(c.U64(field)) }

// Ptr reads a pointer of size bytes (4 or 8), zero-extended to 64 bits.
func (c *Cursor) Ptr(field string, size int) uint64 {
	switch size {
	case 8:
		return c.U64(field)
	case 4:
		return uint64(c.U32(field))
	}
	c.Fail(field, ErrPointerSize)
	return 0
}

// GUID reads 16 bytes.
func (c *Cursor) GUID(field string) (g [16]byte) {
	if p := c.Take(field, 16); p != nil {
		copy(g[:], p)
	}
	return g
}

// Count checks that n elements of at least elemSize bytes each can still
// follow, so the caller may allocate n elements, and returns n; after
// recording ErrCount it returns 0.
func (c *Cursor) Count(field string, n uint64, elemSize int) int {
	if c.err != nil {
		return 0
	}
	elemSize = max(elemSize, 1)
	if n > uint64(c.Remaining())/uint64(elemSize) {
		c.err = &Error{Field: field, Offset: c.off, Need: int(min(n*uint64(elemSize), math.MaxInt32)),
			Have: c.Remaining(), Count: n, Err: ErrCount}
		if n > math.MaxUint64/uint64(elemSize) {
			c.err.Need = math.MaxInt32
		}
		return 0
	}
	return int(n)
}

// UTF16Z reads a UTF-16LE string terminated by a 16-bit NUL and converts it
// with one allocation (none for the empty string).
func (c *Cursor) UTF16Z(field string) string {
	return DecodeUTF16(c.UTF16ZBytes(field))
}

// UTF16ZBytes is UTF16Z without the conversion: it returns the string's
// UTF-16LE bytes (without the terminator), a part of the cursor's data.
func (c *Cursor) UTF16ZBytes(field string) []byte {
	if c.err != nil {
		return nil
	}
	rest := c.b[c.off:]
	// The terminator is a zero unit: skip four units at a time while none
	// is zero (the word has a zero 16-bit lane exactly when this is not 0),
	// then find it unit by unit.
	i := 0
	for ; i+8 <= len(rest); i += 8 {
		if v := binary.LittleEndian.Uint64(rest[i:]); (v-0x0001000100010001)&^v&0x8000800080008000 != 0 {
			break
		}
	}
	for ; i+1 < len(rest); i += 2 {
		if rest[i] == 0 && rest[i+1] == 0 {
			c.off += i + 2
			return rest[:i:i]
		}
	}
	c.Fail(field, ErrUnterminated)
	return nil
}

// UTF16N reads n UTF-16LE code units (checked against what is left before
// anything is allocated) and converts them; a final NUL unit is dropped.
func (c *Cursor) UTF16N(field string, n uint64) string {
	k := c.Count(field, n, 2)
	p := c.Take(field, 2*k)
	if len(p) >= 2 && p[len(p)-2] == 0 && p[len(p)-1] == 0 {
		p = p[:len(p)-2]
	}
	return DecodeUTF16(p)
}
