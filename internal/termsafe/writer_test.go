package termsafe

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineWriter(t *testing.T) {
	text := "Main\x1b[2J\nFoo\u202eBar\n\tlast line \x07"
	doc := "{\"name\": \"a\\u001b[31m\x7f\u0085\",\n \"v\": \"\u202e\"}"
	for _, c := range []struct {
		in   string
		json bool
		want string
	}{
		{text, false, Lines(text)},
		{doc, true, string(JSON([]byte(doc)))},
	} {
		// Every split of the input into two writes gives the same output.
		for cut := 0; cut <= len(c.in); cut++ {
			var out bytes.Buffer
			l := &LineWriter{W: &out, JSON: c.json}
			for _, part := range []string{c.in[:cut], c.in[cut:]} {
				if n, err := l.Write([]byte(part)); n != len(part) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", part, n, err)
				}
			}
			last := c.in[strings.LastIndexByte(c.in, '\n')+1:]
			if strings.Contains(out.String(), last) {
				t.Errorf("cut %d: the line without a newline was written before Flush: %q", cut, out.String())
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Errorf("cut %d, json %v: got %q, want %q", cut, c.json, out.String(), c.want)
			}
		}
	}
	if strings.Contains(Lines(text), "\x1b") || strings.Contains(string(JSON([]byte(doc))), "\u202e") {
		t.Fatal("the input has nothing to escape: the test proves nothing")
	}
}
