package profile

import (
	"bytes"
	"io"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// craftedTrace writes a hostile trace with nettrace.Writer: n rounds, each a
// stack block defining one stack of depth addresses never seen before, a
// SampleProfiler sample on that stack and, with rundown, one rundown method
// event (MethodDCEndVerbose) whose range covers the stack's first address.
// With rundown it is the trace that made the Builder re-sort every address
// seen for each method (quadratic: 13 MB killed at 20 s, 936 MB); without,
// and deep, it is a flood of distinct unresolved addresses (2M took 1 GB for
// pprof).
func craftedTrace(tb testing.TB, n, depth int, rundown bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: 8, ProcessID: 7, ExpectedCPUSamplingRate: 1_000_000,
		SyncTimeUTC: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		tb.Fatal(err)
	}
	sample := &nettrace.Metadata{ID: 1, ProviderName: clrevents.ProviderSampleProfiler, EventID: 0}
	method := &nettrace.Metadata{ID: 2, ProviderName: clrevents.ProviderRundown, EventID: 144, Version: 2}
	for _, md := range []*nettrace.Metadata{sample, method} {
		if err := w.AddMetadata(md); err != nil {
			tb.Fatal(err)
		}
	}
	managed := (&wire.Builder{}).U32(2).B
	stack := make([]uint64, depth)
	seq := uint32(0)
	for i := range n {
		for j := range stack {
			stack[j] = 0x7f0000000000 + uint64(i*depth+j)*16
		}
		if err := w.WriteStacks(uint32(i+1), [][]uint64{stack}); err != nil {
			tb.Fatal(err)
		}
		seq++
		ts := int64(1_000_000_000 + i*1_000_000)
		if err := w.WriteEvent(&nettrace.Event{Metadata: sample, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: seq,
			Timestamp: ts, StackID: uint32(i + 1), Payload: managed}); err != nil {
			tb.Fatal(err)
		}
		if rundown {
			seq++
			if err := w.WriteEvent(&nettrace.Event{Metadata: method, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: seq,
				Timestamp: ts, Payload: methodPayload(stack[0]-4, 8, 1, "Crafted.T", "M")}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// A trace that alternates new stacks and rundown methods reads in one pass,
// keeps every sample, and past the address cap puts the stacks over it on
// the over-the-cap stack, saying so; the exports stay valid.
func TestCraftedCaps(t *testing.T) {
	const n, depth = 4000, 20
	data := craftedTrace(t, n, depth, true)
	for _, c := range []struct {
		name   string
		cfg    Config
		capped bool
	}{
		{"under the caps", Config{Timeline: true}, false},
		{"address cap", Config{Timeline: true, MaxAddresses: 1000 * depth}, true},
		{"stack cap", Config{Timeline: true, MaxStacks: 1500}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Read(bytes.NewReader(data), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if a := p.Activity(); a.Samples != n {
				t.Fatalf("%d samples, want %d", a.Samples, n)
			}
			if p.Capped.Hit() != c.capped {
				t.Fatalf("capped %+v, want %v", p.Capped, c.capped)
			}
			// Every method of the rundown is touched by its stack.
			if p.Symbols.Methods == 0 {
				t.Error("no rundown method kept")
			}
			if !c.capped {
				if len(p.Stacks) != n || p.Symbols.Methods != n {
					t.Errorf("%d stacks, %d methods, want %d of each", len(p.Stacks), p.Symbols.Methods, n)
				}
				return
			}
			kept := 1000 // the stacks before the cap
			if p.Capped.Stacks {
				kept = 1500
			}
			if p.Capped.Samples != int64(n-kept) || len(p.Stacks) != kept+1 {
				t.Errorf("%d samples on the over-the-cap stack, %d stacks; want %d and %d", p.Capped.Samples, len(p.Stacks), n-kept, kept+1)
			}
			notes := strings.Join(p.Notes(), "\n")
			if !strings.Contains(notes, "cap") || p.CapNote() == "" {
				t.Errorf("notes do not tell about the cap: %q", notes)
			}
			checkPprof(t, p)
			if n := checkChromium(t, p); n == 0 {
				t.Error("chromium: no frames")
			}
			var folded bytes.Buffer
			if err := weighted.WriteFolded(&folded, weightedOf(t, p, "")); err != nil || !strings.Contains(folded.String(), OverCapFrame) {
				t.Errorf("folded output lacks %q (%v)", OverCapFrame, err)
			}
		})
	}
}

// peakHeap samples the live heap every millisecond while f runs and
// returns the highest value seen.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	return peak
}

// BenchmarkCrafted measures the hostile traces of issue 12 through the
// whole conversion (read, build, pprof), with allocations and the peak live
// heap (peak-MB), at the default caps:
//   - rundown-after-each-stack: 32k stack blocks of 20 new addresses, each
//     followed by a rundown method (13 MB; was quadratic);
//   - 2M-addresses: 20k stacks of 100 new addresses, no rundown (16 MB,
//     2M distinct unresolved addresses; took 1 GB for pprof).
func BenchmarkCrafted(b *testing.B) {
	for _, c := range []struct {
		name         string
		n, depth     int
		withMethods  bool
		wantCappedAt int
	}{
		{"rundown-after-each-stack", 32000, 20, true, 0},
		{"2M-addresses", 20000, 100, false, 0},
	} {
		data := craftedTrace(b, c.n, c.depth, c.withMethods)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var peak uint64
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					p, err := Read(bytes.NewReader(data), Config{})
					if err != nil {
						b.Fatal(err)
					}
					wp, err := p.Weighted("")
					if err != nil {
						b.Fatal(err)
					}
					if err := weighted.WritePprof(io.Discard, wp); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(len(data))/(1<<20), "trace-MiB")
		})
	}
}
