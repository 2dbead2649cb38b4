package termsafe

import (
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// unsafeRune reports whether r, a valid non-ASCII rune, must be escaped:
// C1 controls and format characters that reorder, hide or break lines.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return true
	case r == 0xad: // soft hyphen (invisible)
		return true
	case r >= 0x200b && r <= 0x200f: // zero-width space/joiners, LRM, RLM
		return true
	case r >= 0x2028 && r <= 0x202e: // line/paragraph separators, bidi embeddings and overrides
		return true
	case r >= 0x2060 && r <= 0x2069: // word joiner, invisible operators, bidi isolates
		return true
	case r == 0xfeff: // zero-width no-break space (BOM)
		return true
	case r >= 0xfff9 && r <= 0xfffb: // interlinear annotation controls
		return true
	}
	return false
}

// clean reports whether s needs no escaping; keep lists the C0 controls
// allowed through.
func clean(s string, keepNL bool) bool {
	i := 0
	// Eight bytes at a time while they are all printable ASCII (0x20-0x7e):
	// a byte with its high bit set, one below 0x20 (subtracting 0x20
	// borrows) or 0x7f (adding 1 reaches 0x80) sets a high bit of the
	// test, and the loop below looks at those bytes one by one.
	// (The bytes are read from an 8-byte substring: with constant indexes
	// and no bounds test between them, the compiler makes the eight loads
	// one; indexing s at i+k made eight loads, shifts and ors.)
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if (w|(w-0x2020202020202020)|(w+0x0101010101010101))&0x8080808080808080 != 0 {
			break
		}
	}
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 {
			if keepNL && (c == '\n' || c == '\t') {
				i++
				continue
			}
			return false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unsafeRune(r) {
			return false
		}
		i += n
	}
	return true
}

// String returns s with every control character, invisible or reordering
// format character and invalid byte escaped (see the package comment).
func String(s string) string {
	if clean(s, false) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s, false))
}

// Lines is String but keeps newlines and tabs, for messages of several
// lines.
func Lines(s string) string {
	if clean(s, true) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s, true))
}

// AppendString appends String(s) to b.
func AppendString(b []byte, s string) []byte {
	if clean(s, false) {
		return append(b, s...)
	}
	return appendEscaped(b, s, false)
}

func appendEscaped(b []byte, s string, keepNL bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			b = append(b, c)
			i++
			continue
		}
		if c < 0x80 {
			switch {
			case keepNL && (c == '\n' || c == '\t'):
				b = append(b, c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case unsafeRune(r):
			b = appendU(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// JSON returns an encoded JSON document with DEL, C1 controls and the
// format characters String escapes rewritten as \uNNNN escapes. Outside
// strings JSON has no such characters, so the document decodes to the same
// values. It returns doc itself when there is nothing to rewrite.
func JSON(doc []byte) []byte {
	i := 0
	for i < len(doc) {
		c := doc[i]
		if c < 0x7f {
			i++
			continue
		}
		if c == 0x7f {
			break
		}
		r, n := utf8.DecodeRune(doc[i:])
		if r != utf8.RuneError && unsafeRune(r) {
			break
		}
		i += n
	}
	if i == len(doc) {
		return doc
	}
	out := make([]byte, 0, len(doc)+16)
	out = append(out, doc[:i]...)
	for i < len(doc) {
		c := doc[i]
		if c < 0x7f {
			out = append(out, c)
			i++
			continue
		}
		if c == 0x7f {
			out = appendU(out, 0x7f)
			i++
			continue
		}
		r, n := utf8.DecodeRune(doc[i:])
		if r != utf8.RuneError && unsafeRune(r) {
			out = appendU(out, r)
		} else {
			out = append(out, doc[i:i+n]...)
		}
		i += n
	}
	return out
}
