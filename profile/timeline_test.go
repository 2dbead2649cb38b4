package profile

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/internal/timeline"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// Runs are stored in chunks that grow without moving the runs already
// stored, a run's head with its extension, and All yields them in order
// with their stack, kind, start and count: runs of one and of several
// samples, one sample a period apart, with deltas up to the largest
// without an extension and beyond it, going back in time, far from the
// first tick, at the tick frequencies of .NET on Linux (1 GHz) and Windows
// (10 MHz) and at odd ones.
func TestTimelineChunks(t *testing.T) {
	for _, freq := range []int64{1e9, 1e7, 3, 2_500_000_001} {
		t.Run(strconv.FormatInt(freq, 10), func(t *testing.T) {
			b := &Builder{hdr: nettrace.Header{TickFrequency: freq}}
			th := threadAcc{runSK: noRun}
			const n = 3*timeline.MaxChunk + 17
			type want struct {
				sk    uint32
				ticks int64
				count uint32
			}
			var runs []want
			ts := int64(1) << 50
			b.minTS = ts - 12345
			var first *timeline.Word
			for i := range n {
				switch i % 11 {
				case 3:
					ts += math.MaxInt32
				case 4:
					ts += math.MaxInt32 + 1
				case 5:
					ts += math.MinInt32
				case 6:
					ts += math.MinInt32 - 1
				case 7:
					ts += 1 << 40
				default:
					ts += freq / 1000
				}
				r := want{sk: uint32(i%5)<<1 | uint32(i%2), ticks: ts, count: uint32(i%7 + 1)}
				if i%13 == 0 {
					r.count = 1<<32 - 1
				}
				// As Builder.addSample starts a run and adds samples to it.
				if th.runExtra != 0 {
					th.endRun()
				}
				th.newRun(r.sk, r.ticks)
				th.runExtra = r.count - 1
				if i == 0 {
					first = &th.runs[0]
				}
				runs = append(runs, r)
			}
			if th.runExtra != 0 { // as Finish does
				th.endRun()
			}
			th.timeline.Sync(th.runs)
			tl := th.timeline
			if &tl.Chunks[0][0] != first {
				t.Error("the first chunk moved as the timeline grew")
			}
			for _, c := range tl.Chunks {
				if cap(c) > timeline.MaxChunk {
					t.Errorf("chunk of capacity %d, want at most %d", cap(c), timeline.MaxChunk)
				}
			}
			symOf := make([]int, 5)
			for i := range symOf {
				symOf[i] = 4 - i
			}
			b.finishTimeline(&tl, symOf, &b.hdr, -1)
			wtl := weighted.TimelineOf(tl)
			if wtl.Len() != n {
				t.Fatalf("Len = %d, want %d", wtl.Len(), n)
			}
			var samples int64
			for _, r := range runs {
				samples += int64(r.count)
			}
			if tl.Samples != samples {
				t.Errorf("%d samples, want %d", tl.Samples, samples)
			}
			i := 0
			for r := range wtl.All() {
				w := runs[i]
				kind := clrevents.SampleExternal
				if w.sk&1 != 0 {
					kind = clrevents.SampleManaged
				}
				want := weighted.Run{Stack: 4 - int(w.sk>>1), Kind: kind, Start: b.hdr.DurationOf(w.ticks - b.minTS), Count: int64(w.count)}
				if r != want {
					t.Fatalf("run %d = %+v, want %+v", i, r, want)
				}
				i++
			}
			if i != n {
				t.Errorf("All yielded %d runs, want %d", i, n)
			}
		})
	}
}

// The timeline and the per-stack counts are recorded separately (the
// counts through each thread's cache of recent stacks, which a thread with
// more than four stacks cycles through); summed by stack and kind, the runs
// must give exactly the counts, and their samples the timeline's count
// (Finish takes it from the counts, without reading the runs).
func TestTimelineMatchesSamples(t *testing.T) {
	for _, rel := range testcapture.Traces() {
		p, err := Read(bytes.NewReader(testcapture.Load(t, rel)), Config{Timeline: true})
		if fe := (*nettrace.FormatError)(nil); err != nil && !errors.As(err, &fe) {
			t.Fatalf("%s: %v", rel, err) // a damaged capture converts what it has
		}
		if p.TimelineTruncated {
			t.Fatalf("%s: timeline truncated", rel)
		}
		timelineMatchesSamples(t, p)
	}
}

func timelineMatchesSamples(t *testing.T, p *Profile) {
	t.Helper()
	for _, th := range p.Threads {
		var samples int64
		for r := range th.Timeline.All() {
			samples += r.Count
		}
		if th.Timeline.Samples() != samples {
			t.Errorf("thread %d: timeline of %d samples counts %d", th.ID, samples, th.Timeline.Samples())
		}
		fromRuns := make(map[int]StackSample)
		var last time.Duration
		for r := range th.Timeline.All() {
			if r.Start < last || r.Count <= 0 {
				t.Fatalf("thread %d: run %+v after %v", th.ID, r, last)
			}
			last = r.Start
			s := fromRuns[r.Stack]
			s.Stack = r.Stack
			if r.Kind == clrevents.SampleManaged {
				s.Managed += r.Count
			} else {
				s.External += r.Count
			}
			fromRuns[r.Stack] = s
		}
		if len(fromRuns) != len(th.Samples) {
			t.Errorf("thread %d: %d stacks in the timeline, %d in Samples", th.ID, len(fromRuns), len(th.Samples))
		}
		for _, s := range th.Samples {
			if got := fromRuns[s.Stack]; got != s {
				t.Errorf("thread %d stack %d: %+v in the timeline, %+v in Samples", th.ID, s.Stack, got, s)
			}
		}
		if len(th.Samples) <= recentStacks {
			t.Logf("thread %d has only %d stacks", th.ID, len(th.Samples))
		}
	}
}

// MaxTimelineRuns stops the timeline and says so.
func TestTimelineTruncated(t *testing.T) {
	p := readCapture(t, "perfview/only_managed_samples.nettrace.zip", Config{Timeline: true, MaxTimelineRuns: 100})
	runs := 0
	for _, th := range p.Threads {
		runs += th.Timeline.Len()
		var samples int64
		for r := range th.Timeline.All() {
			samples += r.Count
		}
		if th.Timeline.Samples() != samples {
			t.Errorf("thread %d: timeline of %d samples counts %d", th.ID, samples, th.Timeline.Samples())
		}
	}
	if !p.TimelineTruncated || runs != 100 {
		t.Errorf("truncated %v with %d runs, want true with 100", p.TimelineTruncated, runs)
	}
}
