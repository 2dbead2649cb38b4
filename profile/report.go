package profile

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/weighted"
)

// ReportConfig tunes BuildReport. The zero value lists the top 20 methods,
// sites and types.
type ReportConfig struct {
	// Top is how many methods, exception types, sites and allocated types
	// to list (default 20).
	Top int
	// Inclusive orders the method table by inclusive time (default:
	// exclusive time).
	Inclusive bool
	// Measure is what the method table weighs (see MeasureInfos):
	// MeasureWall (default, every sample), MeasureCPU (Managed samples
	// only), or the bytes, wait time or count of allocation ticks, lock
	// waits or exceptions.
	Measure string
	// IncludeWaiting ranks the methods of wall time over every thread.
	// By default the threads that waited the whole trace (Thread.Waiting)
	// are left out of the wall-time ranking and listed on their own
	// (Report.Waiting), unless no thread ran: a method that only ever
	// appears on such threads is time blocked, and must not rank above
	// work that ran. The other measures rank every thread.
	IncludeWaiting bool
}

// Report is what a profile says, ready to print or to encode as JSON.
// Durations are in nanoseconds in JSON.
type Report struct {
	ProcessID   int    `json:"process_id"`
	ProcessName string `json:"process_name,omitempty"`
	// Runtime is the .NET version the trace came from ("3.1.2"), or
	// "unknown"; RuntimeBuild the CLR's own version from
	// RuntimeInformation ("4.0.30319.0" on .NET Core 3.x).
	Runtime      string        `json:"runtime"`
	RuntimeBuild string        `json:"runtime_build,omitempty"`
	CommandLine  string        `json:"command_line,omitempty"`
	Start        time.Time     `json:"start"`
	Duration     time.Duration `json:"duration_ns"`
	Period       time.Duration `json:"sampling_period_ns"`
	Samples      int64         `json:"samples"`
	Managed      int64         `json:"managed_samples"`
	External     int64         `json:"external_samples"`
	ManagedOnly  bool          `json:"managed_only"`
	// DroppedEvents is what the runtime could not write (buffers full).
	DroppedEvents uint64      `json:"dropped_events"`
	Symbols       SymbolStats `json:"symbols"`
	// Measure is what Methods weighs: "wall" (every sample), "cpu"
	// (Managed samples only), "alloc" (allocated bytes), "contention" (lock
	// wait time) or "exceptions" (count), in Unit ("nanoseconds", "bytes",
	// "count"); Inclusive is set when Methods is ordered by inclusive
	// value.
	Measure   string `json:"measure"`
	Unit      string `json:"unit"`
	Inclusive bool   `json:"ordered_by_inclusive"`
	// Methods is ordered by exclusive time, or by inclusive time with
	// ReportConfig.Inclusive, in the Measure; at equal values, work that
	// ran comes before methods of threads that only waited.
	Methods []MethodTime `json:"methods"`
	// WaitingLeftOut is set when Methods leaves out the samples of the
	// threads that waited the whole trace (wall time without
	// ReportConfig.IncludeWaiting, when some thread ran): its percentages
	// are then shares of the samples of the threads that ran. Waiting
	// lists where those threads waited, most time first (empty
	// otherwise).
	WaitingLeftOut bool              `json:"waiting_left_out"`
	Waiting        []WaitingSite     `json:"waiting_whole_trace"`
	Threads        []ThreadTotal     `json:"threads"`
	GC             GCReport          `json:"gc"`
	Exceptions     []ExceptionReport `json:"exceptions"`
	Contention     ContentionReport  `json:"contention"`
	DecodeErrors   int               `json:"decode_errors,omitempty"`
	// Notes are what to know before trusting the numbers (Profile.Notes).
	Notes []string `json:"notes"`
}

// MethodTime is what a method weighs in the report's Measure (exclusive:
// as the leaf method of a stack; inclusive: anywhere on the stack, counted
// once per stack). ExclusiveValue and InclusiveValue are in the report's
// Unit; Exclusive and Inclusive are the same as durations for the measures
// of time (wall, cpu, contention), 0 for the others.
type MethodTime struct {
	Method         string        `json:"method"`
	Module         string        `json:"module,omitempty"`
	Resolved       bool          `json:"resolved"`
	Exclusive      time.Duration `json:"exclusive_ns"`
	Inclusive      time.Duration `json:"inclusive_ns"`
	ExclusiveValue int64         `json:"exclusive_value"`
	InclusiveValue int64         `json:"inclusive_value"`
	ExclusivePct   float64       `json:"exclusive_pct"`
	InclusivePct   float64       `json:"inclusive_pct"`
	// ManagedPct is the share of the method's exclusive samples that were
	// Managed (running managed code); -1 when it has none.
	ManagedPct float64 `json:"managed_pct"`
	// Waiting is set when at least 90% of the method's exclusive samples
	// (of its inclusive ones when it has no exclusive sample) come from
	// threads that waited the whole trace (Thread.Waiting): its time is
	// time blocked there, not CPU time.
	Waiting bool `json:"waiting,omitempty"`
}

