package profile

import (
	"errors"
	"io"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/weighted"
)

// BenchmarkWrite measures the writers alone, on the captures and in the
// formats and measures of BenchmarkConvert: the profile is read once,
// each operation builds its Weighted (Profile.Weighted, the "weighted-M"
// sub-benchmarks alone) and writes it to io.Discard. What a conversion
// costs beyond decoding and building the profile is here, allocation
// included:
//
//	go test ./profile -run '^$' -bench 'Write/objver4/' -benchmem
func BenchmarkWrite(b *testing.B) {
	for _, rel := range testcapture.Traces() {
		b.Run(testcapture.ShortName(rel), func(b *testing.B) {
			data := testcapture.Load(b, rel)
			benchmarkWrite(b, data)
		})
	}
}

func benchmarkWrite(b *testing.B, data []byte) {
	for _, m := range benchMeasures(readBench(b, data, Config{})) {
		timeline := readBench(b, data, Config{Timeline: true, Measure: m.Name})
		plain := readBench(b, data, Config{Measure: m.Name})
		b.Run("weighted-"+m.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := plain.Weighted(m.Name); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, f := range weighted.Formats() {
			if m.CheckFormat(f) != nil {
				continue
			}
			p := plain
			if f.Timeline {
				p = timeline
			}
			b.Run(f.Name+"-"+m.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					wp, err := p.Weighted(m.Name)
					if err != nil {
						b.Fatal(err)
					}
					if err := f.Write(io.Discard, wp); err != nil && !errors.Is(err, weighted.ErrNoTimeline) {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
