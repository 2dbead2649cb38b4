package profile

import (
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/weighted"
)

// Profile is a CPU/thread-time profile built from SampleProfiler events,
// with its stacks symbolised, plus the GC, exception and contention events
// of the same trace. Its size is bounded by the number of distinct stacks,
// frames, threads and types, not by the length of the trace (except
// Thread.Timeline, which is recorded only when Config.Timeline is set).
type Profile struct {
	// Start is the time of the first event; Duration spans to the last.
	Start    time.Time
	Duration time.Duration
	// Period is the sampling period, derived from the interval between
	// samples of each thread (the median over threads), or the trace's
	// expected sampling rate when too few samples exist. Every sample
	// weighs Period.
	Period      time.Duration
	PointerSize int
	ProcessID   int
	// ManagedOnly is set when External samples were dropped.
	ManagedOnly bool
	// Runtime is what RuntimeInformation says, when the trace has it.
	Runtime *clrevents.RuntimeInformation
	// RuntimeVersion is the version of the .NET runtime the trace came
	// from ("3.1.2", "8.0.10"), read from the runtime's install path in
	// RuntimeInformation or in a module event, or major.minor from
	// RuntimeInformation's CLR version on .NET 5 and later ("5.0"); empty
	// when the trace does not say (RuntimeInformation of .NET Core 3.x
	// reports the CLR as 4.0.30319.0).
	RuntimeVersion string
	// CommandLine is the target's command line from the trace's ProcessInfo
	// event (or RuntimeInformation), and ProcessName the application it
	// names ("app" for "dotnet app.dll", "myservice" for
	// "/srv/myservice"); both empty when the trace has neither.
	CommandLine string
	ProcessName string
	// DroppedEvents is the number of events the runtime could not write
	// (its buffers were full), as the trace's sequence numbers show; the
	// profile misses their samples. Set by Read (a Builder's caller sets it
	// from its reader's Stats).
	DroppedEvents uint64

	// Frames are the distinct frames; Stacks index into them.
	Frames []weighted.Frame
	// Stacks are the distinct stacks, each a list of Frames indexes, leaf
	// first.
	Stacks []weighted.Stack
	// Threads are the sampled threads, by first appearance.
	Threads []*Thread

	Symbols    SymbolStats
	GC         GCStats
	Exceptions []ExceptionStats
	Contention ContentionStats

	// AllocStacks, ContentionStacks and ExceptionStacks are the allocation
	// ticks (Value in bytes, leaves the allocated types), the lock waits
	// (Value in nanoseconds, no leaves) and the exceptions (Value the count,
	// leaves the exception types) by thread and stack: the profiles of the
	// measures MeasureAlloc, MeasureContention and MeasureExceptions.
	AllocStacks, ContentionStacks, ExceptionStacks EventStacks
	// Allocs says whether the allocation ticks report object sizes.
	Allocs AllocStats
	// Waits are the lock waits of each thread in time order; only with
	// Config.Timeline (they count towards MaxTimelineRuns).
	Waits []ThreadWaits
	// DecodeErrors counts runtime events whose payload did not decode;
	// FirstDecodeError is the first of them.
	DecodeErrors     int
	FirstDecodeError error
	// TimelineTruncated is set when Config.MaxTimelineRuns was reached.
	TimelineTruncated bool
	// Capped says whether Config.MaxStacks or Config.MaxAddresses was
	// reached: the samples and events whose stack would have gone over the
	// cap are kept, on one stack made of the pseudo-frame OverCapFrame.
	Capped CapStats
}

// CapStats says what the stack caps of Config cost.
type CapStats struct {
	// MaxStacks and MaxAddresses are the caps in effect.
	MaxStacks, MaxAddresses int
	// Stacks and Addresses are set when that cap was reached.
	Stacks, Addresses bool
	// Samples counts the samples put on the over-the-cap stack, Events the
	// other events with a stack (exceptions, contention, EventSource events).
	Samples, Events int64
}

// Hit reports whether a cap was reached.
func (c CapStats) Hit() bool { return c.Stacks || c.Addresses }

// OverCapFrame names the pseudo-frame of the stack that stands for every
// stack beyond Config.MaxStacks or Config.MaxAddresses.
const OverCapFrame = "[stack not kept: over the profile's stack cap]"

