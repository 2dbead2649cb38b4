package profile

import (
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
)

// Runs are stored in chunks that grow without moving the runs already
// stored, and All yields them in order with their stack, kind, start and
// count.
func TestTimelineChunks(t *testing.T) {
	var tl Timeline
	const n = 3*maxTimelineChunk + 17
	var last []timelineRun // filled in place as the Builder does
	var first *timelineRun
	for i := range n {
		r := timelineRun{stackKind: uint32(i%5)<<1 | uint32(i%2), count: uint32(i%7 + 1), start: int64(10 * i)}
		if len(last) < cap(last) {
			last = append(last, r)
		} else {
			last = tl.grow(last, r)
		}
		if i == 0 {
			first = &last[0]
		}
		if i == maxTimelineChunk {
			tl.sync(last) // as often as it likes
		}
	}
	tl.sync(last)
	if tl.Len() != n {
		t.Fatalf("Len = %d, want %d", tl.Len(), n)
	}
	if &tl.chunks[0][0] != first {
		t.Error("the first chunk moved as the timeline grew")
	}
	for _, c := range tl.chunks {
		if cap(c) > maxTimelineChunk {
			t.Errorf("chunk of capacity %d, want at most %d", cap(c), maxTimelineChunk)
		}
	}
	i := 0
	for r := range tl.All() {
		kind := clrevents.SampleExternal
		if i%2 == 1 {
			kind = clrevents.SampleManaged
		}
		want := Run{Stack: i % 5, Kind: kind, Start: time.Duration(10 * i), Count: int64(i%7 + 1)}
		if r != want {
			t.Fatalf("run %d = %+v, want %+v", i, r, want)
		}
		i++
	}
	if i != n {
		t.Errorf("All yielded %d runs, want %d", i, n)
	}
}

// The timeline and the per-stack counts are recorded separately (the
// counts through each thread's cache of recent stacks, which a thread with
// more than four stacks cycles through); summed by stack and kind, the runs
// must give exactly the counts.
func TestTimelineMatchesSamples(t *testing.T) {
	p := readCapture(t, "perfview/only_managed_samples.nettrace.zip", Config{Timeline: true})
	if p.TimelineTruncated {
		t.Fatal("timeline truncated")
	}
	for _, th := range p.Threads {
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
	}
	if !p.TimelineTruncated || runs != 100 {
		t.Errorf("truncated %v with %d runs, want true with 100", p.TimelineTruncated, runs)
	}
}
