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
// values from small ranges (many equal), methods that waited or ran,
// frames sharing names and modules (overloads, ranked equal when their
// values are too).
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
			ranked = append(ranked, methodRank{frame: int32(f), excl: rng.Int64N(values), incl: rng.Int64N(values), waiting: rng.IntN(3) == 0})
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

// At equal value, a method of work that ran ranks before one of threads
// that waited, whatever their names.
func TestMethodRankingWaitingTie(t *testing.T) {
	frames := []Frame{{Name: "P.Main", Module: "Spin"}, {Name: "P.Spin", Module: "Spin"}, {Name: "A.First", Module: "Spin"}}
	for _, inclusive := range []bool{false, true} {
		ranked := []methodRank{{frame: 0, excl: 50, incl: 50, waiting: true}, {frame: 1, excl: 50, incl: 50}, {frame: 2, excl: 10, incl: 50, waiting: true}}
		got := methodRanking{ranked: ranked, frames: frames, inclusive: inclusive}.top(3)
		var names []string
		for _, r := range got {
			names = append(names, frames[r.frame].Name)
		}
		want := []string{"P.Spin", "P.Main", "A.First"}
		if inclusive {
			want = []string{"P.Spin", "A.First", "P.Main"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("inclusive %v: ranked %v, want %v", inclusive, names, want)
		}
	}
}

// methodThreads tells, for each method (module and name) of p's samples,
// whether it is on the stacks of a thread that ran and of one that waited
// the whole trace: the report's rankings checked from the profile's
// threads.
func methodThreads(p *Profile) (onRan, onWaiting map[string]bool, ranSamples int64, ranExcl map[string]int64) {
	onRan, onWaiting, ranExcl = map[string]bool{}, map[string]bool{}, map[string]int64{}
	key := func(f int) string {
		if f < 0 {
			return noFrames
		}
		return p.Frames[f].String()
	}
	for _, th := range p.Threads {
		on := onRan
		if th.Waiting {
			on = onWaiting
		}
		for _, s := range th.Samples {
			fr := p.Stacks[s.Stack].Frames
			if len(fr) == 0 {
				fr = []int{-1}
			}
			for _, f := range fr {
				on[key(f)] = true
			}
			if !th.Waiting {
				ranSamples += s.Count()
				ranExcl[key(fr[0])] += s.Count()
			}
		}
	}
	return onRan, onWaiting, ranSamples, ranExcl
}

// On the real captures with threads that waited the whole trace (the Hot
// target's main thread in Console.ReadLine; 9 of the 15 threads of the
// truncated 3.0 counters trace), the default report ranks only the threads
// that ran, each method's share of their samples, and lists the waiting
// threads apart; --include-waiting ranks every thread, and never puts a
// method of waiting threads before work that ran of the same value.
func TestReportWaitingCaptures(t *testing.T) {
	for _, c := range []struct {
		capture, first string
		waiting        int
	}{
		{"clrdiag/hot-3.1.2-linux-x64.nettrace", "Hot.Burner.MostlyHot", 1},
		{"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace", "", 9},
	} {
		t.Run(c.capture, func(t *testing.T) {
			p, err := Read(bytes.NewReader(capture(t, c.capture)), Config{})
			if p == nil {
				t.Fatal(err)
			}
			onRan, onWaiting, ranSamples, ranExcl := methodThreads(p)
			r := BuildReport(p, ReportConfig{Top: 1000})
			if !r.WaitingLeftOut || len(r.Methods) == 0 {
				t.Fatalf("waiting threads not left out (%v) or no methods", r.WaitingLeftOut)
			}
			if c.first != "" && r.Methods[0].Method != c.first {
				t.Errorf("first method %s, want %s", r.Methods[0].Method, c.first)
			}
			var sum float64
			for _, m := range r.Methods {
				k := Frame{Name: m.Method, Module: m.Module}.String()
				if !onRan[k] || m.Waiting {
					t.Errorf("%s is ranked but is not on a thread that ran", k)
				}
				if want := 100 * float64(ranExcl[k]) / float64(ranSamples); math.Abs(m.ExclusivePct-want) > 1e-9 {
					t.Errorf("%s: %.3f%% exclusive, want %.3f%% of the samples of the threads that ran", k, m.ExclusivePct, want)
				}
				sum += m.ExclusivePct
			}
			if math.Abs(sum-100) > 1e-6 {
				t.Errorf("exclusive shares sum to %.4f%%", sum)
			}
			threads := 0
			for _, w := range r.Waiting {
				threads += w.Threads
				if !onWaiting[w.Method] && w.Method != noFrames {
					t.Errorf("waiting site %s is not the leaf of a waiting thread", w.Method)
				}
			}
			if threads != c.waiting {
				t.Errorf("%d waiting threads listed (%+v), want %d", threads, r.Waiting, c.waiting)
			}
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "\nWaiting the whole trace (left out of the ranking above") {
				t.Errorf("text report without the waiting section:\n%s", text.String())
			}

			for _, inclusive := range []bool{false, true} {
				r := BuildReport(p, ReportConfig{Top: 1000, IncludeWaiting: true, Inclusive: inclusive})
				if r.WaitingLeftOut || len(r.Waiting) != 0 {
					t.Errorf("--include-waiting left waiting threads out: %+v", r.Waiting)
				}
				value := func(m MethodTime) int64 {
					if inclusive {
						return m.InclusiveValue
					}
					return m.ExclusiveValue
				}
				var lastWaitingOnly string
				for i, m := range r.Methods {
					k := Frame{Name: m.Method, Module: m.Module}.String()
					if i > 0 && value(m) != value(r.Methods[i-1]) {
						lastWaitingOnly = ""
					}
					if onWaiting[k] && !onRan[k] {
						lastWaitingOnly = k
					} else if onRan[k] && !onWaiting[k] && lastWaitingOnly != "" {
						t.Errorf("inclusive %v: %s (only on waiting threads) ranks above %s (ran) at the same value", inclusive, lastWaitingOnly, k)
					}
				}
			}
		})
	}
}
