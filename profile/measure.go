package profile

import (
	"fmt"

	"github.com/clrdiag/clrdiag/internal/named"
	"github.com/clrdiag/clrdiag/weighted"
)

// Measures of the events of a trace other than CPU samples: the values of
// --sample besides MeasureWall and MeasureCPU.
const (
	// MeasureAlloc weighs GCAllocationTick events by the bytes they stand
	// for, with the allocated type as the leaf frame.
	MeasureAlloc = "alloc"
	// MeasureContention weighs lock waits (ContentionStart to
	// ContentionStop on a thread) by their duration.
	MeasureContention = "contention"
	// MeasureExceptions counts ExceptionThrown events, with the exception
	// type as the leaf frame.
	MeasureExceptions = "exceptions"
)

// MeasureInfo describes one measure: what it weighs, which events of a
// trace it needs and how to collect them. MeasureInfos is the one list of
// them that the commands (--sample), the monitor (?sample=) and the viewer
// offer.
type MeasureInfo struct {
	// Name is the --sample value.
	Name string
	// Help says in a few words what the measure weighs, for help texts.
	Help string
	// Unit is the unit of the default sample type ("nanoseconds", "bytes",
	// "count").
	Unit string
	// Noun names what one event of the measure is, plural ("samples",
	// "allocation ticks", "lock waits", "exceptions").
	Noun string
	// Events names the events the measure needs.
	Events string
	// Collect is what to give clrdiag trace collect to get those events.
	Collect string
	// Providers is what a live session enables for the measure, in
	// dotnet-trace's --providers syntax (the rundown, which names the
	// methods of the stacks, comes with every session).
	Providers string
	// Timeline is set when the measure has a time order (its events have
	// a start and a duration): only those can be drawn by the formats
	// that draw time (Format.Timeline with Format.NeedsTime).
	Timeline bool
}

// MeasureInfos returns the measures, the default (wall) first.
func MeasureInfos() []MeasureInfo {
	const cpuProviders = "Microsoft-DotNETCore-SampleProfiler:0xF00000000000:4"
	const cpuCollect = "--profile dotnet-sampled-thread-time (trace collect's default includes it)"
	const cpuEvents = "CPU samples (Microsoft-DotNETCore-SampleProfiler)"
	return []MeasureInfo{
		{Name: MeasureWall, Unit: "nanoseconds", Noun: "samples", Timeline: true,
			Help:   "every CPU sample: thread time, running or waiting",
			Events: cpuEvents, Collect: cpuCollect, Providers: cpuProviders},
		{Name: MeasureCPU, Unit: "nanoseconds", Noun: "samples", Timeline: true,
			Help:   "Managed CPU samples only: time running managed code",
			Events: cpuEvents, Collect: cpuCollect, Providers: cpuProviders},
		{Name: MeasureAlloc, Unit: "bytes", Noun: "allocation ticks",
			Help:      "allocated bytes from GCAllocationTick (one event per ~100 KiB), the type as the leaf frame",
			Events:    "GCAllocationTick events (runtime GC keyword at Verbose level)",
			Collect:   "--profile gc-verbose (or --clrevents gc --clreventlevel verbose)",
			Providers: "Microsoft-Windows-DotNETRuntime:0x1:5"},
		{Name: MeasureContention, Unit: "nanoseconds", Noun: "lock waits", Timeline: true,
			Help:      "time waited for contended locks (ContentionStart to ContentionStop)",
			Events:    "ContentionStart/ContentionStop events (runtime Contention keyword)",
			Collect:   "--clrevents contention",
			Providers: "Microsoft-Windows-DotNETRuntime:0x4000:4"},
		{Name: MeasureExceptions, Unit: "count", Noun: "exceptions",
			Help:      "exceptions thrown (ExceptionThrown), the type as the leaf frame",
			Events:    "ExceptionThrown events (runtime Exception keyword)",
			Collect:   "--clrevents exception (trace collect's default includes it)",
			Providers: "Microsoft-Windows-DotNETRuntime:0x8000:4"},
	}
}

// Measures lists the names of the measures Profile.Weighted accepts, the
// default first.
func Measures() []string { return named.Names(MeasureInfos(), measureName) }

// LookupMeasure returns the measure named name (case-insensitive), or an
// error that lists the measures.
func LookupMeasure(name string) (MeasureInfo, error) {
	return named.Lookup(MeasureInfos(), measureName, name, "measure")
}

func measureName(m MeasureInfo) string { return m.Name }

// NoEventsError says that a trace has none of the events a measure weighs,
// and how to collect them.
type NoEventsError struct {
	Measure MeasureInfo
}

func (e *NoEventsError) Error() string {
	if e.Measure.Name == MeasureWall || e.Measure.Name == MeasureCPU {
		return NoSamplesAdvice
	}
	return fmt.Sprintf("the trace has no %s: collect them with clrdiag trace collect -p PID %s",
		e.Measure.Events, e.Measure.Collect)
}

// CheckFormat returns an error when format f cannot show the measure (a
// format that draws only time and a measure without a time order).
func (m MeasureInfo) CheckFormat(f weighted.Format) error {
	return f.CheckMeasure(m.Name, m.Noun, m.Timeline)
}
