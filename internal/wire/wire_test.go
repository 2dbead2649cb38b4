package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestCursorReads(t *testing.T) {
	b := []byte{1, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0}
	b = append(b, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f) // 1.5
	b = append(b, 9, 0, 0, 0)                   // 4-byte pointer
	b = append(b, 0, 0, 0x20, 0xc0)             // -2.5 as a float32
	c := NewCursor(b)
	if c.U8("a") != 1 || c.U16("b") != 2 || c.U32("c") != 3 || c.U64("d") != 4 || c.F64("e") != 1.5 || c.Ptr("f", 4) != 9 || c.F32("f32") != -2.5 {
		t.Fatalf("values wrong: %v", c.Err())
	}
	if c.Remaining() != 0 || c.Err() != nil || c.Offset() != len(b) {
		t.Fatalf("remaining %d err %v", c.Remaining(), c.Err())
	}
	if c.U8("g") != 0 {
		t.Fatal("read past end")
	}
	var e *Error
	if !errors.As(c.Err(), &e) || e.Field != "g" || e.Offset != len(b) || e.Need != 1 || e.Have != 0 || !errors.Is(c.Err(), ErrShort) {
		t.Fatalf("error %#v", c.Failure())
	}
	// Sticky: a later failure does not replace the first.
	c.Fail("h", errors.New("other"))
	if c.Failure().Field != "g" || c.U32("i") != 0 {
		t.Fatal("not sticky")
	}
}

func TestCursorShortEachSize(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8, 16} {
		c := NewCursor(make([]byte, n-1))
		switch n {
		case 1:
			c.U8("x")
		case 2:
			c.U16("x")
		case 4:
			c.U32("x")
		case 8:
			c.U64("x")
		case 16:
			c.GUID("x")
		}
		if e := c.Failure(); e == nil || e.Need != n || e.Have != n-1 || c.Offset() != 0 {
			t.Errorf("size %d: %v", n, c.Err())
		}
	}
	c := NewCursor(nil)
	if c.Ptr("p", 6); !errors.Is(c.Err(), ErrPointerSize) {
		t.Errorf("pointer size 6: %v", c.Err())
	}
	c = NewCursor(nil)
	if c.Take("neg", -1) != nil || !errors.Is(c.Err(), ErrShort) {
		t.Errorf("negative take: %v", c.Err())
	}
}

func TestCount(t *testing.T) {
	c := NewCursor(make([]byte, 8))
	if n := c.Count("arr", 2, 4); n != 2 || c.Err() != nil {
		t.Fatalf("fits: %d %v", n, c.Err())
	}
	if n := c.Count("arr", 3, 4); n != 0 || !errors.Is(c.Err(), ErrCount) || c.Failure().Count != 3 || c.Failure().Need != 12 {
		t.Fatalf("too many: %d %#v", n, c.Failure())
	}
	c = NewCursor(make([]byte, 8))
	if c.Count("huge", math.MaxUint64, 8); c.Failure() == nil || c.Failure().Need != math.MaxInt32 {
		t.Fatalf("overflow: %#v", c.Failure())
	}
}

func TestUTF16(t *testing.T) {
	for _, s := range []string{"", "System.String", "Ünïcödé", "日本語", "😀x", "a\u0100b", "\uFFFD"} {
		enc := AppendUTF16(nil, s)
		if len(enc) != 2*UTF16Len(s) {
			t.Errorf("%q: %d bytes, UTF16Len %d", s, len(enc), UTF16Len(s))
		}
		if got := DecodeUTF16(enc); got != s {
			t.Errorf("round trip %q = %q", s, got)
		}
		c := NewCursor(append(append(enc, 0, 0), 7))
		if got := c.UTF16Z("s"); got != s || c.U8("after") != 7 {
			t.Errorf("UTF16Z %q = %q (%v)", s, got, c.Err())
		}
		if out, used, ok := AppendUTF16Z([]byte("pre"), append(append(enc, 0, 0), 7)); string(out) != "pre"+s || used != len(enc)+2 || !ok {
			t.Errorf("AppendUTF16Z %q = %q, %d, %v", s, out, used, ok)
		}
		if out, used, ok := AppendUTF16Z([]byte("pre"), enc); string(out) != "pre" || used != 0 || ok {
			t.Errorf("AppendUTF16Z %q without terminator = %q, %d, %v", s, out, used, ok)
		}
		c = NewCursor(append(enc, 0, 0))
		if got := c.UTF16N("s", uint64(UTF16Len(s)+1)); got != s || c.Remaining() != 0 {
			t.Errorf("UTF16N %q = %q (%v)", s, got, c.Err())
		}
	}
	// Lone surrogates become U+FFFD; invalid UTF-8 encodes as U+FFFD.
	lone := []byte{0x00, 0xD8, 'a', 0, 0x00, 0xDC}
	if got := DecodeUTF16(lone); got != "\uFFFDa\uFFFD" {
		t.Errorf("lone surrogates: %q", got)
	}
	if got := DecodeUTF16(AppendUTF16(nil, "a\xffb")); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
	// A U+0100 unit has a zero low byte and must not end the string.
	c := NewCursor([]byte{0x00, 0x01, 'x', 0, 0, 0})
	if got := c.UTF16Z("s"); got != "\u0100x" {
		t.Errorf("U+0100: %q", got)
	}
	c = NewCursor([]byte{'a', 0, 'b'})
	if c.UTF16Z("s"); !errors.Is(c.Err(), ErrUnterminated) {
		t.Errorf("unterminated: %v", c.Err())
	}
	c = NewCursor([]byte{'a', 0})
	if c.UTF16N("s", 1<<40); !errors.Is(c.Err(), ErrCount) {
		t.Errorf("huge count: %v", c.Err())
	}
}

