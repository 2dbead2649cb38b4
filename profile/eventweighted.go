package profile

import (
	"fmt"
	"iter"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/weighted"
)

// AllocTickBytes is about how many bytes the runtime allocates (per heap
// kind: small, large and pinned objects count separately, and per heap with
// Server GC) between two GCAllocationTick events: the period of an
// allocation profile.
const AllocTickBytes = 100 * 1024

// Events returns what the measure weighs: its events (samples for wall and
// cpu) and their total value in the measure's unit.
func (p *Profile) Events(measure string) (count, value int64) {
	switch measure {
	case MeasureAlloc:
		return p.AllocStacks.Count, p.AllocStacks.Value
	case MeasureContention:
		return p.ContentionStacks.Count, p.ContentionStacks.Value
	case MeasureExceptions:
		return p.ExceptionStacks.Count, p.ExceptionStacks.Value
	}
	for _, t := range p.Threads {
		count += t.Managed + t.External
		if measure == MeasureCPU {
			value += t.Managed
		} else {
			value += t.Managed + t.External
		}
	}
	return count, value * int64(p.Period)
}

// Check returns a *NoEventsError when the trace has none of the events
// the measure weighs (an unknown measure is an error too).
func (p *Profile) Check(measure string) error {
	if measure == "" {
		measure = MeasureWall
	}
	m, err := LookupMeasure(measure)
	if err != nil {
		return err
	}
	if n, _ := p.Events(m.Name); n == 0 {
		return &NoEventsError{Measure: m}
	}
	return nil
}

// NotesFor are the notes of the profile of a measure (Notes for wall and
// cpu): what a reader should know before trusting it.
func (p *Profile) NotesFor(measure string) []string {
	if measure == MeasureWall || measure == MeasureCPU {
		return p.Notes() // without building the table of measures
	}
	m, err := LookupMeasure(measure)
	if err != nil || m.Name == MeasureWall || m.Name == MeasureCPU {
		return p.Notes()
	}
	var notes []string
	count, _ := p.Events(m.Name)
	if count == 0 {
		notes = append(notes, (&NoEventsError{Measure: m}).Error())
	}
	switch m.Name {
	case MeasureAlloc:
		if count > 0 && !p.Allocs.ObjectsKnown() {
			notes = append(notes, "alloc_objects is not estimated: GCAllocationTick before version 4 (.NET 5) does not "+
				"report object sizes, and a tick stands for ~100 KiB of allocation, not one object")
		}
		if count > 0 && count < 100 {
			notes = append(notes, fmt.Sprintf("only %d allocation ticks (one per ~100 KiB allocated): the split between "+
				"types and stacks is a rough estimate", count))
		}
	case MeasureContention:
		c := p.Contention
		if c.Unfinished > 0 {
			notes = append(notes, fmt.Sprintf("%d lock waits had not ended when the trace ended: they count up to its end (%s in all)",
				c.Unfinished, c.UnfinishedTotal.Round(time.Microsecond)))
		}
		if c.StopsWithoutStart > 0 {
			notes = append(notes, fmt.Sprintf("%d lock waits began before the trace and are left out (their "+
				"ContentionStop, version 0, does not say how long the wait was)", c.StopsWithoutStart))
		}
	}
	return append(notes, p.commonNotes(m.Noun)...)
}

