package profile

import (
	"fmt"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/weighted"
)

// SymbolSummary says how many sample frames resolved, and why not.
func (p *Profile) SymbolSummary() string {
	s := p.Symbols
	if s.SampleFrames == 0 {
		return "no sample frames"
	}
	msg := fmt.Sprintf("%d of %d sample frames resolved (%.1f%%)", s.ResolvedSampleFrames, s.SampleFrames,
		100*float64(s.ResolvedSampleFrames)/float64(s.SampleFrames))
	if !s.Rundown && s.UnresolvedSampleFrames() > 0 {
		msg += "; the trace has no rundown, so methods jitted before the session started stay addresses"
	}
	return msg
}

// WeightedSummary says what wp (p.Weighted of measure m) holds: "1200
// samples on 3 threads (busiest: thread 42), weighed by wall time, period
// 1ms; ...". With pprof it also says what pprof shows first when that is
// not Types[Default] (wall_ran).
func (p *Profile) WeightedSummary(wp *weighted.Profile, m MeasureInfo, pprof bool) string {
	busiest := ""
	if wp.Active >= 0 && len(wp.Groups) > 1 {
		busiest = fmt.Sprintf(" (busiest: %s)", strings.ToLower(wp.Groups[wp.Active].Name))
	}
	n, total := p.Events(m.Name)
	if m.Name == MeasureWall || m.Name == MeasureCPU {
		weight := wp.Types[wp.Default].Type + " time"
		if pprof && wp.PprofDefault == WallRanType {
			weight += " of the threads that ran (" + WallRanType + ")"
		}
		return fmt.Sprintf("%d samples on %d threads%s, weighed by %s, period %s; %s",
			n, len(wp.Groups), busiest, weight, p.Period, p.SymbolSummary())
	}
	what := fmt.Sprintf("%d %s", n, m.Noun)
	switch m.Name {
	case MeasureAlloc:
		what += fmt.Sprintf(" (%d bytes)", total)
	case MeasureContention:
		what += fmt.Sprintf(" (%s waited)", time.Duration(total).Round(time.Microsecond))
	}
	s := p.Symbols
	frames := "no stack frames"
	if s.EventFrames > 0 {
		frames = fmt.Sprintf("%d of %d stack frames resolved (%.1f%%)", s.ResolvedEventFrames, s.EventFrames,
			100*float64(s.ResolvedEventFrames)/float64(s.EventFrames))
	}
	return fmt.Sprintf("%s on %d threads%s, weighed by %s; %s", what, len(wp.Groups), busiest, wp.Types[wp.Default].Type, frames)
}
