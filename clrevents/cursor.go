package clrevents

import (
	"encoding/binary"
	"math"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// cursor reads little-endian fields from a payload. The first failure is
// sticky: every later read returns a zero value and err keeps the first
// problem, so a decoder reads all of its fields and checks err once.
type cursor struct {
	b       []byte
	off     int
	ptrSize int
	event   string
	version uint8
	err     error
}

func newCursor(event string, payload []byte, version uint8, ptrSize int) cursor {
	return cursor{b: payload, ptrSize: ptrSize, event: event, version: version}
}

func (c *cursor) fail(field string, err error) {
	if c.err == nil {
		c.err = &DecodeError{Event: c.event, Version: c.version, Field: field, Offset: c.off, Err: err}
	}
}

// take returns the next n bytes, or nil after recording ErrTruncated.
func (c *cursor) take(field string, n int) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || len(c.b)-c.off < n {
		c.fail(field, ErrTruncated)
		return nil
	}
	p := c.b[c.off : c.off+n]
	c.off += n
	return p
}

func (c *cursor) u8(field string) uint8 {
	if p := c.take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

func (c *cursor) u16(field string) uint16 {
	if p := c.take(field, 2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (c *cursor) u32(field string) uint32 {
	if p := c.take(field, 4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (c *cursor) u64(field string) uint64 {
	if p := c.take(field, 8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (c *cursor) f64(field string) float64 {
	return math.Float64frombits(c.u64(field))
}

// ptr reads a pointer-sized field (4 or 8 bytes) zero-extended to 64 bits.
func (c *cursor) ptr(field string) uint64 {
	switch c.ptrSize {
	case 8:
		return c.u64(field)
	case 4:
		return uint64(c.u32(field))
	}
	c.fail(field, ErrPointerSize)
	return 0
}

func (c *cursor) guid(field string) (g [16]byte) {
	if p := c.take(field, 16); p != nil {
		copy(g[:], p)
	}
	return g
}

// str reads a UTF-16LE string terminated by a 16-bit NUL and converts it to
// UTF-8 with a single allocation (none for the empty string). Unpaired
// surrogates become U+FFFD.
func (c *cursor) str(field string) string {
	if c.err != nil {
		return ""
	}
	rest := c.b[c.off:]
	n := -1 // code units before the terminator
	for i := 0; i+1 < len(rest); i += 2 {
		if rest[i] == 0 && rest[i+1] == 0 {
			n = i / 2
			break
		}
	}
	if n < 0 {
		c.fail(field, ErrUnterminatedString)
		return ""
	}
	c.off += 2*n + 2
	return utf16String(rest[:2*n])
}

// utf16String converts UTF-16LE bytes (even length) to a string.
func utf16String(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	size, ascii := 0, true
	for i := 0; i < len(p); i += 2 {
		u := rune(binary.LittleEndian.Uint16(p[i:]))
		if u >= utf8.RuneSelf {
			ascii = false
		}
		switch {
		case u < utf8.RuneSelf:
			size++
		case utf16.IsSurrogate(u):
			// A valid pair takes 4 bytes for 2 units; a lone surrogate
			// becomes U+FFFD (3 bytes). Count 3 per unit as an upper bound.
			size += 3
		default:
			size += utf8.RuneLen(u)
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	if ascii {
		for i := 0; i < len(p); i += 2 {
			sb.WriteByte(p[i])
		}
		return sb.String()
	}
	for i := 0; i < len(p); i += 2 {
		u := rune(binary.LittleEndian.Uint16(p[i:]))
		if utf16.IsSurrogate(u) {
			if i+3 < len(p) {
				if r := utf16.DecodeRune(u, rune(binary.LittleEndian.Uint16(p[i+2:]))); r != utf8.RuneError {
					sb.WriteRune(r)
					i += 2
					continue
				}
			}
			sb.WriteRune(utf8.RuneError)
			continue
		}
		sb.WriteRune(u)
	}
	return sb.String()
}
