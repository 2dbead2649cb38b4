package wire

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeUTF16 converts UTF-16LE bytes to a string with a single allocation
// (none for the empty string). A trailing odd byte is ignored; unpaired
// surrogates become U+FFFD.
func DecodeUTF16(p []byte) string {
	p = p[:len(p)&^1]
	if len(p) == 0 {
		return ""
	}
	if isASCII16(p) {
		// Method, type and module names: every unit below 0x80. Converted
		// through a stack buffer, 64 characters per write (a WriteByte per
		// character cost as much as decoding the event).
		var sb strings.Builder
		sb.Grow(len(p) / 2)
		var buf [64]byte
		for len(p) > 0 {
			n := min(len(p)/2, len(buf))
			for i := range buf[:n] {
				buf[i] = p[2*i]
			}
			sb.Write(buf[:n])
			p = p[2*n:]
		}
		return sb.String()
	}
	size, ascii := 0, true
	for i := 0; i < len(p); i += 2 {
		u := rune(binary.LittleEndian.Uint16(p[i:]))
		switch {
		case u < utf8.RuneSelf:
			size++
		case utf16.IsSurrogate(u):
			// A valid pair takes 4 bytes for 2 units; a lone surrogate
			// becomes U+FFFD (3 bytes). Count 3 per unit as an upper bound.
			size += 3
			ascii = false
		default:
			size += utf8.RuneLen(u)
			ascii = false
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

// AppendDecodeUTF16 appends the conversion of DecodeUTF16 to dst, for a
// caller that keeps many strings in one buffer.
func AppendDecodeUTF16(dst, p []byte) []byte {
	p = p[:len(p)&^1]
	dst = slices.Grow(dst, len(p)/2)
	for len(p) >= 8 {
		v := binary.LittleEndian.Uint64(p)
		if v&0xFF80FF80FF80FF80 != 0 {
			break
		}
		dst = binary.LittleEndian.AppendUint32(dst, packASCII16(v))
		p = p[8:]
	}
	for i := 0; i < len(p); i += 2 {
		u := rune(binary.LittleEndian.Uint16(p[i:]))
		switch {
		case u < utf8.RuneSelf:
			dst = append(dst, byte(u))
			continue
		case utf16.IsSurrogate(u):
			if i+3 < len(p) {
				if r := utf16.DecodeRune(u, rune(binary.LittleEndian.Uint16(p[i+2:]))); r != utf8.RuneError {
					dst = utf8.AppendRune(dst, r)
					i += 2
					continue
				}
			}
			u = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, u)
	}
	return dst
}

// AppendUTF16Z is Cursor.UTF16Z for a caller that keeps many strings in one
// buffer: it appends the conversion of the NUL-terminated UTF-16LE string
// at the start of p to dst and returns the number of bytes of p the string
// and its terminator take. Without a terminator it returns dst unchanged
// and ok false.
func AppendUTF16Z(dst, p []byte) (out []byte, used int, ok bool) {
	n := len(dst)
	// Four ASCII units at a time (method, type and module names), until
	// a word has another unit or a zero one; then the terminator is
	// looked for and the rest converted by AppendDecodeUTF16.
	i := 0
	for ; i+8 <= len(p); i += 8 {
		v := binary.LittleEndian.Uint64(p[i:])
		if v&0xFF80FF80FF80FF80 != 0 || (v-0x0001000100010001)&^v&0x8000800080008000 != 0 {
			break
		}
		dst = binary.LittleEndian.AppendUint32(dst, packASCII16(v))
	}
	for j := i; j+1 < len(p); j += 2 {
		if p[j] == 0 && p[j+1] == 0 {
			return AppendDecodeUTF16(dst, p[i:j]), j + 2, true
		}
	}
	return dst[:n], 0, false
}

// packASCII16 packs the low bytes of the four UTF-16LE units of v (ASCII
// characters) into 32 bits, in order.
func packASCII16(v uint64) uint32 {
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	return uint32(v | v>>16)
}

// isASCII16 reports whether every UTF-16LE unit of p (of even length) is
// below 0x80, four units at a time.
func isASCII16(p []byte) bool {
	for len(p) >= 8 {
		if binary.LittleEndian.Uint64(p)&0xFF80FF80FF80FF80 != 0 {
			return false
		}
		p = p[8:]
	}
	for ; len(p) >= 2; p = p[2:] {
		if p[0] >= 0x80 || p[1] != 0 {
			return false
		}
	}
	return true
}

// UTF16Len is the number of UTF-16 code units of s.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// AppendUTF16 appends s as UTF-16LE code units, without a terminator.
// Invalid UTF-8 becomes U+FFFD.
func AppendUTF16(b []byte, s string) []byte {
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError || r2 != utf8.RuneError {
			b = binary.LittleEndian.AppendUint16(b, uint16(r1))
			b = binary.LittleEndian.AppendUint16(b, uint16(r2))
			continue
		}
		if r < 0 || r > 0xFFFF || utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(r))
	}
	return b
}

// FormatGUID formats a GUID in its wire byte order (Data1 a little-endian
// u32, Data2 and Data3 little-endian u16s, then 8 bytes) in the canonical
// lower-case text form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func FormatGUID(g [16]byte) string {
	return string(AppendGUID(make([]byte, 0, 36), g))
}

// RandomGUID returns a random (version 4, RFC 4122 variant) GUID in the
// canonical text form of FormatGUID.
func RandomGUID() string {
	var g [16]byte
	_, _ = rand.Read(g[:]) // crypto/rand.Read never fails (Go 1.24+)
	// Data3 is little-endian on the wire: its high byte, which carries the
	// version, is g[7]. The variant is in the first byte after Data3.
	g[7] = g[7]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return FormatGUID(g)
}

// AppendGUID appends the text form of FormatGUID.
func AppendGUID(b []byte, g [16]byte) []byte {
	var t [16]byte
	binary.BigEndian.PutUint32(t[0:], binary.LittleEndian.Uint32(g[0:]))
	binary.BigEndian.PutUint16(t[4:], binary.LittleEndian.Uint16(g[4:]))
	binary.BigEndian.PutUint16(t[6:], binary.LittleEndian.Uint16(g[6:]))
	copy(t[8:], g[8:])
	b = hex.AppendEncode(b, t[0:4])
	b = append(b, '-')
	b = hex.AppendEncode(b, t[4:6])
	b = append(b, '-')
	b = hex.AppendEncode(b, t[6:8])
	b = append(b, '-')
	b = hex.AppendEncode(b, t[8:10])
	b = append(b, '-')
	return hex.AppendEncode(b, t[10:16])
}

// ParseGUID parses the canonical text form, optionally in braces, into the
// wire byte order.
func ParseGUID(s string) ([16]byte, error) {
	var g [16]byte
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		t = t[1 : len(t)-1]
	}
	if len(t) != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
		return g, fmt.Errorf("GUID %q: want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (32 hex digits in groups 8-4-4-4-12)", s)
	}
	var raw [16]byte
	if _, err := hex.Decode(raw[:], []byte(t[0:8]+t[9:13]+t[14:18]+t[19:23]+t[24:36])); err != nil {
		return g, fmt.Errorf("GUID %q: %w; use hex digits 0-9 and a-f", s, err)
	}
	binary.LittleEndian.PutUint32(g[0:], binary.BigEndian.Uint32(raw[0:]))
	binary.LittleEndian.PutUint16(g[4:], binary.BigEndian.Uint16(raw[4:]))
	binary.LittleEndian.PutUint16(g[6:], binary.BigEndian.Uint16(raw[6:]))
	copy(g[8:], raw[8:])
	return g, nil
}
