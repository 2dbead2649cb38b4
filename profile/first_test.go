package profile

import (
	"slices"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
)

func TestFirstSample(t *testing.T) {
	type first struct {
		frames []string
		kind   SampleKind
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want map[uint64]first
	}{
		// Thread 200's three external samples come before its managed one.
		{"all", Config{}, map[uint64]first{
			100: {[]string{"App!App.Worker.Leaf", "App!App.Worker.Work", "App!App.Program.Main"}, clrevents.SampleManaged},
			200: {[]string{"0xdead0000", "App!App.Worker.Work", "App!App.Program.Main"}, clrevents.SampleExternal},
			300: {nil, clrevents.SampleExternal},
		}},
		{"managed-only", Config{ManagedOnly: true}, map[uint64]first{
			100: {[]string{"App!App.Worker.Leaf", "App!App.Worker.Work", "App!App.Program.Main"}, clrevents.SampleManaged},
			200: {[]string{"App!App.Lazy.Jitted", "App!App.Program.Main"}, clrevents.SampleManaged},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readSynth(t, 8, c.cfg)
			if len(p.Threads) != len(c.want) {
				t.Fatalf("%d threads, want %d", len(p.Threads), len(c.want))
			}
			for _, th := range p.Threads {
				w, ok := c.want[th.ID]
				if !ok {
					t.Fatalf("unexpected thread %d", th.ID)
				}
				if th.FirstStack < 0 || th.FirstStack >= len(p.Stacks) {
					t.Fatalf("thread %d: FirstStack %d out of range", th.ID, th.FirstStack)
				}
				if got := frameNames(p, th.FirstStack); !slices.Equal(got, w.frames) || th.FirstKind != w.kind {
					t.Errorf("thread %d first sample = %v %v, want %v %v", th.ID, got, th.FirstKind, w.frames, w.kind)
				}
			}
		})
	}
}
