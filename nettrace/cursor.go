package nettrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// uvarint decodes an unsigned LEB128 value at b[p:]. It returns the value and
// the position after it, or p = -1 if the varint is cut or longer than 10
// bytes.
func uvarint(b []byte, p int) (uint64, int) {
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

var errShort = errors.New("unexpected end of data")

// cursor reads little-endian values from a byte slice with a sticky error:
// after the first failure every read returns zero values, so callers check
// err once after a sequence of reads.
type cursor struct {
	b   []byte
	p   int
	err error
}

func (c *cursor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("at offset %d: "+format, append([]any{c.p}, args...)...)
	}
}

func (c *cursor) need(n int) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || n > len(c.b)-c.p {
		c.fail("%w: need %d bytes, %d left", errShort, n, len(c.b)-c.p)
		return false
	}
	return true
}

func (c *cursor) remaining() int {
	if c.err != nil {
		return 0
	}
	return len(c.b) - c.p
}

func (c *cursor) bytes(n int) []byte {
	if !c.need(n) {
		return nil
	}
	v := c.b[c.p : c.p+n : c.p+n]
	c.p += n
	return v
}

func (c *cursor) u8() uint8 {
	if !c.need(1) {
		return 0
	}
	v := c.b[c.p]
	c.p++
	return v
}

func (c *cursor) u16() uint16 {
	if !c.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(c.b[c.p:])
	c.p += 2
	return v
}

func (c *cursor) u32() uint32 {
	if !c.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.p:])
	c.p += 4
	return v
}

func (c *cursor) u64() uint64 {
	if !c.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.p:])
	c.p += 8
	return v
}

func (c *cursor) guid() GUID {
	if !c.need(16) {
		return GUID{}
	}
	v := GUID(c.b[c.p : c.p+16])
	c.p += 16
	return v
}

func (c *cursor) uvarint() uint64 {
	if c.err != nil {
		return 0
	}
	v, p := uvarint(c.b, c.p)
	if p < 0 {
		c.fail("bad varint")
		return 0
	}
	c.p = p
	return v
}

func (c *cursor) varint() int64 {
	u := c.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// utf16z reads a NUL-terminated UTF-16LE string.
func (c *cursor) utf16z() string {
	if c.err != nil {
		return ""
	}
	start := c.p
	for i := c.p; i+1 < len(c.b); i += 2 {
		if c.b[i] == 0 && c.b[i+1] == 0 {
			s := decodeUTF16(c.b[start:i])
			c.p = i + 2
			return s
		}
	}
	c.fail("%w: UTF-16 string without its NUL terminator", errShort)
	return ""
}

// str8 reads a V6 string: varuint32 byte length then UTF-8.
func (c *cursor) str8() string {
	n := c.uvarint()
	if c.err == nil && n > uint64(len(c.b)-c.p) {
		c.fail("%w: string of %d bytes, %d left", errShort, n, len(c.b)-c.p)
		return ""
	}
	b := c.bytes(int(n))
	if !utf8.Valid(b) {
		return string([]rune(string(b))) // replace invalid sequences
	}
	return string(b)
}

// decodeUTF16 converts UTF-16LE bytes (even length) to a Go string. ASCII
// strings, the common case, take a fast path.
func decodeUTF16(b []byte) string {
	n := len(b) / 2
	ascii := true
	for i := 0; i < n; i++ {
		if b[2*i+1] != 0 || b[2*i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		out := make([]byte, n)
		for i := range out {
			out[i] = b[2*i]
		}
		return string(out)
	}
	u := make([]uint16, n)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}