func TestGUID(t *testing.T) {
	const text = "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"
	g, err := ParseGUID("{" + text + "}")
	if err != nil {
		t.Fatal(err)
	}
	want := [16]byte{0x23, 0x0d, 0x3c, 0xe1, 0xbc, 0xcc, 0x12, 0x4e, 0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}
	if g != want || FormatGUID(g) != text {
		t.Errorf("ParseGUID = %x, FormatGUID = %s", g, FormatGUID(g))
	}
	for _, bad := range []string{"", "e13c0d23ccbc4e12931bd9cc2eee27e4", "g13c0d23-ccbc-4e12-931b-d9cc2eee27e4"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func TestRandomGUID(t *testing.T) {
	seen := map[string]bool{}
	for range 64 {
		s := RandomGUID()
		g, err := ParseGUID(s)
		if err != nil {
			t.Fatalf("RandomGUID = %q: %v", s, err)
		}
		if FormatGUID(g) != s {
			t.Fatalf("RandomGUID = %q, not canonical (want %q)", s, FormatGUID(g))
		}
		// xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V one of 8, 9, a, b.
		if s[14] != '4' {
			t.Errorf("RandomGUID = %q: version %c, want 4", s, s[14])
		}
		if !strings.ContainsRune("89ab", rune(s[19])) {
			t.Errorf("RandomGUID = %q: variant digit %c, want 8, 9, a or b", s, s[19])
		}
		if seen[s] {
			t.Fatalf("RandomGUID returned %q twice", s)
		}
		seen[s] = true
	}
}

func FuzzCursor(f *testing.F) {
	f.Add([]byte{1, 0, 'a', 0, 0, 0, 2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := NewCursor(b)
		c.U8("a")
		n := c.Count("n", uint64(c.U16("n")), 2)
		s := c.UTF16N("s", uint64(n))
		z := c.UTF16Z("z")
		c.GUID("g")
		c.Ptr("p", 8)
		if !utf8.ValidString(s) || !utf8.ValidString(z) {
			t.Fatal("invalid UTF-8 out")
		}
		if c.Offset() > len(b) || (c.Err() == nil) == c.Failed() {
			t.Fatal("inconsistent state")
		}
		if got := DecodeUTF16(AppendUTF16(nil, s)); got != s {
			t.Fatalf("round trip %q = %q", s, got)
		}
		c = NewCursor(b)
		want := c.UTF16Z("z")
		if out, used, ok := AppendUTF16Z(nil, b); string(out) != want || ok != !c.Failed() || used != c.Offset() {
			t.Fatalf("AppendUTF16Z = %q, %d, %v; UTF16Z %q, offset %d, %v", out, used, ok, want, c.Offset(), c.Err())
		}
		if got, want := string(AppendDecodeUTF16(nil, b)), DecodeUTF16(b); got != want {
			t.Fatalf("AppendDecodeUTF16 %q, DecodeUTF16 %q", got, want)
		}
	})
}

// TestDecodeUTF16Oracle compares DecodeUTF16 with unicode/utf16 on strings
// of every length around the fast path's word and buffer sizes, ASCII and
// not, with one non-ASCII unit at every position.
func TestDecodeUTF16Oracle(t *testing.T) {
	oracle := func(p []byte) string {
		u := make([]uint16, len(p)/2)
		for i := range u {
			u[i] = binary.LittleEndian.Uint16(p[2*i:])
		}
		return string(utf16.Decode(u))
	}
	for n := 0; n <= 140; n++ {
		p := make([]byte, 2*n)
		for i := range n {
			p[2*i] = byte('A' + i%26)
		}
		if got, want := DecodeUTF16(p), oracle(p); got != want {
			t.Fatalf("ASCII, %d units: %q, want %q", n, got, want)
		}
		if got, want := string(AppendDecodeUTF16([]byte("pre"), p)), "pre"+oracle(p); got != want {
			t.Fatalf("AppendDecodeUTF16, ASCII, %d units: %q, want %q", n, got, want)
		}
		if got, used, _ := AppendUTF16Z([]byte("pre"), append(slices.Clone(p), 0, 0, 'z', 0)); string(got) != "pre"+oracle(p) || used != len(p)+2 {
			t.Fatalf("AppendUTF16Z, ASCII, %d units: %q (%d bytes), want %q", n, got, used, oracle(p))
		}
		for _, bad := range [][2]byte{{0x80, 0}, {'a', 1}, {0xE9, 0}, {0x00, 0xD8}} {
			for j := range n {
				q := slices.Clone(p)
				q[2*j], q[2*j+1] = bad[0], bad[1]
				if got, want := DecodeUTF16(q), oracle(q); got != want {
					t.Fatalf("%d units, %x at %d: %q, want %q", n, bad, j, got, want)
				}
				if got, want := string(AppendDecodeUTF16([]byte("pre"), q)), "pre"+oracle(q); got != want {
					t.Fatalf("AppendDecodeUTF16, %d units, %x at %d: %q, want %q", n, bad, j, got, want)
				}
				if got, used, _ := AppendUTF16Z([]byte("pre"), append(q, 0, 0, 'z', 0)); string(got) != "pre"+oracle(q) || used != len(q)+2 {
					t.Fatalf("AppendUTF16Z, %d units, %x at %d: %q (%d bytes), want %q", n, bad, j, got, used, oracle(q))
				}
			}
		}
		if got, want := DecodeUTF16(append(p, 'x')), oracle(p); got != want {
			t.Fatalf("%d units and an odd byte: %q, want %q", n, got, want)
		}
		if got, want := string(AppendDecodeUTF16(nil, append(p, 'x'))), oracle(p); got != want {
			t.Fatalf("AppendDecodeUTF16, %d units and an odd byte: %q, want %q", n, got, want)
		}
	}
}
