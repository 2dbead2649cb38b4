package profile

import (
	"bytes"
	"io"
	"testing"

	"github.com/clrdiag/clrdiag/weighted"
)

// FuzzRead feeds damaged traces to the whole pipeline: reading, building,
// every exporter and the report must not panic, whatever the bytes.
func FuzzRead(f *testing.F) {
	f.Add(synthTrace(f, 8))
	f.Add(synthTrace(f, 4))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Read(bytes.NewReader(data), Config{Timeline: true})
		if p == nil {
			if err == nil {
				t.Fatal("nil profile without error")
			}
			return
		}
		for _, m := range Measures() {
			wp, err := p.Weighted(m)
			if err != nil {
				t.Fatal(err)
			}
			_ = weighted.WriteFolded(io.Discard, wp)
			_ = weighted.WriteSpeedscope(io.Discard, wp)
			_ = weighted.WriteChromium(io.Discard, wp)
			if _, err := wp.Pprof(); err != nil {
				t.Fatalf("pprof: %v", err)
			}
			_ = BuildReport(p, ReportConfig{Measure: m}).WriteText(io.Discard)
		}
	})
}
