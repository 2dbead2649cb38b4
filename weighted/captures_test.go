package weighted_test

// The tests of the exporters on the profiles of the real captures, which
// package profile builds (an external test package: profile imports
// weighted).

import (
	"bytes"
	"errors"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// readCapture reads a capture's profile, accepting a damaged trace (a
// truncated capture converts what it has).
func readCapture(tb testing.TB, rel string) *profile.Profile {
	tb.Helper()
	p, err := profile.Read(bytes.NewReader(testcapture.Load(tb, rel)), profile.Config{})
	var fe *nettrace.FormatError
	if p == nil || (err != nil && !errors.As(err, &fe)) {
		tb.Fatalf("%s: %v", rel, err)
	}
	return p
}

// The folded profile of every capture, in every measure it has, is its
// lines sorted by their text.
func TestFoldedCaptures(t *testing.T) {
	for _, rel := range testcapture.Traces() {
		t.Run(rel, func(t *testing.T) {
			if !testcapture.Available(rel) {
				t.Skipf("%s: not available (set %s)", rel, testcapture.EnvVar)
			}
			p := readCapture(t, rel)
			for _, m := range profile.Measures() {
				if p.Check(m) != nil {
					continue
				}
				wp, err := p.Weighted(m)
				if err != nil {
					t.Fatal(err)
				}
				weighted.CheckFolded(t, wp, m)
			}
		})
	}
}

// TestPprofEncodingCaptures holds the direct pprof encoding to the
// library's model on every capture profile's BenchmarkConvert measures
// (the external ones with CLRDIAG_CAPTURES) and every measure it has
// events of.
func TestPprofEncodingCaptures(t *testing.T) {
	for _, rel := range testcapture.AvailableTraces() {
		t.Run(testcapture.ShortName(rel), func(t *testing.T) {
			p := readCapture(t, rel)
			checked := 0
			for _, m := range profile.Measures() {
				if n, _ := p.Events(m); n == 0 && m != profile.MeasureWall {
					continue
				}
				wp, err := p.Weighted(m)
				if err != nil {
					t.Fatal(err)
				}
				weighted.CheckPprofEncoding(t, m, wp)
				checked++
			}
			if checked == 0 {
				t.Fatal("no measure checked")
			}
		})
	}
}

// BenchmarkPprofEncoding compares the direct encoding with the library's
// (Pprof + WriteUncompressed) and measures the gzip step, on the objver4
// capture's wall profile.
func BenchmarkPprofEncoding(b *testing.B) {
	p := readCapture(b, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")
	wp, err := p.Weighted(profile.MeasureWall)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := weighted.AppendPprof(wp, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := weighted.AppendPprof(wp, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pp, err := wp.Pprof()
			if err != nil {
				b.Fatal(err)
			}
			if err := pp.WriteUncompressed(&bytes.Buffer{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gzip", func(b *testing.B) {
		b.ReportAllocs()
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			if err := weighted.WriteGzip(&out, raw); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(raw)), "raw-bytes")
		b.ReportMetric(float64(out.Len()), "gzip-bytes")
	})
}
