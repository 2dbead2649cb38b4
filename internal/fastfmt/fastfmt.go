package fastfmt

import (
	"unicode/utf8"
)

// AppendJSONString appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight plain bytes at a time: the names of frames and threads
		// rarely need escaping.
		for i+8 <= len(s) && plain8(load8(s[i:])) {
			i += 8
		}
		// Fewer than 8 bytes left: they are the end of the last 8, which
		// are tested at once (those before i, already written or
		// escaped, are tested again).
		if i+8 > len(s) && len(s) >= 8 && plain8(load8(s[len(s)-8:])) {
			break
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load8 reads the first 8 bytes of s as a little-endian word.
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plain8 reports whether the 8 bytes of the word x are all ASCII that a
// JSON string holds as is: no control character, quote, backslash or byte
// of a multi-byte character.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte is 0 in v when (v-ones)&^v&highs has its high bit: v is x
	// with '"' or '\\' xored out; x-ones*0x20 sets the high bit of a byte
	// below 0x20 (a byte of 0x80 or more is caught by x&highs first).
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return (x|(x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs == 0
}

// AppendInt appends v in decimal, as strconv.AppendInt(dst, v, 10) does.
func AppendInt(dst []byte, v int64) []byte {
	if v < 0 {
		return AppendUint(append(dst, '-'), uint64(-v))
	}
	return AppendUint(dst, uint64(v))
}

// DigitPairs holds "00" to "99".
const DigitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// AppendUint appends u in decimal, as strconv.AppendUint(dst, u, 10) does,
// two digits at a time. Numbers below 10 000 (frame and stack indexes,
// most counts) are appended as bytes, without copying from a buffer.
func AppendUint(dst []byte, u uint64) []byte {
	switch {
	case u < 10:
		return append(dst, byte('0'+u))
	case u < 100:
		return append(dst, DigitPairs[2*u], DigitPairs[2*u+1])
	case u < 10000:
		q, r := u/100, u%100
		if q < 10 {
			return append(dst, byte('0'+q), DigitPairs[2*r], DigitPairs[2*r+1])
		}
		return append(dst, DigitPairs[2*q], DigitPairs[2*q+1], DigitPairs[2*r], DigitPairs[2*r+1])
	}
	var buf [20]byte
	i := PutDigits(buf[:], len(buf), u)
	return append(dst, buf[i:]...)
}

// PutDigits writes u in decimal into buf, ending before index end, two
// digits at a time, and returns where the digits start.
func PutDigits(buf []byte, end int, u uint64) int {
	i := end
	for u >= 100 {
		q := u / 100
		r := u - q*100
		i -= 2
		buf[i], buf[i+1] = DigitPairs[2*r], DigitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		buf[i], buf[i+1] = DigitPairs[2*u], DigitPairs[2*u+1]
	} else {
		i--
		buf[i] = byte('0' + u)
	}
	return i
}

// AppendMicros appends a duration in nanoseconds as microseconds with
// three decimals.
func AppendMicros(dst []byte, ns int64) []byte {
	var buf [MicrosLen]byte
	return append(dst, buf[PutMicros(&buf, ns):]...)
}

// MicrosLen is room for any int64 of nanoseconds as microseconds
// (PutMicros): a sign, 16 digits, the point and three decimals.
const MicrosLen = 24

// PutMicros writes a duration in nanoseconds as microseconds with three
// decimals at the end of buf, and returns where it starts. The exporters
// keep what follows a timestamp after it in the same buffer, so that a
// timestamp is written without copying either.
func PutMicros(buf *[MicrosLen]byte, ns int64) int {
	u := uint64(ns)
	if ns < 0 {
		u = -u
	}
	us, frac := u/1000, u%1000
	i := MicrosLen - 4
	r := frac % 100
	buf[i], buf[i+1], buf[i+2], buf[i+3] = '.', byte('0'+frac/100), DigitPairs[2*r], DigitPairs[2*r+1]
	i = PutDigits(buf[:], i, us)
	if ns < 0 {
		i--
		buf[i] = '-'
	}
	return i
}