// Thread holds the samples of one OS thread.
type Thread struct {
	ID uint64
	// Samples aggregates the thread's samples by stack, one entry per
	// distinct Stack, most samples first.
	Samples []StackSample
	// Managed and External count the samples by kind.
	Managed, External int64
	// StackChanges counts the samples whose stack differs from the
	// thread's previous sample: a thread that waits in one place has
	// almost none, a thread that works has many.
	StackChanges int64
	// Waiting is set for a thread that looks blocked for the whole trace:
	// at most 1% of its samples Managed, and its stack changed in at most
	// 1% of them (a thread in Console.ReadLine, Thread.Sleep or a lock
	// wait).
	// Its time is wall-clock time, not CPU time.
	Waiting bool
	// First and Last are offsets from Profile.Start.
	First, Last time.Duration
	// Period is this thread's own mean sampling interval (0 with fewer than
	// two samples).
	Period time.Duration
	// FirstStack (a Stacks index) and FirstKind describe the thread's
	// earliest kept sample: what it was doing when sampling began, as
	// dotnet-stack shows it.
	FirstStack int
	FirstKind  SampleKind
	// Timeline is the thread's samples in time order, consecutive samples
	// with the same stack merged; only with Config.Timeline.
	Timeline weighted.Timeline
}

// Total is the thread's sampled time: its sample count times the period.
func (t *Thread) Total(period time.Duration) time.Duration {
	return time.Duration(t.Managed+t.External) * period
}

// Work ranks threads by how much they did rather than how long they
// existed: Managed samples plus stack changes. Viewers open on the
// thread with the most work.
func (t *Thread) Work() int64 { return t.Managed + t.StackChanges }

// StackSample is how many samples of each kind a thread had with one
// stack.
type StackSample struct {
	Stack             int
	Managed, External int64
}

// Count is the number of samples of either kind.
func (s StackSample) Count() int64 { return s.Managed + s.External }

// SymbolStats says how well stacks were resolved. Frame counts are frame
// occurrences weighted by how often their stack was seen; Addresses are
// distinct addresses.
type SymbolStats struct {
	// Methods counts the method code ranges kept: every MethodLoadVerbose
	// of the session, and the rundown methods that a stack points into
	// (the others are not kept; RundownMethods counts them all).
	Methods        int
	Modules        int
	RundownMethods int
	// Rundown is true when the trace had rundown method events.
	Rundown bool
	// Over the stacks of samples:
	SampleFrames, ResolvedSampleFrames int64
	// Over the stacks of samples, allocation ticks, exceptions, lock waits
	// and the events of other providers (EventSource events); the runtime's
	// other events (GC suspensions, type loads, method bookkeeping...) are
	// not counted:
	EventFrames, ResolvedEventFrames int64
	Addresses, ResolvedAddresses     int
}

// UnresolvedSampleFrames is SampleFrames - ResolvedSampleFrames.
func (s SymbolStats) UnresolvedSampleFrames() int64 { return s.SampleFrames - s.ResolvedSampleFrames }

// GCStats summarises the collections of the trace.
type GCStats struct {
	// Collections counts GCStart events by generation (Depth 0, 1, 2).
	Collections [3]int64
	// Reasons counts collections by reason name.
	Reasons map[string]int64
	// Pauses are the execution-engine suspensions for a GC
	// (GCSuspendEEBegin with reason GC or GC-prep to GCRestartEEEnd).
	Pauses     int64
	PauseTotal time.Duration
	PauseMax   time.Duration
	// OtherSuspensions are suspensions for other reasons (the sample
	// profiler of older runtimes suspends the runtime for every sample).
	OtherSuspensions     int64
	OtherSuspensionTotal time.Duration
	// Allocations by type, from GCAllocationTick (about one per 100 KiB);
	// empty when the trace has no allocation ticks.
	Allocations []TypeAllocation
}

// TypeAllocation is the allocation volume attributed to a type: the
// AllocationAmount of the ticks whose triggering object had the type.
type TypeAllocation struct {
	Type  string
	Bytes uint64
	Ticks int64
	// Objects is the estimated number of objects (see AllocStats), 0 when
	// the ticks do not report object sizes.
	Objects int64 `json:",omitempty"`
}

// ExceptionStats counts the exceptions of one type.
type ExceptionStats struct {
	Type  string
	Count int64
	// Sites are the throw sites (the top resolved frame of the throwing
	// stack), most frequent first.
	Sites []Site
}

// Site is a code location with a count.
type Site struct {
	Frame int // Frames index; -1 when the stack had no resolved frame
	Count int64
}

// ContentionStats summarises lock contention.
type ContentionStats struct {
	// Count is the number of waits (ContentionStart events, and stops with
	// a duration whose start came before the trace).
	Count int64
	// Total and Max are over every wait, the unfinished ones up to the end
	// of the trace.
	Total time.Duration
	Max   time.Duration
	// Unfinished counts the waits that had not ended when the trace ended,
	// UnfinishedTotal their time up to its end.
	Unfinished      int64
	UnfinishedTotal time.Duration
	// StopsWithoutStart counts the ContentionStop events of waits that
	// began before the trace and do not say how long they were (version
	// 0): they are not in the profile.
	StopsWithoutStart int64
	// Sites are where threads waited (top resolved frame of the
	// ContentionStart stack), most frequent first.
	Sites []Site
}

// SampleKind is whether a sample found the thread in managed code.
type SampleKind = clrevents.SampleKind
