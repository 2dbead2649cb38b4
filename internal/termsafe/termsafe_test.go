package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Program.Main", "Program.Main"},
		{`C:\app\My App.exe --urls http://*:5000`, `C:\app\My App.exe --urls http://*:5000`},
		{"Привет.世界.🙂", "Привет.世界.🙂"},
		{"evil\x1b[2J\x1b]0;pwned\x07", `evil\x1b[2J\x1b]0;pwned\x07`},
		{"line1\nline2\r\tx", `line1\nline2\r\tx`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eexe.txt", `bidi \u202eexe.txt`},
		{"iso \u2066x\u2069 zw\u200b bom\ufeff ls\u2028", `iso \u2066x\u2069 zw\u200b bom\ufeff ls\u2028`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"truncated \xe4\xb8", `truncated \xe4\xb8`},
		{"", ""},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(AppendString([]byte("x"), tt.in)); got != "x"+tt.want {
			t.Errorf("AppendString(%q) = %q", tt.in, got)
		}
	}
	if got := Lines("a\tb\nc\x1bd\re"); got != "a\tb\nc\\x1bd\\re" {
		t.Errorf("Lines = %q", got)
	}
}

func TestStringNoCopy(t *testing.T) {
	s := strings.Repeat("System.Private.CoreLib!Method ", 10)
	if n := testing.AllocsPerRun(100, func() { _ = String(s) }); n != 0 {
		t.Errorf("String of clean text allocates %v times", n)
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"name": "a\x1b[2J\u009b\u202e\x7f\ufeff\"ok\" 世界", "plain": "x"}
	doc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	safe := JSON(doc)
	if !clean(string(safe), true) {
		t.Errorf("JSON left something raw: %q", safe)
	}
	var back map[string]string
	if err := json.Unmarshal(safe, &back); err != nil || back["name"] != v["name"] || back["plain"] != "x" {
		t.Errorf("JSON(%s) = %s decodes to %q, %v", doc, safe, back, err)
	}
	plain := []byte(`{"a":"b"}`)
	if got := JSON(plain); &got[0] != &plain[0] {
		t.Error("JSON copied a clean document")
	}
}

func FuzzString(f *testing.F) {
	f.Add("Program.Main")
	f.Add("evil\x1b[2J\u009b\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for keep, out := range map[bool]string{false: String(s), true: Lines(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("escaped %q is not valid UTF-8: %q", s, out)
			}
			if !clean(out, keep) {
				t.Fatalf("escaped %q still has unsafe characters: %q", s, out)
			}
		}
		if clean(s, false) && String(s) != s {
			t.Fatalf("clean %q changed to %q", s, String(s))
		}
	})
}

func FuzzJSON(f *testing.F) {
	f.Add("a\x1b\u009b\u202e\x7f")
	f.Fuzz(func(t *testing.T, s string) {
		doc, err := json.Marshal(map[string]string{"k": s})
		if err != nil {
			t.Fatal(err)
		}
		safe := JSON(doc)
		var back map[string]string
		if err := json.Unmarshal(safe, &back); err != nil {
			t.Fatalf("JSON(%s) = %s does not decode: %v", doc, safe, err)
		}
		var want map[string]string
		json.Unmarshal(doc, &want)
		if back["k"] != want["k"] {
			t.Fatalf("JSON changed the value: %q -> %q", want["k"], back["k"])
		}
		if !clean(string(safe), true) {
			t.Fatalf("unsafe left in %q", safe)
		}
	})
}

// cleanBytewise is clean without its eight-byte shortcut.
func cleanBytewise(s string, keepNL bool) bool {
	for i := 0; i < len(s); {
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

// Every byte value at every offset of printable text: clean's eight-byte
// shortcut finds what the bytewise loop finds.
func TestCleanEveryByte(t *testing.T) {
	base := []byte("System.Private.CoreLib!Method~ ")
	for n := range len(base) + 1 {
		for at := range n {
			for c := range 256 {
				b := append([]byte(nil), base[:n]...)
				b[at] = byte(c)
				for _, keep := range []bool{false, true} {
					if got, want := clean(string(b), keep), cleanBytewise(string(b), keep); got != want {
						t.Fatalf("clean(%q, %v) = %v, want %v", b, keep, got, want)
					}
				}
			}
		}
	}
}

func FuzzClean(f *testing.F) {
	f.Add("Program.Main(System.String[])", "\u00e9")
	f.Fuzz(func(t *testing.T, s, insert string) {
		for i := range min(len(s), 24) + 1 {
			x := s[:i] + insert + s[i:]
			for _, keep := range []bool{false, true} {
				if got, want := clean(x, keep), cleanBytewise(x, keep); got != want {
					t.Fatalf("clean(%q, %v) = %v, want %v", x, keep, got, want)
				}
			}
		}
	})
}
