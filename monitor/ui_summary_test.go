package monitor

import (
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// The dashboard's profile summary names what the flame graph opens on (the
// pprof default, wall_ran when some threads waited the whole trace), in
// words, with the other sample types the Sample menu offers.
func TestProfileSummary(t *testing.T) {
	measure := func(name string) profile.MeasureInfo {
		m, err := profile.LookupMeasure(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cpuTypes := []weighted.ValueType{{Type: "samples"}, {Type: "wall"}, {Type: "cpu"}, {Type: "wall_ran"}}
	for _, c := range []struct {
		n    int64
		m    string
		wp   weighted.Profile
		want string
	}{
		{4000, "wall", weighted.Profile{Types: cpuTypes, Default: 1},
			"4000 samples in 5s, weighted by wall time; the Sample menu switches to samples, cpu, wall_ran"},
		{4000, "wall", weighted.Profile{Types: cpuTypes, Default: 1, PprofDefault: "wall_ran"},
			"4000 samples in 5s, weighted by wall time of the threads that ran (wall_ran; the threads that waited the whole time are left out); the Sample menu switches to samples, wall, cpu"},
		{1, "cpu", weighted.Profile{Types: cpuTypes, Default: 2},
			"1 sample in 5s, weighted by CPU time; the Sample menu switches to samples, wall, wall_ran"},
		{12, "alloc", weighted.Profile{Types: []weighted.ValueType{{Type: "samples"}, {Type: "alloc_space"}}, Default: 1},
			"12 allocation ticks in 5s, weighted by alloc_space; the Sample menu switches to samples"},
		{3, "exceptions", weighted.Profile{Types: []weighted.ValueType{{Type: "exceptions"}}},
			"3 exceptions in 5s, weighted by exceptions"},
	} {
		if got := profileSummary(c.n, measure(c.m), 5*time.Second, &c.wp); got != c.want {
			t.Errorf("%d %s:\n got %q\nwant %q", c.n, c.m, got, c.want)
		}
	}
}
