package profile

import "testing"

func TestSymbolSummary(t *testing.T) {
	for _, c := range []struct {
		s    SymbolStats
		want string
	}{
		{SymbolStats{}, "no sample frames"},
		{SymbolStats{Rundown: true, SampleFrames: 8, ResolvedSampleFrames: 6}, "6 of 8 sample frames resolved (75.0%)"},
		{SymbolStats{SampleFrames: 8, ResolvedSampleFrames: 8}, "8 of 8 sample frames resolved (100.0%)"},
		{SymbolStats{SampleFrames: 3, ResolvedSampleFrames: 1}, "1 of 3 sample frames resolved (33.3%); the trace has no rundown, so methods jitted before the session started stay addresses"},
	} {
		p := &Profile{Symbols: c.s}
		if got := p.SymbolSummary(); got != c.want {
			t.Errorf("%+v: SymbolSummary() = %q, want %q", c.s, got, c.want)
		}
	}
}
