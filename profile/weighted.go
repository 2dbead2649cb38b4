package profile

import (
	"fmt"
	"iter"
	"strconv"
	"time"
)

// ValueType says what the values of one sample type measure, as pprof's
// ValueType: Type ("wall", "cpu", "alloc_space", "samples") and Unit
// ("nanoseconds", "bytes", "count").
type ValueType struct {
	Type, Unit string
}

// Weighted is a profile as stacks with values: the model every export
// format writes (see Formats). It does not depend on where the stacks came
// from: a CPU profile gives one (Profile.Weighted), and so can a heap
// snapshot or an allocation, contention or exception profile, whose sample
// types are just other ValueTypes.
//
// A Weighted shares Frames, Stacks and the timelines with the Profile it
// came from; neither is modified by the exporters.
type Weighted struct {
	// Name is what was profiled, usually the application's name: pprof's
	// main mapping, speedscope's and Chromium's process name.
	Name      string
	ProcessID int
	Start     time.Time
	Duration  time.Duration
	// Types are the values of every Sample, in order. Default indexes the
	// one that single-valued formats (folded, speedscope, Chromium) weigh
	// stacks by and that pprof shows first, unless PprofDefault names
	// another.
	Types   []ValueType
	Default int
	// PprofDefault, when not empty, is the Type pprof shows first (its
	// DefaultSampleType) in place of Types[Default]: a CPU profile's
	// wall_ran, the wall time of the threads that ran, which is what
	// trace report ranks by default, while the other formats keep every
	// sample.
	PprofDefault string
	// PeriodType and Period describe the sampling (pprof's fields); Period
	// is also the weight of one sample of a Group's Runs, in
	// Types[Default]'s unit.
	PeriodType ValueType
	Period     int64
	Frames     []Frame
	Stacks     []Stack
	Groups     []Group
	// Active indexes the Group a viewer should open first (the thread that
	// did the most work), -1 for none.
	Active int
	// RunsPartial is set when the Groups' Runs stop before their Samples do
	// (Config.MaxTimelineRuns was reached): formats that can show either
	// (speedscope) then show the complete Samples.
	RunsPartial bool
	// RunsApart is set when each Run is an event of its own (a lock wait),
	// not a stretch of samples: the formats that draw time end a run's
	// frames before the next run, even one of the same stack that starts
	// when it ends (two waits would otherwise show as one).
	RunsApart bool
	// Comments are notes for whoever reads the profile (pprof comments).
	Comments []string
}

// Group is a part of a Weighted profile, usually one thread.
type Group struct {
	// Name is how viewers title the group ("Thread 1234").
	Name string
	// ThreadID is the OS thread id, exported as pprof's numeric label
	// "thread"; 0 for a group that is not a thread.
	ThreadID uint64
	// Samples has one entry per distinct stack of the group.
	Samples []Sample
	// Runs, when not nil, yields the group's samples in time order, each
	// run weighing Count × Period; formats that draw time (Chromium,
	// speedscope) need it. The Groups of Profile.Weighted also hold the
	// Timeline their Runs iterate, and the exporters read it directly: to
	// give one of them other runs, build a new Group rather than setting
	// Runs (setting Runs to nil is fine).
	Runs iter.Seq[Run]
	// Work ranks groups for Active: higher means busier.
	Work int64

	// timeline is the Timeline that Runs iterates (its Managed runs only
	// with managedRuns), nil when Runs is another sequence.
	timeline    *Timeline
	managedRuns bool
}

// runList is a group's runs as the exporters read them: a timeline's
// chunks in place (only the runs of Managed samples with managed), or the
// runs of a group without a timeline, collected. The exporters loop over
// either directly (a loop over a chunk costs a few instructions a run, a
// call per run several times that).
type runList struct {
	// tl is the timeline whose chunks these are, nil for runs.
	tl     *Timeline
	chunks [][]timelineWord
	// stacks maps the stacks of chunks' runs to Stacks (Timeline.stacks).
	stacks  []int
	managed bool
	runs    []Run
	// samples counts the samples of chunks when they are a whole
	// timeline's (not managed), -1 otherwise.
	samples int64
}

