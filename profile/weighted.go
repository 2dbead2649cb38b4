package profile

import (
	"fmt"
	"strconv"

	"github.com/clrdiag/clrdiag/weighted"
)

// Measures of a CPU profile: the sample types of Profile.Weighted.
const (
	// MeasureWall weighs every sample: thread time, running or not.
	MeasureWall = "wall"
	// MeasureCPU weighs Managed samples only: time running managed code.
	MeasureCPU = "cpu"
	// WallRanType is the sample type of a CPU profile's Weighted that
	// weighs the samples of the threads that ran (not Thread.Waiting) as
	// wall does, and those of the threads that waited the whole trace as
	// 0: the wall time trace report ranks by default, and pprof's default
	// sample type for wall.
	WallRanType = "wall_ran"
)

// cpuTypes returns the sample types of a CPU profile's Weighted, in order.
func cpuTypes() []weighted.ValueType {
	return []weighted.ValueType{{Type: "samples", Unit: "count"}, {Type: MeasureWall, Unit: "nanoseconds"}, {Type: MeasureCPU, Unit: "nanoseconds"}, {Type: WallRanType, Unit: "nanoseconds"}}
}

// Weighted returns the profile as weighted stacks of the measure (see
// MeasureInfos), one Group per thread. For "wall" and "cpu" (the CPU
// samples; "" is wall, cpu for a ManagedOnly profile) it has four sample
// types: "samples" (count), "wall" (every sample times the period), "cpu"
// (Managed samples times the period) and "wall_ran" (wall, 0 on the
// threads that waited the whole trace); measure is the default type, and
// the one the Groups' Runs follow: with cpu they skip External samples.
// With wall, pprof's default is wall_ran (PprofDefault) when some threads
// ran and others waited the whole trace, as BuildReport ranks then.
// The other measures are described at AllocStacks and eventWeighted.
func (p *Profile) Weighted(measure string) (*weighted.Profile, error) {
	if measure == "" {
		measure = MeasureWall
		if p.ManagedOnly {
			measure = MeasureCPU
		}
	}
	switch measure {
	case MeasureAlloc, MeasureContention, MeasureExceptions:
		return p.eventWeighted(measure), nil
	}
	types := cpuTypes()
	def := -1
	for i, t := range types {
		if t.Type == measure && i > 0 {
			def = i
		}
	}
	if def < 0 {
		_, err := LookupMeasure(measure)
		return nil, fmt.Errorf("profile: %w", err)
	}
	period := int64(p.Period)
	w := &weighted.Profile{Name: p.ProcessName, ProcessID: p.ProcessID, Start: p.Start, Duration: p.Duration,
		Types: types, Default: def, PeriodType: types[1], Period: period,
		Frames: p.Frames, Stacks: p.Stacks, Active: -1, Comments: p.Notes(), RunsPartial: p.TimelineTruncated}
	n, ran, waited := 0, false, false
	for _, t := range p.Threads {
		n += len(t.Samples)
		ran = ran || !t.Waiting
		waited = waited || t.Waiting
	}
	if measure == MeasureWall && ran && waited { // as BuildReport leaves the waiting threads out
		w.PprofDefault = WallRanType
	}
	// One allocation for every sample's values, one for the samples (each
	// group's slice capped at its own).
	nt := len(types)
	values := make([]int64, 0, nt*n)
	samples := make([]weighted.Sample, n)
	w.Groups = make([]weighted.Group, 0, len(p.Threads))
	for _, t := range p.Threads {
		g := weighted.Group{Name: "Thread " + strconv.FormatUint(t.ID, 10), ThreadID: t.ID, Work: t.Work(),
			Samples: samples[:len(t.Samples):len(t.Samples)]}
		samples = samples[len(t.Samples):]
		ranPeriod := period // wall_ran's weight of a sample
		if t.Waiting {
			ranPeriod = 0
		}
		for i, s := range t.Samples {
			values = append(values, s.Count(), s.Count()*period, s.Managed*period, s.Count()*ranPeriod)
			g.Samples[i] = weighted.Sample{Stack: s.Stack, Values: values[len(values)-nt : len(values) : len(values)]}
		}
		if t.Timeline.Samples() > 0 { // it has runs
			g.SetTimeline(&t.Timeline, measure == MeasureCPU)
		}
		w.Groups = append(w.Groups, g)
	}
	w.Active = w.Busiest()
	return w, nil
}
