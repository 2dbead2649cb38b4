package profile

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"text/tabwriter"
)

func tabwriterText(text []byte) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	tw.Write(text)
	tw.Flush()
	return b.String()
}

func FuzzWriteAligned(f *testing.F) {
	for _, s := range []string{"", "\n", "a", "a\n", "a\t", "a\tb", "a\tb\n", "  Exclusive\t%\tMethod\n  1.0ms\t50.0\tX!Y\n\nThreads\n  1\t2\n",
		"x\t日本\tz\n\ty\n", "a\t\n\t\tb\nc\n", "h\xffi\tj\n", "v\vw\n", "f\fg\tz\n", "\t\t\n\n\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var b bytes.Buffer
		if err := writeAligned(&b, text); err != nil {
			t.Fatal(err)
		}
		if want := tabwriterText(text); b.String() != want {
			t.Errorf("writeAligned(%q) = %q, want the tabwriter's %q", text, b.String(), want)
		}
	})
}

// Random tables: cells of several widths (runes, not bytes), lines of
// several cell counts, blank and tab-less lines between blocks.
func TestWriteAligned(t *testing.T) {
	pieces := []string{"a", "bb", "ccc ccc", "", "日本語", "x\xc3", "12.5ms", "Thread 7"}
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 500 {
		var text []byte
		for range rng.IntN(12) {
			for range rng.IntN(5) {
				text = append(text, pieces[rng.IntN(len(pieces))]...)
				text = append(text, '\t')
			}
			text = append(text, pieces[rng.IntN(len(pieces))]...)
			if rng.IntN(8) > 0 {
				text = append(text, '\n')
			}
		}
		var b bytes.Buffer
		if err := writeAligned(&b, text); err != nil {
			t.Fatal(err)
		}
		if want := tabwriterText(text); b.String() != want {
			t.Fatalf("iteration %d: writeAligned(%q) =\n%q, want the tabwriter's\n%q", iter, text, b.String(), want)
		}
	}
}