// runList returns the group's runs. Those of a group without a Timeline
// are collected into *scratch first.
func (g *Group) runList(scratch *[]Run) runList {
	if g.timeline != nil {
		l := runList{tl: g.timeline, chunks: g.timeline.chunks, stacks: g.timeline.stacks, managed: g.managedRuns, samples: -1}
		if !l.managed {
			l.samples = g.timeline.samples
		}
		return l
	}
	runs := (*scratch)[:0]
	for r := range g.Runs {
		runs = append(runs, r)
	}
	*scratch = runs
	return runList{runs: runs, samples: -1}
}

// skip reports whether the list leaves out a run of stackKind sk (see
// runAt): a run of External samples of a list of Managed runs.
func (l *runList) skip(sk uint32) bool { return l.managed && sk&1 == 0 }

// Sample is the values (one per Weighted.Types) of one stack.
type Sample struct {
	Stack  int
	Values []int64
}

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
func cpuTypes() []ValueType {
	return []ValueType{{"samples", "count"}, {MeasureWall, "nanoseconds"}, {MeasureCPU, "nanoseconds"}, {WallRanType, "nanoseconds"}}
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
func (p *Profile) Weighted(measure string) (*Weighted, error) {
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
	w := &Weighted{Name: p.ProcessName, ProcessID: p.ProcessID, Start: p.Start, Duration: p.Duration,
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
	samples := make([]Sample, n)
	w.Groups = make([]Group, 0, len(p.Threads))
	for _, t := range p.Threads {
		g := Group{Name: "Thread " + strconv.FormatUint(t.ID, 10), ThreadID: t.ID, Work: t.Work(),
			Samples: samples[:len(t.Samples):len(t.Samples)]}
		samples = samples[len(t.Samples):]
		ranPeriod := period // wall_ran's weight of a sample
		if t.Waiting {
			ranPeriod = 0
		}
		for i, s := range t.Samples {
			values = append(values, s.Count(), s.Count()*period, s.Managed*period, s.Count()*ranPeriod)
			g.Samples[i] = Sample{Stack: s.Stack, Values: values[len(values)-nt : len(values) : len(values)]}
		}
		if t.Timeline.samples > 0 { // it has runs
			g.Runs, g.timeline = t.Timeline.All(), &t.Timeline
			if measure == MeasureCPU {
				g.Runs, g.managedRuns = t.Timeline.managed(), true
			}
		}
		w.Groups = append(w.Groups, g)
	}
	w.Active = w.busiest()
	return w, nil
}

// busiest returns the index of the group with the most work (ties: the
// most samples of the default type, then the first), -1 without groups.
func (w *Weighted) busiest() int {
	best, bestWork, bestTotal := -1, int64(0), int64(0)
	for i, g := range w.Groups {
		var total int64
		for _, s := range g.Samples {
			total += s.Values[w.Default]
		}
		if best < 0 || g.Work > bestWork || (g.Work == bestWork && total > bestTotal) {
			best, bestWork, bestTotal = i, g.Work, total
		}
	}
	return best
}

// merged sums the default values of every group by stack: sums[stack].
func (w *Weighted) merged() []int64 {
	sums := make([]int64, len(w.Stacks))
	for _, g := range w.Groups {
		for _, s := range g.Samples {
			sums[s.Stack] += s.Values[w.Default]
		}
	}
	return sums
}

// managed yields the runs of Managed samples.
func (tl *Timeline) managed() iter.Seq[Run] {
	return func(yield func(Run) bool) {
		var ticks int64
		for _, c := range tl.chunks {
			for i := 0; i < len(c); i++ {
				sk, count, delta, last := runAt(c, i)
				i = last
				ticks += delta
				if sk&1 != 0 && !yield(runOf(tl.stacks, sk, count, tl.startOf(ticks))) {
					return
				}
			}
		}
	}
}
