package profile

import (
	"bytes"
	"io"
	"testing"
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
		_ = WriteFolded(io.Discard, p)
		_ = WriteSpeedscope(io.Discard, p, "fuzz")
		_ = WriteChromium(io.Discard, p)
		if _, err := p.Pprof(); err != nil {
			t.Fatalf("pprof: %v", err)
		}
		_ = BuildReport(p, ReportConfig{}).WriteText(io.Discard)
	})
}