// ThreadTotal is the sampled time of one thread.
type ThreadTotal struct {
	ID       uint64        `json:"id"`
	Managed  int64         `json:"managed_samples"`
	External int64         `json:"external_samples"`
	Time     time.Duration `json:"time_ns"`
	// ManagedPct is the share of the thread's samples in managed code.
	ManagedPct   float64 `json:"managed_pct"`
	StackChanges int64   `json:"stack_changes"`
	// Waiting is Thread.Waiting; WaitingIn the leaf of its stack then.
	Waiting   bool   `json:"waiting,omitempty"`
	WaitingIn string `json:"waiting_in,omitempty"`
}

// WaitingSite is where threads that waited the whole trace waited: the
// leaf method of their stack (ThreadTotal.WaitingIn), how many threads,
// and their sampled time.
type WaitingSite struct {
	Method  string        `json:"waiting_in"`
	Threads int           `json:"threads"`
	Time    time.Duration `json:"time_ns"`
}

// GCReport summarises garbage collection.
type GCReport struct {
	Collections          [3]int64         `json:"collections_by_generation"`
	Reasons              map[string]int64 `json:"reasons"`
	Pauses               int64            `json:"pauses"`
	PauseTotal           time.Duration    `json:"pause_total_ns"`
	PauseMax             time.Duration    `json:"pause_max_ns"`
	PauseMean            time.Duration    `json:"pause_mean_ns"`
	OtherSuspensions     int64            `json:"other_suspensions"`
	OtherSuspensionTotal time.Duration    `json:"other_suspension_total_ns"`
	Allocations          []TypeAllocation `json:"allocations_by_type"`
}

// ExceptionReport is one exception type.
type ExceptionReport struct {
	Type  string       `json:"type"`
	Count int64        `json:"count"`
	Sites []SiteReport `json:"throw_sites"`
}

// SiteReport is a code location (Module!Method) and a count.
type SiteReport struct {
	Site  string `json:"site"`
	Count int64  `json:"count"`
}

// ContentionReport summarises lock contention.
type ContentionReport struct {
	Count int64         `json:"count"`
	Total time.Duration `json:"total_ns"`
	Max   time.Duration `json:"max_ns"`
	// Unfinished waits had not ended when the trace ended (counted up to
	// its end); StopsWithoutStart began before it and are not counted.
	Unfinished        int64        `json:"unfinished"`
	StopsWithoutStart int64        `json:"stops_without_start,omitempty"`
	Sites             []SiteReport `json:"sites"`
}

