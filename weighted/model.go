package weighted

import (
	"iter"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/timeline"
)

// ValueType says what the values of one sample type measure, as pprof's
// ValueType: Type ("wall", "cpu", "alloc_space", "samples") and Unit
// ("nanoseconds", "bytes", "count").
type ValueType struct {
	Type, Unit string
}

// Profile is a profile as stacks with values: the model every export
// format writes (see Formats). It does not depend on where the stacks came
// from: a CPU profile gives one (profile.Profile.Weighted), and so can a heap
// snapshot or an allocation, contention or exception profile, whose sample
// types are just other ValueTypes.
//
// A Profile shares Frames, Stacks and the timelines with the Profile it
// came from; neither is modified by the exporters.
type Profile struct {
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

// Group is a part of a Profile profile, usually one thread.
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
	// speedscope) need it. A Group given a Timeline (SetTimeline) also
	// holds the Timeline its Runs iterate, and the exporters read it
	// directly: to give one of them other runs, build a new Group rather
	// than setting Runs (setting Runs to nil is fine).
	Runs iter.Seq[Run]
	// Work ranks groups for Active: higher means busier.
	Work int64

	// timeline is the Timeline that Runs iterates (its Managed runs only
	// with managedRuns), nil when Runs is another sequence.
	timeline    *Timeline
	managedRuns bool
}

// SetTimeline sets the group's Runs to tl's runs, only those of Managed
// samples with managedOnly, and lets the exporters read tl in place. tl
// must outlive the group and not change.
func (g *Group) SetTimeline(tl *Timeline, managedOnly bool) {
	g.timeline, g.managedRuns = tl, managedOnly
	g.Runs = tl.All()
	if managedOnly {
		g.Runs = tl.managed()
	}
}

// runList is a group's runs as the exporters read them: a timeline's
// chunks in place (only the runs of Managed samples with managed), or the
// runs of a group without a timeline, collected. The exporters loop over
// either directly (a loop over a chunk costs a few instructions a run, a
// call per run several times that).
type runList struct {
	// tl is the timeline whose chunks these are, nil for runs.
	tl     *timeline.Data
	chunks [][]timeline.Word
	// stacks maps the stacks of chunks' runs to Stacks (timeline.Data.Stacks).
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
		l := runList{tl: &g.timeline.d, chunks: g.timeline.d.Chunks, stacks: g.timeline.d.Stacks, managed: g.managedRuns, samples: -1}
		if !l.managed {
			l.samples = g.timeline.d.Samples
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
// timeline.RunAt): a run of External samples of a list of Managed runs.
func (l *runList) skip(sk uint32) bool { return l.managed && sk&1 == 0 }

// Sample is the values (one per Profile.Types) of one stack.
type Sample struct {
	Stack  int
	Values []int64
}

// SampleKind is whether a sample found the thread in managed code.
type SampleKind = clrevents.SampleKind

// Frame is one frame: a resolved managed method, or an address that no
// method range covered.
type Frame struct {
	// Name is Namespace.Type.Method for a resolved frame and the address
	// in hex ("0x7f3a12345678") for an unresolved one.
	Name      string
	Module    string
	Signature string
	Resolved  bool
	// Address is the method's start address (resolved) or the frame's
	// address (unresolved).
	Address uint64
}

// String is Module!Name, or Name without a module.
func (f Frame) String() string {
	if f.Module == "" {
		return f.Name
	}
	return f.Module + "!" + f.Name
}

// Stack is a list of Frames indexes, leaf first. An empty stack means the
// sampled thread had no managed frames. The stacks of a Profile are
// distinct as lists of frames: two raw stacks whose return addresses differ
// but resolve to the same methods are one Stack.
type Stack struct {
	Frames []int
}

// Run is a span of consecutive samples of a thread with the same stack and
// kind. Start is the offset from Profile.Start of its first sample.
type Run struct {
	Stack int
	Kind  SampleKind
	Start time.Duration
	Count int64
}

// Timeline is a thread's samples in time order as Runs. It is stored
// compactly (8 bytes for most runs, 16 for the others, in chunks that are
// never copied as it grows; see internal/timeline); All yields the runs.
type Timeline struct {
	d timeline.Data
}

// TimelineOf returns the Timeline of d, for the profile builder that wrote
// it (internal/timeline is the encoding both packages share).
func TimelineOf(d timeline.Data) Timeline { return Timeline{d: d} }

// Samples is the number of samples of the runs.
func (tl *Timeline) Samples() int64 { return tl.d.Samples }

// Len is the number of runs.
func (tl *Timeline) Len() int {
	n, _ := timeline.Count(tl.d.Chunks)
	return n
}

// All yields the runs in time order.
func (tl *Timeline) All() iter.Seq[Run] {
	return func(yield func(Run) bool) {
		var ticks int64
		for _, c := range tl.d.Chunks {
			for i := 0; i < len(c); i++ {
				sk, count, delta, last := timeline.RunAt(c, i)
				i = last
				ticks += delta
				if !yield(runOf(tl.d.Stacks, sk, count, tl.d.StartOf(ticks))) {
					return
				}
			}
		}
	}
}

// runOf is the Run of a decoded run, its stack mapped by stacks.
func runOf(stacks []int, sk, count uint32, start time.Duration) Run {
	kind := clrevents.SampleExternal
	if sk&1 != 0 {
		kind = clrevents.SampleManaged
	}
	return Run{Stack: stacks[sk>>1], Kind: kind, Start: start, Count: int64(count)}
}

// Busiest returns the index of the group with the most work (ties: the
// most samples of the default type, then the first), -1 without groups.
func (w *Profile) Busiest() int {
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
func (w *Profile) merged() []int64 {
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
		for _, c := range tl.d.Chunks {
			for i := 0; i < len(c); i++ {
				sk, count, delta, last := timeline.RunAt(c, i)
				i = last
				ticks += delta
				if sk&1 != 0 && !yield(runOf(tl.d.Stacks, sk, count, tl.d.StartOf(ticks))) {
					return
				}
			}
		}
	}
}
