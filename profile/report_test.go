package profile

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// methodRanking.top ranks as sorting every method does, ties included:
// values from small ranges (many equal), frames sharing names and modules
// (overloads, ranked equal when their values are too).
func TestMethodRankingTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shortcuts := 0
	for round := range 3000 {
		nFrames := 1 + rng.IntN(300)
		frames := make([]Frame, nFrames)
		names := 1 + rng.IntN(nFrames)
		for i := range frames {
			frames[i] = Frame{Name: fmt.Sprintf("N.M%d", rng.IntN(names)), Module: fmt.Sprintf("mod%d", rng.IntN(3))}
		}
		values := int64(1 + rng.IntN(1000))
		var ranked []methodRank
		for f := -1; f < nFrames; f++ {
			if rng.IntN(4) == 0 {
				continue
			}
			ranked = append(ranked, methodRank{frame: f, excl: rng.Int64N(values), incl: rng.Int64N(values)})
		}
		for _, n := range []int{1, 3, 20, 100} {
			inclusive := round%2 == 1
			want := slices.Clone(ranked)
			sort.Sort(methodRanking{ranked: want, frames: frames, inclusive: inclusive})
			want = want[:min(n, len(want))]
			got := methodRanking{ranked: slices.Clone(ranked), frames: frames, inclusive: inclusive}.top(n)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, top %d of %d (inclusive %v):\n got %v\nwant %v", round, n, len(ranked), inclusive, got, want)
			}
			if len(ranked) > 4*n {
				shortcuts++
			}
		}
	}
	if shortcuts < 1000 {
		t.Errorf("only %d rankings long enough for the shortcut", shortcuts)
	}
}

// The lines WriteText writes without fmt read as the fmt formats they
// replaced did, including values fmt and the shortcuts could round
// differently.
func TestWriteTextLines(t *testing.T) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
	for _, v := range []int64{0, 1, 7, 49_950, 50_000, 1_234_567, 99_999_999, -3_000_000, math.MaxInt64, math.MinInt64} {
		d := time.Duration(v)
		n := v & 0xffffff // a count
		r := &Report{Runtime: "8.0.1", Period: time.Millisecond, DecodeErrors: 1 + int(n),
			Symbols: SymbolStats{SampleFrames: 3 + v&0xff, ResolvedSampleFrames: v & 0x3, EventFrames: 10 + v&0xfff, ResolvedEventFrames: v & 7},
			GC: GCReport{Collections: [3]int64{n, 2, 3}, Pauses: n, PauseTotal: d, PauseMean: d / 3, PauseMax: d / 2,
				OtherSuspensions: n + 1, OtherSuspensionTotal: d},
			Contention: ContentionReport{Count: n + 1, Total: d, Max: d / 7, Unfinished: n + 1}}
		for _, cpu := range []bool{false, true} {
			r.Measure = MeasureWall
			order := "inclusive"
			r.Inclusive = true
			if cpu {
				r.Measure, r.Inclusive, order = MeasureCPU, false, "exclusive"
			}
			r.Methods = []MethodTime{{Method: "M"}}
			var buf bytes.Buffer
			if err := r.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			s, g, c := r.Symbols, r.GC, r.Contention
			what := "wall time (every sample: running, waiting, or in native code)"
			if cpu {
				what = "cpu time (Managed samples only: running managed code)"
			}
			for _, want := range []string{
				fmt.Sprintf("; %d of %d sample frames resolved (%.1f%%), %d unresolved", s.ResolvedSampleFrames, s.SampleFrames,
					100*float64(s.ResolvedSampleFrames)/float64(s.SampleFrames), s.UnresolvedSampleFrames()),
				fmt.Sprintf("; %d of %d frames resolved over all stacks\n", s.ResolvedEventFrames, s.EventFrames),
				fmt.Sprintf("\nDecode errors: %d runtime events did not decode\n", r.DecodeErrors),
				fmt.Sprintf("\nTop methods by %s %s\n", order, what),
				fmt.Sprintf("\nGC\n  Collections: %d (gen0 %d, gen1 %d, gen2 %d)\n", g.Collections[0]+5, g.Collections[0], g.Collections[1], g.Collections[2]),
				fmt.Sprintf("\n  Pauses: %d, total %s, mean %s, max %s\n", g.Pauses, ms(g.PauseTotal), ms(g.PauseMean), ms(g.PauseMax)),
				fmt.Sprintf("\n  Other runtime suspensions: %d, total %s\n", g.OtherSuspensions, ms(g.OtherSuspensionTotal)),
				fmt.Sprintf("\nLock contention: %d waits, total %s, max %s (%d unfinished at the end of the trace)\n", c.Count, ms(c.Total), ms(c.Max), c.Unfinished),
			} {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("report of %d lacks %q:\n%s", v, want, buf.String())
				}
			}
		}
	}
}
