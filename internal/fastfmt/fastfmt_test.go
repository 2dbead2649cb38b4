package fastfmt

import (
	"math"
	"strconv"
	"testing"
	"unicode/utf8"
)

// jsonStringByByte is AppendJSONString as a plain loop over the bytes: what
// the word-at-a-time version must write.
func jsonStringByByte(s string) []byte {
	const hex = "0123456789abcdef"
	dst := []byte{'"'}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			dst = append(dst, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(dst, '"')
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote\back`, "ctl\x00\x01\n\r\t\x1f", "List`1[System.Int32]",
		"日本語😀", "bad\xffutf8", "System.Collections.Generic.Dictionary`2[System.__Canon,System.__Canon].TryInsert",
		"abcdefg\"abcdefgh\\abcdefg\x7fabcdefg\x80", "0123456789abcdef\x1f0123456789abcdef ",
		// The last 8 bytes, tested at once, with and without a byte to
		// escape, after one escaped before them.
		"0x7ffa70508916", "abcdefghij\"k", "a\"bcdefghijk", "abcdefgh日", "abcdefghi\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendJSONString([]byte("x"), s), append([]byte("x"), jsonStringByByte(s)...); string(got) != string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendInt(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 1e9, 1e18, math.MaxInt64, -1, -10, -100, math.MinInt64}
	for p := int64(1); p > 0 && p < math.MaxInt64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1, -p, 7*p+3)
	}
	for _, v := range vals {
		if got, want := string(AppendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Errorf("AppendInt(%d) = %s", v, got)
		}
		if v >= 0 {
			if got, want := string(AppendUint(nil, uint64(v)*2)), strconv.FormatUint(uint64(v)*2, 10); got != want {
				t.Errorf("AppendUint(%d) = %s", uint64(v)*2, got)
			}
		}
	}
	// Every number up to past the small-number cases, each after a prefix.
	for u := uint64(0); u <= 20000; u++ {
		if got, want := string(AppendUint([]byte("x"), u)), "x"+strconv.FormatUint(u, 10); got != want {
			t.Fatalf("AppendUint(%d) = %s", u, got)
		}
	}
	if got := string(AppendUint(nil, math.MaxUint64)); got != strconv.FormatUint(math.MaxUint64, 10) {
		t.Errorf("AppendUint(MaxUint64) = %s", got)
	}
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0.000"}, {1234567, "1234.567"}, {-1500, "-1.500"}, {999, "0.999"}, {1_000_000_007, "1000000.007"}} {
		if got := string(AppendMicros(nil, c.ns)); got != c.want {
			t.Errorf("AppendMicros(%d) = %s, want %s", c.ns, got, c.want)
		}
	}
	// Every digit count, both signs, against strconv.
	for _, v := range vals {
		for _, ns := range []int64{v, -v} {
			u := uint64(ns)
			sign := ""
			if ns < 0 {
				u, sign = -u, "-"
			}
			want := sign + strconv.FormatUint(u/1000, 10) + "." + strconv.FormatUint(1000+u%1000, 10)[1:]
			if got := string(AppendMicros([]byte("x"), ns)); got != "x"+want {
				t.Errorf("AppendMicros(%d) = %s, want x%s", ns, got, want)
			}
		}
	}
}
