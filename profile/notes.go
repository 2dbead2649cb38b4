package profile

import (
	"fmt"
	"strings"
)

// NoSamplesAdvice says how to collect a trace with CPU samples.
const NoSamplesAdvice = "the trace has no CPU samples (no Microsoft-DotNETCore-SampleProfiler events): " +
	"collect one with --profile dotnet-sampled-thread-time (clrdiag trace collect's default includes it)"

// Activity splits a profile's samples between the threads that waited
// (Thread.Waiting) and the others.
type Activity struct {
	Samples        int64
	WaitingThreads int
	WaitingSamples int64
	// BusySamples counts the samples of the threads that did not wait,
	// BusyExternal those of them that were External.
	BusySamples, BusyExternal int64
}

// Activity computes the profile's Activity.
func (p *Profile) Activity() Activity {
	var a Activity
	for _, t := range p.Threads {
		n := t.Managed + t.External
		a.Samples += n
		if t.Waiting {
			a.WaitingThreads++
			a.WaitingSamples += n
			continue
		}
		a.BusySamples += n
		a.BusyExternal += t.External
	}
	return a
}

// MostlyExternal reports whether at least 90% of the samples of the threads
// that did not wait are External: the cpu measure (Managed samples) then
// misses most of the time those threads ran.
func (a Activity) MostlyExternal() bool {
	return a.BusySamples > 0 && a.BusyExternal*10 >= a.BusySamples*9
}

// coreCLR3 reports whether the trace came from .NET Core 3.x or older,
// whose RuntimeInformation reports the CLR as 4.x.
func (p *Profile) coreCLR3() bool {
	v := p.RuntimeVersion
	if v != "" {
		return strings.HasPrefix(v, "1.") || strings.HasPrefix(v, "2.") || strings.HasPrefix(v, "3.")
	}
	return p.Runtime != nil && p.Runtime.VMMajorVersion == 4
}

// ExternalNote explains a MostlyExternal profile in one sentence, "" when
// the profile is not.
func (p *Profile) ExternalNote() string {
	a := p.Activity()
	if !a.MostlyExternal() {
		return ""
	}
	pct := 100 * float64(a.BusyExternal) / float64(a.BusySamples)
	if p.coreCLR3() {
		return fmt.Sprintf("%.0f%% of the samples of the threads that ran are External: .NET Core 3.x labels a thread "+
			"External whenever its sampler catches it outside managed code, even in a brief call into the runtime "+
			"(Stopwatch, allocation, locks), so External does not mean blocked here and cpu (Managed samples) "+
			"undercounts; compare by wall time", pct)
	}
	return fmt.Sprintf("%.0f%% of the samples of the threads that ran are External (native code, calls into the "+
		"runtime, or waits): cpu (Managed samples) covers only the rest of their time", pct)
}

// Notes are what a reader of the profile should know before trusting it:
// no samples, samples mostly External, threads that only waited, dropped
// events, caps reached. The exporters write them where the format has room
// (pprof comments); the report prints them.
func (p *Profile) Notes() []string {
	var notes []string
	a := p.Activity()
	if a.Samples == 0 {
		notes = append(notes, NoSamplesAdvice)
	}
	if n := p.ExternalNote(); n != "" {
		notes = append(notes, n)
	}
	if a.WaitingThreads > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d threads waited the whole trace (a stack that never changed, at most 1%% of "+
			"samples Managed): their wall time is time spent blocked, not CPU time", a.WaitingThreads, len(p.Threads)))
	}
	notes = append(notes, p.commonNotes("samples")...)
	return notes
}

// commonNotes are the notes about the trace as a whole: dropped events,
// caps reached. what names what the dropped events took away.
func (p *Profile) commonNotes(what string) []string {
	var notes []string
	if p.DroppedEvents > 0 {
		notes = append(notes, fmt.Sprintf("%d events were dropped by the runtime (its buffers were full): %s are missing", p.DroppedEvents, what))
	}
	if n := p.CapNote(); n != "" {
		notes = append(notes, n)
	}
	if p.TimelineTruncated {
		notes = append(notes, fmt.Sprintf("the timeline reached its cap: later %s are counted but not drawn in time order", what))
	}
	return notes
}

// CapNote says that the profile reached Config.MaxStacks or
// Config.MaxAddresses and what that cost, "" when it did not. Commands print
// it as a warning.
func (p *Profile) CapNote() string {
	c := p.Capped
	if !c.Hit() {
		return ""
	}
	capName := fmt.Sprintf("%d distinct stacks", c.MaxStacks)
	if c.Addresses {
		capName = fmt.Sprintf("%d distinct stack addresses", c.MaxAddresses)
	}
	return fmt.Sprintf("the profile reached its cap of %s (memory stays bounded): %d samples and %d other events "+
		"with a stack beyond it are counted on the one stack %q", capName, c.Samples, c.Events, OverCapFrame)
}