// eventWeighted returns the Weighted profile of an event measure, one
// Group per thread, each event's stack extended by its leaf (the allocated
// or thrown type) as a frame of its own (named by the type, no module):
//
//   - alloc: sample types "samples" (ticks, count), "alloc_objects" (count,
//     only when every tick reports the size of its object: the tick's
//     AllocationAmount divided by that size, summed) and "alloc_space"
//     (bytes: the ticks' AllocationAmount), the default; period
//     AllocTickBytes of "space".
//   - contention: "contentions" (waits, count) and "delay" (nanoseconds),
//     the default, as Go's mutex profiles; with the waits recorded
//     (Config.Timeline) each thread's Runs are its waits in time order,
//     Count nanoseconds long at period 1.
//   - exceptions: "exceptions" (count).
func (p *Profile) eventWeighted(measure string) *weighted.Profile {
	var (
		es     *EventStacks
		types  []weighted.ValueType
		def    int
		period = weighted.ValueType{Type: "exceptions", Unit: "count"}
		every  = int64(1)
	)
	objects := false
	switch measure {
	case MeasureAlloc:
		es = &p.AllocStacks
		types = []weighted.ValueType{{Type: "samples", Unit: "count"}}
		if objects = p.Allocs.ObjectsKnown(); objects {
			types = append(types, weighted.ValueType{Type: "alloc_objects", Unit: "count"})
		}
		types = append(types, weighted.ValueType{Type: "alloc_space", Unit: "bytes"})
		def = len(types) - 1
		period, every = weighted.ValueType{Type: "space", Unit: "bytes"}, AllocTickBytes
	case MeasureContention:
		es = &p.ContentionStacks
		types = []weighted.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}}
		def = 1
		period = weighted.ValueType{Type: "contentions", Unit: "count"}
	default:
		es = &p.ExceptionStacks
		types = []weighted.ValueType{{Type: "exceptions", Unit: "count"}}
	}
	w := &weighted.Profile{RunsPartial: p.TimelineTruncated, Name: p.ProcessName, ProcessID: p.ProcessID, Start: p.Start, Duration: p.Duration,
		Types: types, Default: def, PeriodType: period, Period: every, Active: -1,
		Comments:  append(p.NotesFor(measure), eventComments(measure, objects)...),
		RunsApart: measure == MeasureContention}

	// The frames and stacks of the profile, then the leaves and the stacks
	// that end in them (copies: the Profile is not modified).
	n := len(p.Frames)
	w.Frames = make([]weighted.Frame, n, n+len(es.Leaves))
	copy(w.Frames, p.Frames)
	for _, l := range es.Leaves {
		w.Frames = append(w.Frames, weighted.Frame{Name: l})
	}
	w.Stacks = p.Stacks[:len(p.Stacks):len(p.Stacks)]
	leafStack := make(map[[2]int]int)
	stackOf := func(s EventSample) int {
		if s.Leaf < 0 {
			return s.Stack
		}
		k := [2]int{s.Stack, s.Leaf}
		st, ok := leafStack[k]
		if !ok {
			frames := make([]int, 0, len(p.Stacks[s.Stack].Frames)+1)
			frames = append(append(frames, n+s.Leaf), p.Stacks[s.Stack].Frames...)
			st = len(w.Stacks)
			w.Stacks = append(w.Stacks, weighted.Stack{Frames: frames})
			leafStack[k] = st
		}
		return st
	}

	nv := len(types)
	values := make([]int64, 0, nv*len(es.Samples))
	for i := 0; i < len(es.Samples); {
		th := es.Samples[i].Thread
		g := weighted.Group{Name: fmt.Sprintf("Thread %d", th), ThreadID: th}
		for ; i < len(es.Samples) && es.Samples[i].Thread == th; i++ {
			s := es.Samples[i]
			switch measure {
			case MeasureAlloc:
				values = append(values, s.Count)
				if objects {
					values = append(values, s.Objects)
				}
				values = append(values, s.Value)
			case MeasureContention:
				values = append(values, s.Count, s.Value)
			default:
				values = append(values, s.Count)
			}
			g.Samples = append(g.Samples, weighted.Sample{Stack: stackOf(s), Values: values[len(values)-nv : len(values) : len(values)]})
			g.Work += s.Value
		}
		if measure == MeasureContention {
			for _, tw := range p.Waits {
				if tw.Thread == th {
					g.Runs = waitRuns(tw.Waits)
				}
			}
		}
		w.Groups = append(w.Groups, g)
	}
	w.Active = w.Busiest()
	return w
}

// waitRuns yields lock waits as Runs of Count nanoseconds.
func waitRuns(waits []Wait) iter.Seq[weighted.Run] {
	return func(yield func(weighted.Run) bool) {
		for _, wt := range waits {
			if !yield(weighted.Run{Stack: wt.Stack, Kind: clrevents.SampleExternal, Start: wt.Start, Count: int64(wt.Duration)}) {
				return
			}
		}
	}
}

// eventComments say how an event measure was computed, for the pprof
// comments.
func eventComments(measure string, objects bool) []string {
	switch measure {
	case MeasureAlloc:
		c := []string{"alloc_space: each GCAllocationTick (raised about every 100 KiB allocated, per heap kind) weighs " +
			"the bytes allocated since the previous tick (AllocationAmount), attributed to the type and stack of the " +
			"allocation that triggered it; samples counts the ticks"}
		if objects {
			c = append(c, "alloc_objects: each tick's AllocationAmount divided by the size of the object that "+
				"triggered it (an estimate: the bytes are taken to be objects of that size)")
		}
		return c
	case MeasureContention:
		return []string{"delay: the time from each ContentionStart to the thread's ContentionStop (or its " +
			"DurationNs, version 1), on the stack of the ContentionStart; contentions counts the waits"}
	}
	return []string{"exceptions: the ExceptionThrown events, on the throwing stack, with the exception type as the leaf frame"}
}