// BuildReport computes the report of a profile.
func BuildReport(p *Profile, cfg ReportConfig) *Report {
	top := cfg.Top
	if top <= 0 {
		top = 20
	}
	measure := cfg.Measure
	if measure == "" {
		measure = MeasureWall
	}
	r := newReport(p, measure, cfg.Inclusive)
	tally := r.tallyThreads(p, measure, cfg.IncludeWaiting)
	tally.addInclusive(p)
	r.Samples = r.Managed + r.External
	slices.SortFunc(r.Threads, func(a, b ThreadTotal) int { // thread ids are distinct: one order
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(r.Waiting, func(a, b WaitingSite) int { // the methods are distinct: one order
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(b.Threads, a.Threads), cmp.Compare(a.Method, b.Method))
	})
	r.Waiting = r.Waiting[:min(top, len(r.Waiting))]
	if r.Waiting == nil {
		r.Waiting = []WaitingSite{}
	}
	r.rankMethods(p, tally, top)
	r.addRuntimeEvents(p, top)
	if r.Methods == nil {
		r.Methods = []MethodTime{}
	}
	if r.Threads == nil {
		r.Threads = []ThreadTotal{}
	}
	return r
}

// newReport returns the report of p's summary: the process, the trace and
// the notes for measure.
func newReport(p *Profile, measure string, inclusive bool) *Report {
	r := &Report{ProcessID: p.ProcessID, ProcessName: p.ProcessName, Runtime: p.RuntimeVersion, CommandLine: p.CommandLine,
		Start: p.Start, Duration: p.Duration, Period: p.Period, ManagedOnly: p.ManagedOnly, DroppedEvents: p.DroppedEvents,
		Symbols: p.Symbols, DecodeErrors: p.DecodeErrors, Measure: measure, Unit: "nanoseconds", Inclusive: inclusive,
		Notes: p.NotesFor(measure)}
	if r.Runtime == "" {
		r.Runtime = "unknown"
	}
	if p.Runtime != nil {
		r.RuntimeBuild = p.Runtime.VMVersion()
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	return r
}

// reportFrame is what a report counts of a frame: the inclusive samples
// of the measure, the exclusive samples (all, those that were Managed,
// those on waiting threads; frameTally.excl picks the measure's) and the
// last stack (index + 1) that counted the frame inclusively.
type reportFrame struct {
	incl, exclManaged, exclAll, exclWaiting int64
	seen                                    int
}

// frameTally is what a report counts of the samples of the threads it
// ranks. Per frame, byFrame[f+1] (byFrame[0] is the empty stack's).
// byStack holds the samples of the measure per stack, over all threads:
// the frames of a stack are then counted inclusively once, not once for
// every thread sampled on it. When waiting threads are ranked,
// byStackWaiting and inclWaiting[f+1] are the same for their samples
// only. measured is the samples of the measure; events and cpu say
// which measure it is (events: the methods weigh other events, nothing
// is counted).
type frameTally struct {
	byFrame                              []reportFrame
	byStack, byStackWaiting, inclWaiting []int64
	measured                             int64
	events, cpu                          bool
}

// excl is a frame's exclusive samples of the measure.
func (t *frameTally) excl(a *reportFrame) int64 {
	if t.cpu {
		return a.exclManaged
	}
	return a.exclAll
}

// tallyThreads fills the report's threads (and, when the waiting threads
// are left out of the ranking, the places they waited) and counts the
// samples of the others by frame and stack.
func (r *Report) tallyThreads(p *Profile, measure string, includeWaiting bool) *frameTally {
	tally := &frameTally{events: isEventMeasure(measure), cpu: measure == MeasureCPU}
	events, cpu := tally.events, tally.cpu
	// Wall time leaves out the threads that waited the whole trace, unless
	// asked to rank them or none ran.
	ran, waited := 0, 0
	for _, t := range p.Threads {
		if t.Waiting {
			waited++
		} else {
			ran++
		}
	}
	r.WaitingLeftOut = measure == MeasureWall && !includeWaiting && ran > 0 && waited > 0
	if !events && len(p.Threads) > 0 { // without threads, no sample
		tally.byFrame = make([]reportFrame, len(p.Frames)+1)
		tally.byStack = make([]int64, len(p.Stacks))
		if waited > 0 && !r.WaitingLeftOut {
			tally.byStackWaiting = make([]int64, len(p.Stacks))
			tally.inclWaiting = make([]int64, len(p.Frames)+1)
		}
	}
	var waitSites map[string]int // index in r.Waiting
	for _, t := range p.Threads {
		r.Managed += t.Managed
		r.External += t.External
		tt := ThreadTotal{ID: t.ID, Managed: t.Managed, External: t.External, Time: t.Total(p.Period),
			StackChanges: t.StackChanges, Waiting: t.Waiting}
		if n := t.Managed + t.External; n > 0 {
			tt.ManagedPct = 100 * float64(t.Managed) / float64(n)
		}
		if t.Waiting && len(t.Samples) > 0 {
			tt.WaitingIn = weighted.NoFrames
			if fr := p.Stacks[t.Samples[0].Stack].Frames; len(fr) > 0 {
				tt.WaitingIn = p.Frames[fr[0]].String()
			}
		}
		r.Threads = append(r.Threads, tt)
		if events {
			continue // the methods weigh other events
		}
		if t.Waiting && r.WaitingLeftOut {
			if waitSites == nil {
				waitSites = map[string]int{}
			}
			i, ok := waitSites[tt.WaitingIn]
			if !ok {
				i = len(r.Waiting)
				waitSites[tt.WaitingIn] = i
				r.Waiting = append(r.Waiting, WaitingSite{Method: tt.WaitingIn})
			}
			r.Waiting[i].Threads++
			r.Waiting[i].Time += tt.Time
			continue // listed apart, not ranked
		}
		for _, s := range t.Samples {
			n := s.Count()
			if cpu {
				n = s.Managed
			}
			tally.measured += n
			frames := p.Stacks[s.Stack].Frames
			leaf := -1
			if len(frames) > 0 {
				leaf = frames[0]
			}
			a := &tally.byFrame[leaf+1]
			a.exclAll += s.Count()
			a.exclManaged += s.Managed
			tally.byStack[s.Stack] += n
			if t.Waiting {
				a.exclWaiting += s.Count()
				tally.byStackWaiting[s.Stack] += n
			}
		}
	}
	return tally
}

// addInclusive counts the frames of each stack inclusively, once a stack.
func (t *frameTally) addInclusive(p *Profile) {
	byFrame, inclWaiting := t.byFrame, t.inclWaiting
	for st, n := range t.byStack {
		frames := p.Stacks[st].Frames
		if n == 0 {
			continue
		}
		var nw int64
		if t.byStackWaiting != nil {
			nw = t.byStackWaiting[st]
		}
		if len(frames) == 0 {
			byFrame[0].incl += n
			if nw != 0 {
				inclWaiting[0] += nw
			}
			continue
		}
		for _, f := range frames {
			if a := &byFrame[f+1]; a.seen != st+1 {
				a.seen = st + 1
				a.incl += n
				if nw != 0 {
					inclWaiting[f+1] += nw
				}
			}
		}
	}
}

// rankMethods fills the report's Methods, the top ones by the measure.
func (r *Report) rankMethods(p *Profile, t *frameTally, top int) {
	measure, events, byFrame, inclWaiting := r.Measure, t.events, t.byFrame, t.inclWaiting
	pct := func(n int64) float64 {
		if t.measured == 0 {
			return 0
		}
		return 100 * float64(n) / float64(t.measured)
	}
	// The methods are ranked as small values (frame and key), and only the
	// top ones become MethodTimes.
	var ranked []methodRank
	if events {
		ranked = p.eventMethods(measure)
		r.Unit = eventUnit(measure)
	} else {
		n := 0
		for i := range byFrame {
			if byFrame[i].incl != 0 {
				n++
			}
		}
		ranked = make([]methodRank, 0, n)
		d := int64(p.Period)
		for i := range byFrame {
			if a := &byFrame[i]; a.incl != 0 {
				// Waiting: (nearly) only ever on threads that waited
				// the whole trace; such a method ranks after work that
				// ran of the same value.
				mr := methodRank{frame: int32(i - 1), excl: t.excl(a) * d, incl: a.incl * d}
				mr.waiting = inclWaiting != nil && inclWaiting[i]*10 >= a.incl*9
				ranked = append(ranked, mr)
			}
		}
	}
	ranked = methodRanking{ranked: ranked, frames: p.Frames, inclusive: r.Inclusive}.top(top)
	r.Methods = make([]MethodTime, 0, len(ranked))
	for _, mr := range ranked {
		f := int(mr.frame)
		var m MethodTime
		if events {
			m = p.eventMethod(measure, mr)
		} else {
			a := &byFrame[f+1]
			m = MethodTime{Method: weighted.NoFrames, Exclusive: time.Duration(t.excl(a)) * p.Period,
				Inclusive: time.Duration(a.incl) * p.Period, ExclusivePct: pct(t.excl(a)), InclusivePct: pct(a.incl), ManagedPct: -1}
			m.ExclusiveValue, m.InclusiveValue = int64(m.Exclusive), int64(m.Inclusive)
			m.Waiting = mr.waiting // no exclusive sample: by its inclusive ones
			if a.exclAll > 0 {
				m.ManagedPct = 100 * float64(a.exclManaged) / float64(a.exclAll)
				m.Waiting = a.exclWaiting*10 >= a.exclAll*9
			}
		}
		if f >= 0 {
			m.Method, m.Module, m.Resolved = p.Frames[f].Name, p.Frames[f].Module, p.Frames[f].Resolved
		}
		r.Methods = append(r.Methods, m)
	}
}

// addRuntimeEvents fills the report's collections, exceptions and lock
// contention.
func (r *Report) addRuntimeEvents(p *Profile, top int) {
	g := p.GC
	r.GC = GCReport{Collections: g.Collections, Reasons: g.Reasons, Pauses: g.Pauses, PauseTotal: g.PauseTotal,
		PauseMax: g.PauseMax, OtherSuspensions: g.OtherSuspensions, OtherSuspensionTotal: g.OtherSuspensionTotal,
		Allocations: g.Allocations[:min(top, len(g.Allocations))]}
	if g.Pauses > 0 {
		r.GC.PauseMean = g.PauseTotal / time.Duration(g.Pauses)
	}
	if r.GC.Reasons == nil {
		r.GC.Reasons = map[string]int64{}
	}
	if r.GC.Allocations == nil {
		r.GC.Allocations = []TypeAllocation{}
	}
	r.Exceptions = []ExceptionReport{}
	for _, x := range p.Exceptions[:min(top, len(p.Exceptions))] {
		r.Exceptions = append(r.Exceptions, ExceptionReport{Type: x.Type, Count: x.Count, Sites: p.siteReports(x.Sites, top)})
	}
	c := p.Contention
	r.Contention = ContentionReport{Count: c.Count, Total: c.Total, Max: c.Max, Unfinished: c.Unfinished,
		StopsWithoutStart: c.StopsWithoutStart, Sites: p.siteReports(c.Sites, top)}
}

// methodRank is what ranks a method of the report: its frame (-1 for the
// empty stack), its exclusive and inclusive values, and whether it was
// (nearly) only ever on threads that waited the whole trace.
type methodRank struct {
	frame      int32 // with waiting, 24 bytes
	waiting    bool
	excl, incl int64
}

// methodRanking orders methods by exclusive (or inclusive) value, most
// first, then work that ran before waiting, then by name and module.
type methodRanking struct {
	ranked    []methodRank
	frames    []weighted.Frame
	inclusive bool
}

func (m methodRanking) Len() int      { return len(m.ranked) }
func (m methodRanking) Swap(i, j int) { m.ranked[i], m.ranked[j] = m.ranked[j], m.ranked[i] }
func (m methodRanking) Less(i, j int) bool {
	a, b := &m.ranked[i], &m.ranked[j]
	if ka, kb := m.key(a), m.key(b); ka != kb {
		return ka > kb
	}
	if a.waiting != b.waiting {
		return b.waiting
	}
	na, ma := m.name(a.frame)
	nb, mb := m.name(b.frame)
	if na != nb {
		return na < nb
	}
	return ma < mb
}

// key is what ranks a method first: its exclusive or inclusive value.
func (m methodRanking) key(r *methodRank) int64 {
	if m.inclusive {
		return r.incl
	}
	return r.excl
}

// top returns the first n methods in ranking order. Only the methods whose
// key is at least the nth largest key are sorted (a trace has thousands of
// methods, the report lists 20), unless two of them are ranked equal (same
// value, waiting, name and module: overloads): which comes first then
// depends on the sort and on every method given to it, so all are sorted
// as before, and the report stays the same whatever the shortcut.
func (m methodRanking) top(n int) []methodRank {
	if n >= len(m.ranked) || len(m.ranked) <= 4*n {
		if len(m.ranked) > 1 { // sort.Sort would allocate m's interface anyway
			sort.Sort(m)
		}
		return m.ranked[:min(n, len(m.ranked))]
	}
	// The n largest keys in a min-heap: least[0] is the nth largest.
	least := make([]int64, 0, n)
	for i := range m.ranked {
		k := m.key(&m.ranked[i])
		switch {
		case len(least) < n:
			least = append(least, k)
			for j := len(least) - 1; j > 0 && least[(j-1)/2] > least[j]; j = (j - 1) / 2 {
				least[j], least[(j-1)/2] = least[(j-1)/2], least[j]
			}
		case k > least[0]:
			least[0] = k
			for j := 0; ; {
				c := 2*j + 1
				if c >= n {
					break
				}
				if c+1 < n && least[c+1] < least[c] {
					c++
				}
				if least[j] <= least[c] {
					break
				}
				least[j], least[c] = least[c], least[j]
				j = c
			}
		}
	}
	var cand []methodRank
	for i := range m.ranked {
		if m.key(&m.ranked[i]) >= least[0] {
			cand = append(cand, m.ranked[i])
		}
	}
	c := methodRanking{ranked: cand, frames: m.frames, inclusive: m.inclusive}
	sort.Sort(c)
	for i := 1; i < len(cand); i++ {
		if !c.Less(i-1, i) {
			sort.Sort(m)
			return m.ranked[:n]
		}
	}
	return cand[:n]
}

// name returns the method and module names of a frame (-1: the empty
// stack's).
func (m methodRanking) name(f int32) (method, module string) {
	if f < 0 {
		return weighted.NoFrames, ""
	}
	return m.frames[f].Name, m.frames[f].Module
}

func (p *Profile) siteReports(sites []Site, top int) []SiteReport {
	out := []SiteReport{}
	for _, s := range sites[:min(top, len(sites))] {
		name := "(no resolved frame)"
		if s.Frame >= 0 {
			name = p.Frames[s.Frame].String()
		}
		out = append(out, SiteReport{Site: name, Count: s.Count})
	}
	return out
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as aligned text.
func (r *Report) WriteText(w io.Writer) error {
	// The text is built in one buffer without fmt (most of a small
	// report's cost otherwise), then aligned as a tabwriter would
	// (writeAligned).
	b := make([]byte, 0, r.textSize())
	b = r.appendSummary(b)
	b = r.appendRanking(b)
	b = r.appendWaiting(b)
	b = r.appendThreads(b)
	b = r.appendGC(b)
	b = r.appendExceptions(b)
	b = r.appendContention(b)
	return writeAligned(w, b)
}

// appendSummary appends the report's first lines: the process and its
// runtime, the trace, the samples, the symbols, decode errors and notes.
func (r *Report) appendSummary(b []byte) []byte {
	b = append(b, "Process "...)
	b = fastfmt.AppendInt(b, int64(r.ProcessID))
	if r.ProcessName != "" {
		b = append(append(append(b, " ("...), termsafe.String(r.ProcessName)...), ')')
	}
	switch {
	case r.Runtime != "unknown":
		b = append(append(b, ", .NET "...), termsafe.String(r.Runtime)...)
		if r.RuntimeBuild != "" {
			b = append(append(append(b, " (CLR build "...), r.RuntimeBuild...), ')')
		}
	case r.RuntimeBuild != "":
		b = append(append(append(b, ", .NET version unknown (CLR build "...), r.RuntimeBuild...), ')')
	default:
		b = append(b, ", .NET version unknown (no RuntimeInformation or runtime path in the trace)"...)
	}
	b = append(append(b, "\nTrace: "...), r.Duration.Round(time.Millisecond).String()...)
	b = r.Start.UTC().AppendFormat(append(b, " from "...), time.RFC3339)
	if r.DroppedEvents > 0 {
		b = fastfmt.AppendUint(append(b, ", "...), r.DroppedEvents)
		b = append(b, " events dropped by the runtime"...)
	} else {
		b = append(b, ", no events dropped"...)
	}
	b = fastfmt.AppendInt(append(b, "\nSamples: "...), r.Samples)
	b = fastfmt.AppendInt(append(b, " ("...), r.Managed)
	b = fastfmt.AppendInt(append(b, " managed, "...), r.External)
	b = append(append(b, " external), period "...), r.Period.Round(time.Microsecond).String()...)
	if r.ManagedOnly {
		b = append(b, ", external samples dropped"...)
	}
	s := r.Symbols
	b = fastfmt.AppendInt(append(b, "\nSymbols: "...), int64(s.Methods))
	b = fastfmt.AppendInt(append(b, " methods, "...), int64(s.Modules))
	b = append(b, " modules"...)
	if !s.Rundown {
		b = append(b, ", no rundown in the trace"...)
	}
	if s.SampleFrames > 0 {
		b = fastfmt.AppendInt(append(b, "; "...), s.ResolvedSampleFrames)
		b = fastfmt.AppendInt(append(b, " of "...), s.SampleFrames)
		b = appendFixed(append(b, " sample frames resolved ("...), 100*float64(s.ResolvedSampleFrames)/float64(s.SampleFrames), 1)
		b = fastfmt.AppendInt(append(b, "%), "...), s.UnresolvedSampleFrames())
		b = append(b, " unresolved"...)
	}
	if s.EventFrames > s.SampleFrames {
		b = fastfmt.AppendInt(append(b, "; "...), s.ResolvedEventFrames)
		b = fastfmt.AppendInt(append(b, " of "...), s.EventFrames)
		b = append(b, " frames resolved over all stacks"...)
	}
	b = append(b, '\n')
	if r.DecodeErrors > 0 {
		b = fastfmt.AppendInt(append(b, "Decode errors: "...), int64(r.DecodeErrors))
		b = append(b, " runtime events did not decode\n"...)
	}

	for _, n := range r.Notes {
		b = append(append(append(b, "Note: "...), termsafe.String(n)...), ".\n"...)
	}
	return b
}

// appendRanking appends the methods ranked by the measure, with the note
// on waiting threads' methods.
func (r *Report) appendRanking(b []byte) []byte {
	if len(r.Methods) > 0 && isEventMeasure(r.Measure) {
		b = r.appendEventMethods(b)
	} else if len(r.Methods) > 0 {
		order := "exclusive"
		if r.Inclusive {
			order = "inclusive"
		}
		switch {
		case r.Measure == MeasureCPU:
			b = append(append(append(b, "\nTop methods by "...), order...), " cpu time (Managed samples only: running managed code)\n"...)
		case r.WaitingLeftOut:
			ran := 0
			for _, t := range r.Threads {
				if !t.Waiting {
					ran++
				}
			}
			b = append(append(append(b, "\nTop methods by "...), order...), " wall time of the threads that ran ("...)
			b = fastfmt.AppendInt(b, int64(ran))
			b = fastfmt.AppendInt(append(b, " of "...), int64(len(r.Threads)))
			b = append(b, " threads; % of their samples)\n"...)
		default:
			b = append(append(append(b, "\nTop methods by "...), order...), " wall time (every sample: running, waiting, or in native code)\n"...)
		}
		b = append(b, "  Exclusive\t%\tInclusive\t%\tManaged %\tMethod\n"...)
		waiting := false
		for _, m := range r.Methods {
			b = appendMs(append(b, "  "...), m.Exclusive)
			b = appendFixed(append(b, '\t'), m.ExclusivePct, 1)
			b = appendMs(append(b, '\t'), m.Inclusive)
			b = appendFixed(append(b, '\t'), m.InclusivePct, 1)
			b = append(b, '\t')
			if m.ManagedPct >= 0 {
				b = appendFixed(b, m.ManagedPct, 0)
			} else {
				b = append(b, '-')
			}
			b = append(b, '\t')
			name := m.Method
			if m.Module != "" {
				name = m.Module + "!" + name
			}
			if m.Waiting {
				name += "  (waiting)"
				waiting = true
			}
			b = append(append(b, termsafe.String(name)...), '\n')
		}
		if waiting && r.Measure != MeasureCPU {
			b = append(b, "  (waiting): the samples come from threads that waited there the whole trace: time blocked, not CPU.\n"+
				"  --sample cpu ranks by Managed samples only.\n"...)
		}
	}
	return b
}

// appendWaiting appends the places where threads waited the whole trace.
func (r *Report) appendWaiting(b []byte) []byte {
	if len(r.Waiting) > 0 {
		b = append(b, "\nWaiting the whole trace (left out of the ranking above; --include-waiting ranks them too)\n"+
			"  Threads\tTime\tWaited in\n"...)
		for _, w := range r.Waiting {
			b = fastfmt.AppendInt(append(b, "  "...), int64(w.Threads))
			b = appendMs(append(b, '\t'), w.Time)
			b = append(append(append(b, '\t'), termsafe.String(w.Method)...), '\n')
		}
	}
	return b
}

// appendThreads appends the threads' table.
func (r *Report) appendThreads(b []byte) []byte {
	if len(r.Threads) > 0 {
		b = append(b, "\nThreads\n  Thread\tTime\tManaged\tExternal\tManaged %\tStack changes\tState\n"...)
		for _, t := range r.Threads {
			b = fastfmt.AppendUint(append(b, "  "...), t.ID)
			b = appendMs(append(b, '\t'), t.Time)
			b = fastfmt.AppendInt(append(b, '\t'), t.Managed)
			b = fastfmt.AppendInt(append(b, '\t'), t.External)
			b = appendFixed(append(b, '\t'), t.ManagedPct, 1)
			b = fastfmt.AppendInt(append(b, '\t'), t.StackChanges)
			b = append(b, '\t')
			if t.Waiting {
				b = append(append(b, "waited in "...), termsafe.String(t.WaitingIn)...)
			} else {
				b = append(b, "ran"...)
			}
			b = append(b, '\n')
		}
	}
	return b
}

// appendGC appends the collections, pauses and allocations.
func (r *Report) appendGC(b []byte) []byte {
	g := r.GC
	if n := g.Collections[0] + g.Collections[1] + g.Collections[2]; n > 0 || g.Pauses > 0 || len(g.Allocations) > 0 {
		b = fastfmt.AppendInt(append(b, "\nGC\n  Collections: "...), n)
		b = fastfmt.AppendInt(append(b, " (gen0 "...), g.Collections[0])
		b = fastfmt.AppendInt(append(b, ", gen1 "...), g.Collections[1])
		b = fastfmt.AppendInt(append(b, ", gen2 "...), g.Collections[2])
		b = append(b, ")\n"...)
		if len(g.Reasons) > 0 {
			reasons := make([]string, 0, len(g.Reasons))
			for k := range g.Reasons {
				reasons = append(reasons, k)
			}
			slices.SortFunc(reasons, func(a, b string) int {
				return cmp.Or(cmp.Compare(g.Reasons[b], g.Reasons[a]), cmp.Compare(a, b))
			})
			b = append(b, "  Reasons: "...)
			for i, k := range reasons {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = fastfmt.AppendInt(append(append(b, termsafe.String(k)...), ' '), g.Reasons[k])
			}
			b = append(b, '\n')
		}
		b = fastfmt.AppendInt(append(b, "  Pauses: "...), g.Pauses)
		b = appendMs(append(b, ", total "...), g.PauseTotal)
		b = appendMs(append(b, ", mean "...), g.PauseMean)
		b = appendMs(append(b, ", max "...), g.PauseMax)
		b = append(b, '\n')
		if g.OtherSuspensions > 0 {
			b = fastfmt.AppendInt(append(b, "  Other runtime suspensions: "...), g.OtherSuspensions)
			b = append(appendMs(append(b, ", total "...), g.OtherSuspensionTotal), '\n')
		}
		if len(g.Allocations) > 0 {
			objects := false
			for _, a := range g.Allocations {
				objects = objects || a.Objects > 0
			}
			if objects {
				b = append(b, "  Allocations (sampled every ~100 KiB)\n    Bytes\tTicks\tObjects (est.)\tType\n"...)
			} else {
				b = append(b, "  Allocations (sampled every ~100 KiB)\n    Bytes\tTicks\tType\n"...)
			}
			for _, a := range g.Allocations {
				b = fastfmt.AppendUint(append(b, "    "...), a.Bytes)
				b = fastfmt.AppendInt(append(b, '\t'), a.Ticks)
				if objects {
					b = fastfmt.AppendInt(append(b, '\t'), a.Objects)
				}
				b = append(append(append(b, '\t'), termsafe.String(a.Type)...), '\n')
			}
		}
	}
	return b
}

// appendExceptions appends the exceptions by type, with their sites.
func (r *Report) appendExceptions(b []byte) []byte {
	if len(r.Exceptions) > 0 {
		b = append(b, "\nExceptions\n"...)
		for _, x := range r.Exceptions {
			b = fastfmt.AppendInt(append(b, "  "...), x.Count)
			b = append(append(append(b, '\t'), termsafe.String(x.Type)...), '\n')
			b = appendSites(b, x.Sites)
		}
	}
	return b
}

// appendContention appends the lock waits, with their sites.
func (r *Report) appendContention(b []byte) []byte {
	if c := r.Contention; c.Count > 0 {
		b = fastfmt.AppendInt(append(b, "\nLock contention: "...), c.Count)
		b = appendMs(append(b, " waits, total "...), c.Total)
		b = appendMs(append(b, ", max "...), c.Max)
		if c.Unfinished > 0 {
			b = fastfmt.AppendInt(append(b, " ("...), c.Unfinished)
			b = append(b, " unfinished at the end of the trace)"...)
		}
		b = append(b, '\n')
		b = appendSites(b, c.Sites)
	}
	return b
}

// textSize is about the length of WriteText's text, a little more: the
// first lines and the section headers, and each note, line and site with
// its names (a line's numbers and tabs take less than 64 bytes). A short
// estimate only makes append grow the buffer; one of 640 bytes plus 160 a
// line was twice the text.
func (r *Report) textSize() int {
	size := 352 + len(r.ProcessName) + len(r.Runtime) + len(r.RuntimeBuild)
	for _, n := range r.Notes {
		size += len(n) + 8
	}
	size += 160 * min(1, len(r.Methods))
	for _, m := range r.Methods {
		size += 64 + len(m.Module) + len(m.Method)
		if m.Waiting {
			size += 176 // "  (waiting)", and the note on waiting once
		}
	}
	size += 128 * min(1, len(r.Waiting))
	for _, w := range r.Waiting {
		size += 48 + len(w.Method)
	}
	size += 96 * min(1, len(r.Threads))
	for _, t := range r.Threads {
		size += 64 + len(t.WaitingIn)
	}
	g := r.GC
	if g.Collections[0]+g.Collections[1]+g.Collections[2] > 0 || g.Pauses > 0 || len(g.Allocations) > 0 {
		size += 256
	}
	for k := range g.Reasons {
		size += 24 + len(k)
	}
	for _, a := range g.Allocations {
		size += 64 + len(a.Type)
	}
	for _, x := range r.Exceptions {
		size += 32 + len(x.Type) + sitesSize(x.Sites)
	}
	if r.Contention.Count > 0 {
		size += 128 + sitesSize(r.Contention.Sites)
	}
	return size
}

// sitesSize is about the length of appendSites' lines.
func sitesSize(sites []SiteReport) int {
	n := 0
	for _, s := range sites {
		n += 32 + len(s.Site)
	}
	return n
}

// appendSites appends a report's lines of sites.
func appendSites(b []byte, sites []SiteReport) []byte {
	for _, s := range sites {
		b = fastfmt.AppendInt(append(b, "    "...), s.Count)
		b = append(append(append(b, "\tat "...), termsafe.String(s.Site)...), '\n')
	}
	return b
}

// appendFixed appends v with prec decimals, as fmt's %.<prec>f does.
func appendFixed(b []byte, v float64, prec int) []byte {
	lo := len(b)
	b = strconv.AppendFloat(b, v, 'f', prec, 64)
	if b[lo] == '+' { // +Inf: fmt shows no sign
		b = append(b[:lo], b[lo+1:]...)
	}
	return b
}

// appendMs appends a duration in milliseconds with one decimal, as ms.
func appendMs(b []byte, d time.Duration) []byte {
	return append(appendFixed(b, float64(d)/1e6, 1), "ms"...)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/1e6)
}
