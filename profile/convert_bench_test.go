package profile

import (
	"bytes"
	"errors"
	"io"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// BenchmarkConvert measures, on every trace capture (the committed ones,
// and with CLRDIAG_CAPTURES those that are not), decoding alone against
// each conversion (decode + profile + export, one sub-benchmark per format
// and measure the capture has events of) and the report, to hold every
// conversion to at most twice the decode:
//
//	go test ./profile -run '^$' -bench Convert -count 10 | tee new.txt
//	benchstat old.txt new.txt
//
// The ratios are convert/<x> time divided by decode time of the same
// capture. Each sub-benchmark also reports cpu-ns/op, the process's CPU
// time per operation (garbage collection included; on a shared machine
// it moves much less than the wall time), and gc/op, the collections per
// operation: at GOMAXPROCS=1 each one marks for several milliseconds of
// the program's time, during which every pointer store (the decoder's, a
// few per event, included) runs the write barrier, so what a conversion
// allocates slows its decoding too.
// "objver4" is the capture with the most samples (35 161, on 13
// threads, with 35 458 allocation ticks): the stand-in for the many-thread
// web app.
func BenchmarkConvert(b *testing.B) {
	for _, rel := range testcapture.Traces() {
		name := testcapture.ShortName(rel)
		b.Run(name, func(b *testing.B) {
			data := testcapture.Load(b, rel)
			benchmarkConvert(b, data)
		})
	}
}

// readProfile reads a whole trace, accepting damage (a truncated capture
// converts what it has).
func readBench(b *testing.B, data []byte, cfg Config) *Profile {
	p, err := Read(bytes.NewReader(data), cfg)
	var fe *nettrace.FormatError
	if err != nil && !errors.As(err, &fe) {
		b.Fatal(err)
	}
	return p
}

func benchmarkConvert(b *testing.B, data []byte) {
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b, cpuTime())
		defer reportGC(b, gcCycles())
		for b.Loop() {
			r, err := nettrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			var ev nettrace.Event
			for r.ReadEvent(&ev) == nil {
			}
		}
	})
	for _, m := range benchMeasures(readBench(b, data, Config{})) {
		for _, f := range weighted.Formats() {
			if m.CheckFormat(f) != nil {
				continue
			}
			b.Run(f.Name+"-"+m.Name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				defer reportCPU(b, cpuTime())
				defer reportGC(b, gcCycles())
				for b.Loop() {
					p := readBench(b, data, Config{Timeline: f.Timeline, Measure: m.Name})
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
	b.Run("report", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b, cpuTime())
		defer reportGC(b, gcCycles())
		for b.Loop() {
			p := readBench(b, data, Config{})
			if err := BuildReport(p, ReportConfig{}).WriteText(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// gcCycles is the number of garbage collections completed so far.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// reportGC reports the garbage collections per operation since start.
func reportGC(b *testing.B, start uint64) {
	if b.N > 0 {
		b.ReportMetric(float64(gcCycles()-start)/float64(b.N), "gc/op")
	}
}

// benchMeasures are the measures of probe's trace that clrdiag trace
// convert converts: not cpu (the same profile as wall, with another
// default type), nor a measure the trace has no events of (the CLI refuses
// it with exit 1 and how to collect them; wall included, as a trace
// without CPU samples has no wall profile).
func benchMeasures(probe *Profile) []MeasureInfo {
	var out []MeasureInfo
	for _, m := range MeasureInfos() {
		if m.Name != MeasureCPU && probe.Check(m.Name) == nil {
			out = append(out, m)
		}
	}
	return out
}

// reportCPU reports the CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
