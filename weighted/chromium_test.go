package weighted

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
	"github.com/clrdiag/clrdiag/weighted/weightedtest"
)

// Two lock waits of one stack, the second starting when the first ends
// (or, with the runtime's own durations, a little before): Chromium shows
// two spans, not one. CPU samples of one stack, by contrast, are one span.
func TestChromiumRunsApart(t *testing.T) {
	runs := func(yield func(Run) bool) {
		_ = yield(Run{Stack: 0, Start: 0, Count: 1000}) &&
			yield(Run{Stack: 0, Start: 1000, Count: 1000}) && // touching
			yield(Run{Stack: 0, Start: 1500, Count: 1000}) // overlapping
	}
	for _, apart := range []bool{true, false} {
		wp := &Profile{Name: "app", ProcessID: 1, Types: []ValueType{{"delay", "nanoseconds"}}, Period: 1,
			Frames: []Frame{{Name: "Lock.Wait"}, {Name: "Main"}}, Stacks: []Stack{{Frames: []int{0, 1}}},
			Groups:    []Group{{Name: "Thread 7", ThreadID: 7, Samples: []Sample{{Stack: 0, Values: []int64{3000}}}, Runs: runs}},
			RunsApart: apart}
		var buf bytes.Buffer
		if err := WriteChromium(&buf, wp); err != nil {
			t.Fatal(err)
		}
		begins, problems := weightedtest.ValidateTraceEvents(buf.Bytes())
		if len(problems) > 0 {
			t.Errorf("RunsApart %v: %v\n%s", apart, problems, buf.Bytes())
		}
		want := 2 // Main and Lock.Wait once
		if apart {
			want = 6 // three times
		}
		if begins != want {
			t.Errorf("RunsApart %v: %d B events, want %d\n%s", apart, begins, want, buf.Bytes())
		}
	}
}

// The Chromium writer's timestamps, which keep the seconds of the one
// before, read as appendMicros writes them:
// growing by little and by much, across digit counts, going back, below
// 10 ms and negative, and after a new group's suffix.
func TestChromiumStamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var c chromiumWriter
	c.setSuffix("1", "2")
	var ns int64
	for i := range 20000 {
		switch i % 8 {
		case 0:
			ns += rng.Int64N(1000)
		case 1:
			ns += rng.Int64N(100_000_000)
		case 2:
			ns = rng.Int64N(100_000_000_000_000)
		case 3:
			ns -= rng.Int64N(20_000_000)
		case 4: // about a whole second, 1 s or 10 s
			ns = []int64{1, 10, rng.Int64N(100)}[i%3]*1_000_000_000 + rng.Int64N(3_000) - 1_500
		case 5:
			ns = rng.Int64N(20_000_000) - 1_000_000
		case 6: // about 100 ms (five digits of microseconds, then six) or 1 s
			ns = []int64{100_000_000, 1_000_000_000}[i%2] + rng.Int64N(3_000_000) - 1_500_000
		default:
			if i%1000 == 7 {
				c.setSuffix("1", strconv.Itoa(i))
			}
		}
		c.stamp(time.Duration(ns))
		want := string(fastfmt.AppendMicros(nil, ns)) + string(c.stampBuf[fastfmt.MicrosLen:])
		if string(c.ts) != want {
			t.Fatalf("step %d: stamp(%d) = %s, want %s", i, ns, c.ts, want)
		}
	}
}
