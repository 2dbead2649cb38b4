package profile

import (
	"math"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Config selects what a Builder keeps. The zero value keeps every thread
// and every sample and records no timeline.
type Config struct {
	// Threads, when not empty, keeps only the samples of these OS thread
	// ids.
	Threads []uint64
	// ManagedOnly drops External samples (threads outside managed code:
	// blocked, waiting or in native code), leaving a CPU-like profile.
	ManagedOnly bool
	// Timeline records each thread's samples in time order (consecutive
	// samples with the same stack merged into one Run), as needed by the
	// Chromium exporter and by speedscope's time-ordered view. Its memory
	// grows with the number of stack changes.
	Timeline bool
	// MaxTimelineRuns bounds the runs kept over all threads (default
	// 1<<20); past it the timeline stops and Profile.TimelineTruncated is
	// set.
	MaxTimelineRuns int
	// MaxStacks bounds the distinct raw stacks kept (default
	// DefaultMaxStacks) and MaxAddresses the distinct return addresses in
	// them (default DefaultMaxAddresses). Past either cap a new stack is
	// not kept: its samples and events are counted on one stack made of
	// OverCapFrame, and Profile.Capped says so. Together they bound the
	// memory of a Builder and of the exports whatever the trace holds.
	MaxStacks, MaxAddresses int
	// Measure, when set, builds only what the profile of that measure
	// (MeasureWall, MeasureCPU, MeasureAlloc...) needs: a conversion to
	// one measure does not pay for the events of the others (a profile of
	// wall time skips allocation ticks, exceptions and lock waits; one of
	// allocations skips the CPU samples). The Profile then reports no
	// events of the measures left out. "" (or a name that is not a
	// measure) builds them all, as the report needs.
	Measure string
}

// Default stack caps. A real trace of a large application has a few
// thousand to tens of thousands of distinct stacks and return addresses
// (the captures in testdata: at most about 1000 of each). At the caps the
// hostile traces of BenchmarkCrafted (16 MB of stacks of new addresses,
// or 11 MB alternating new stacks and rundown methods) convert to pprof in
// about 0.3 s with a peak heap of 130-225 MB, most of it garbage the
// collector has not taken yet; the finished Profile holds about 11 MB.
const (
	DefaultMaxStacks    = 1 << 17
	DefaultMaxAddresses = 1 << 17
)

// Builder builds a Profile from a stream of events in one pass. Samples are
// aggregated by unique stack as they arrive and symbolised by Finish, so the
// rundown at the end of a trace resolves the samples before it, and a pipe
// can be profiled as it is read. The events must all come from one
// nettrace.Reader: stacks are cached by (Event.StackRegion, Event.StackID).
// A Builder is not safe for concurrent use.
type Builder struct {
	cfg     Config
	hdr     nettrace.Header
	threads map[uint64]*threadAcc
	order   []*threadAcc
	keep    map[uint64]bool
	// kinds holds the kinds of the metadata records byIndex does not (nil
	// until one).
	kinds map[*nettrace.Metadata]eventKind
	// byIndex caches the kinds of the metadata records of the reader by
	// Metadata.Index (unique per reader, unlike the ids V6 traces reuse),
	// below maxDenseIndex; kindUnknown: not classified yet.
	byIndex []eventKind
	// tcache holds the recent threads (threads.go); nil until the first
	// thread or a sample event's metadata (classify), so that a trace
	// with neither (a TraceLogging capture) does not allocate and clear
	// its 1 KB.
	tcache *threadCache
	// sym holds the methods and modules; nil until the first method,
	// module or rundown method event: a trace with none (a TraceLogging
	// capture) does not allocate its 320 bytes (with contention in
	// eventState, the Builder is then an allocation of 768 bytes rather
	// than 1 152).
	sym *symState

	// st holds the distinct raw stacks and the distinct addresses in them.
	st             stackStore
	overCap        int // the over-the-cap stack, -1 until needed
	overCapAddrs   int // the addresses in st when it was made
	rundownMethods int
	keyBuf         []uint64 // the stack being interned
	eventStack     []int64  // events of other providers by raw stack
	runs           int

	// idStacks and idMap map the stack ids of stack region idRegion (see
	// nettrace.Event.StackRegion) to interned stacks, so an event whose
	// stack id was seen before is interned without reading its frames.
	// idStacks is indexed by id - idBase and holds stack+1 (0: not seen);
	// ids outside its range go to idMap.
	idRegion uint64
	idBase   uint32
	idStacks []int
	idMap    map[uint32]int

	minTS, maxTS   int64
	gapTicks       int64
	runtime        *clrevents.RuntimeInformation
	runtimeVersion string // from a module path, when RuntimeInformation has none
	commandLine    string
	decodeErrors   int
	firstDecodeErr error

	gc           GCStats
	suspendStart int64
	ev           *eventState // allocation ticks, exceptions, lock waits (events.go); nil until one

	// The flags, side by side (a bool between two words takes a word of
	// its own): with them the Builder, 760 bytes, is an allocation of 768
	// (the next size class). A field added to the Builder costs 128 bytes
	// a conversion unless it fits in these 8 bytes or this word.
	// noRuns: the timeline takes no more runs, as there is none
	// (Config.Timeline unset) or it reached Config.MaxTimelineRuns (see
	// truncated); one test per sample for both.
	noRuns                   bool
	rundown                  bool
	suspending, suspendForGC bool
	// cappedStacks and cappedAddrs are CapStats.Stacks and Addresses.
	cappedStacks, cappedAddrs bool
	// gcPending collections of reason gcReason are not in gc.Reasons yet
	// (countGCReason): the collections of a trace mostly have one reason,
	// and a count by name is a map update, costly beside a compare.
	gcReason, gcPending uint8
}

// symState is what a Builder keeps of the methods and modules of the
// trace: the symbol table, and addrs, the stack store's addresses for
// range queries (is a rundown method touched by a stack?), taken in from
// st.addrs by the queries, so that a trace without rundown methods does
// not pay for the set.
type symState struct {
	symbols SymbolTable
	addrs   addrSet
}

// syms returns the Builder's symState, made by the first event that
// needs it.
func (b *Builder) syms() *symState {
	if b.sym == nil {
		b.sym = new(symState)
	}
	return b.sym
}

// methods is the number of methods in the symbol table.
func (b *Builder) methods() int {
	if b.sym == nil {
		return 0
	}
	return b.sym.symbols.Methods()
}

type eventKind uint8

// maxDenseIndex bounds the metadata indexes cached in a slice.
const maxDenseIndex = 4096

const (
	kindUnknown eventKind = iota
	kindOther
	kindUser // an event of a provider other than the runtime's: its stack counts in SymbolStats
	kindSample
	kindMethod
	kindRundownMethod
	kindModule
	kindRuntimeInfo
	kindProcessInfo
	kindGCStart
	kindSuspendBegin
	kindRestartEnd
	kindAllocTick
	kindException
	kindContentionStart
	kindContentionStop
)

// NewBuilder starts a profile of a trace with the given header.
func NewBuilder(h nettrace.Header, cfg Config) *Builder {
	if cfg.MaxTimelineRuns <= 0 {
		cfg.MaxTimelineRuns = 1 << 20
	}
	if cfg.MaxStacks <= 0 {
		cfg.MaxStacks = DefaultMaxStacks
	}
	if cfg.MaxAddresses <= 0 {
		cfg.MaxAddresses = DefaultMaxAddresses
	}
	b := &Builder{
		cfg: cfg, hdr: h,
		overCap: -1,
		minTS:   math.MaxInt64, maxTS: math.MinInt64,
		noRuns: !cfg.Timeline,
	}
	b.gc.Reasons = make(map[string]int64)
	if len(cfg.Threads) > 0 {
		b.keep = make(map[uint64]bool, len(cfg.Threads))
		for _, id := range cfg.Threads {
			b.keep[id] = true
		}
	}
	gapNs := int64(h.ExpectedCPUSamplingRate)
	if gapNs <= 0 {
		gapNs = int64(time.Millisecond)
	}
	freq := h.TickFrequency
	if freq <= 0 {
		freq = 1e9
	}
	b.gapTicks = int64(float64(4*gapNs) * float64(freq) / 1e9)
	return b
}

func (b *Builder) classify(md *nettrace.Metadata) eventKind {
	if i := md.Index(); i > 0 && i < len(b.byIndex) && b.byIndex[i] != kindUnknown {
		return b.byIndex[i]
	}
	if k, ok := b.kinds[md]; ok {
		return k
	}
	k := kindOther
	if !b.runtimeProvider(md) {
		k = kindUser
	}
	id := md.EventID
	switch {
	case md.ProviderName == clrevents.ProviderSampleProfiler && id == uint32(clrevents.IDThreadSample):
		k = kindSample
	case md.ProviderName == providerEventPipe && id == 1:
		k = kindProcessInfo
	case md.ProviderName == clrevents.ProviderRundown:
		// The rest of the rundown, as the runtime's other events (the
		// method bookkeeping among them: IL-to-native maps, R2R entry
		// points...), is kindOther, which Add drops with no call.
		switch uint16(id) {
		case clrevents.IDMethodDCStartVerbose, clrevents.IDMethodDCEndVerbose:
			k = kindRundownMethod
		case clrevents.IDModuleDCStart, clrevents.IDModuleDCEnd:
			k = kindModule
		case clrevents.IDRuntimeInformationDCStart:
			k = kindRuntimeInfo
		}
	case md.ProviderName == clrevents.ProviderRuntime:
		switch uint16(id) {
		case clrevents.IDMethodLoadVerbose, clrevents.IDMethodUnloadVerbose:
			k = kindMethod
		case clrevents.IDModuleLoad:
			k = kindModule
		case clrevents.IDRuntimeInformationStart:
			k = kindRuntimeInfo
		case clrevents.IDGCStart:
			k = kindGCStart
		case clrevents.IDGCSuspendEEBegin:
			k = kindSuspendBegin
		case clrevents.IDGCRestartEEEnd:
			k = kindRestartEnd
		case clrevents.IDGCAllocationTick:
			k = kindAllocTick
		case clrevents.IDExceptionThrown:
			k = kindException
		case clrevents.IDContentionStart:
			k = kindContentionStart
		case clrevents.IDContentionStop:
			k = kindContentionStop
		}
	}
	if b.skip(k) {
		k = kindOther
	}
	if k == kindSample && b.tcache == nil { // addSample looks it up
		b.tcache = new(threadCache)
	}
	if i := md.Index(); i > 0 && i < maxDenseIndex {
		if i >= len(b.byIndex) {
			b.byIndex = append(b.byIndex, make([]eventKind, i+1-len(b.byIndex))...)
		}
		b.byIndex[i] = k
		return k
	}
	if b.kinds == nil { // made for the first metadata byIndex does not hold
		b.kinds = make(map[*nettrace.Metadata]eventKind)
	}
	b.kinds[md] = k
	return k
}

// skip reports whether Config.Measure leaves out the events of kind k.
func (b *Builder) skip(k eventKind) bool {
	var want eventKind
	switch k {
	case kindSample:
		switch b.cfg.Measure {
		case MeasureAlloc, MeasureContention, MeasureExceptions:
			return true
		}
		return false
	case kindAllocTick:
		want = kindAllocTick
	case kindException:
		want = kindException
	case kindContentionStart, kindContentionStop:
		want = kindContentionStart
	default:
		return false
	}
	switch b.cfg.Measure {
	case MeasureWall, MeasureCPU:
		return true
	case MeasureAlloc:
		return want != kindAllocTick
	case MeasureContention:
		return want != kindContentionStart
	case MeasureExceptions:
		return want != kindException
	}
	return false
}

// runtimeProvider reports whether md is one of the runtime's native
// providers, whose stacks (GC suspensions, type loads...) are not counted in
// SymbolStats.EventFrames.
func (b *Builder) runtimeProvider(md *nettrace.Metadata) bool {
	switch md.ProviderName {
	case clrevents.ProviderRuntime, clrevents.ProviderRundown, clrevents.ProviderSampleProfiler,
		"Microsoft-Windows-DotNETRuntimePrivate":
		return true
	}
	return false
}

// truncated reports whether the timeline reached Config.MaxTimelineRuns.
func (b *Builder) truncated() bool { return b.cfg.Timeline && b.noRuns }

func (b *Builder) decodeFailed(err error) {
	b.decodeErrors++
	if b.firstDecodeErr == nil {
		b.firstDecodeErr = err
	}
}

// Add feeds one event. It never fails: payloads that do not decode are
// counted in Profile.DecodeErrors and otherwise ignored.
func (b *Builder) Add(ev *nettrace.Event) {
	if b.isSample(ev) {
		b.addSample(ev)
		return
	}
	b.add(ev)
}

// isSample reports whether ev is a sample of a kind classified already,
// which addSample takes whole, time range included; add takes the other
// events. The loops that read a trace call them directly rather than
// Add, which is not inlined: a call less per sample, the most frequent
// event of a time profile, and no frame of Add's own.
func (b *Builder) isSample(ev *nettrace.Event) bool {
	md := ev.Metadata
	return md != nil && uint(md.Index()) < uint(len(b.byIndex)) && b.byIndex[md.Index()] == kindSample
}

// add is Add for the events other than those isSample reports.
func (b *Builder) add(ev *nettrace.Event) {
	md := ev.Metadata
	if md == nil {
		return
	}
	// The time range (NewBuilder starts it empty); branches rather than
	// min and max: events come nearly in time order.
	ts := ev.Timestamp
	if ts > b.maxTS {
		b.maxTS = ts
	}
	if ts < b.minTS {
		b.minTS = ts
	}
	// The most frequent kinds are dispatched here with no call before, so
	// that nothing is saved on the stack for them.
	kind := kindUnknown
	if i := md.Index(); uint(i) < uint(len(b.byIndex)) {
		switch kind = b.byIndex[i]; kind {
		case kindOther:
			return
		case kindAllocTick:
			b.addAllocTick(ev, uint8(min(md.Version, 255)))
			return
		}
	}
	// Thousands at the end of a trace, most of them not kept; tested
	// after the switch, which a case more would make cost more for the
	// kinds above.
	if kind == kindRundownMethod {
		b.addRundownMethod(ev, uint8(min(md.Version, 255)))
		return
	}
	b.addEvent(ev, md, kind, ts)
}

// addEvent is Add for the other kinds of events, and for those of a kind
// not classified yet (kindUnknown).
func (b *Builder) addEvent(ev *nettrace.Event, md *nettrace.Metadata, kind eventKind, ts int64) {
	if kind == kindUnknown {
		kind = b.classify(md)
	}
	// The GC suspensions (thousands in a trace) first, before the version
	// and the stack count the other kinds take.
	switch kind {
	case kindOther:
		return
	case kindSample:
		b.addSample(ev)
		return
	case kindSuspendBegin:
		// Only the Reason is needed: read in place when the payload has
		// the 10 bytes of versions 1 and later (u32 Reason first), as the
		// decoder would accept it.
		var reason uint32
		if pl := ev.Payload; md.Version >= 1 && len(pl) >= 10 {
			reason = le32(pl)
		} else {
			s, err := clrevents.DecodeGCSuspendEEBegin(pl, uint8(min(md.Version, 255)))
			if err != nil {
				b.decodeFailed(err)
				return
			}
			reason = s.Reason
		}
		b.suspending, b.suspendStart = true, ts
		b.suspendForGC = reason == 1 || reason == 6
		return
	case kindRestartEnd:
		if !b.suspending {
			return
		}
		b.suspending = false
		d := b.hdr.DurationOf(ts - b.suspendStart)
		if b.suspendForGC {
			b.gc.Pauses++
			b.gc.PauseTotal += d
			b.gc.PauseMax = max(b.gc.PauseMax, d)
		} else {
			b.gc.OtherSuspensions++
			b.gc.OtherSuspensionTotal += d
		}
		return
	}
	version := uint8(min(md.Version, 255))
	if kind == kindUser && ev.StackLen() > 0 {
		b.countEventStack(ev, 1)
	}
	switch kind {
	case kindMethod:
		if err := b.syms().symbols.AddMethodPayload(ev.Payload, version); err != nil {
			b.decodeFailed(err)
			return
		}
	case kindRundownMethod:
		b.addRundownMethod(ev, version)
	case kindModule:
		m, err := clrevents.DecodeModuleLoad(ev.Payload, version)
		if err != nil {
			b.decodeFailed(err)
			return
		}
		b.syms().symbols.AddModule(&m)
		if b.runtimeVersion == "" {
			b.runtimeVersion = versionFromPath(m.ModuleILPath)
		}
	case kindRuntimeInfo:
		if b.runtime == nil {
			ri, err := clrevents.DecodeRuntimeInformation(ev.Payload, version)
			if err != nil {
				b.decodeFailed(err)
				return
			}
			b.runtime = &ri
		}
	case kindProcessInfo:
		if b.commandLine == "" {
			b.commandLine = utf16z(ev.Payload)
		}
	case kindGCStart:
		// Only Depth and Reason are needed (u32s at 4 and 8): read in
		// place when the payload has the bytes the decoder needs for the
		// version (18 for version 1, 26 from 2), as it would accept it.
		var depth, reason uint32
		if pl := ev.Payload; version == 1 && len(pl) >= 18 || version >= 2 && len(pl) >= 26 {
			depth, reason = le32(pl[4:]), le32(pl[8:])
		} else {
			g, err := clrevents.DecodeGCStart(pl, version)
			if err != nil {
				b.decodeFailed(err)
				return
			}
			depth, reason = g.Depth, uint32(g.Reason)
		}
		b.gc.Collections[min(depth, 2)]++
		b.countGCReason(reason)
	case kindAllocTick:
		b.addAllocTick(ev, version)
	case kindException:
		b.addException(ev, version)
	case kindContentionStart:
		b.addContentionStart(ev, ts)
	case kindContentionStop:
		b.addContentionStop(ev, version, ts)
	}
}

// countGCReason counts a collection of the reason in gc.Reasons: in
// gcPending while the reason stays gcReason (and the count and reason fit
// in a byte: the Builder has two bytes left in its last word), then by
// name.
func (b *Builder) countGCReason(reason uint32) {
	if reason != uint32(b.gcReason) || b.gcPending == math.MaxUint8 {
		b.flushGCReason()
		if reason > math.MaxUint8 {
			b.gc.Reasons[clrevents.GCReason(reason).String()]++
			return
		}
		b.gcReason = uint8(reason)
	}
	b.gcPending++
}

// flushGCReason adds the collections pending in gcPending to gc.Reasons.
func (b *Builder) flushGCReason() {
	if b.gcPending > 0 {
		b.gc.Reasons[clrevents.GCReason(b.gcReason).String()] += int64(b.gcPending)
		b.gcPending = 0
	}
}

// countEventStack counts n events of other providers on the event's stack.
func (b *Builder) countEventStack(ev *nettrace.Event, n int64) {
	st := b.stackOf(ev)
	if st >= len(b.eventStack) {
		if b.eventStack == nil {
			b.eventStack = make([]int64, 0, 16) // not grown from 1 by append
		}
		b.eventStack = append(b.eventStack, make([]int64, st+1-len(b.eventStack))...)
	}
	b.eventStack[st] += n
}

// addRundownMethod adds a method of the rundown (MethodDCStartVerbose or
// MethodDCEndVerbose), Add calls it without going through addEvent, whose
// many cases cost a rundown of thousands of methods more than their filter.
func (b *Builder) addRundownMethod(ev *nettrace.Event, version uint8) {
	b.rundown = true
	b.rundownMethods++
	// The rundown comes after the stacks it explains: a method that no
	// stack seen so far points into is not kept (rundowns list every
	// loaded method, often 100 000 of them). MethodStartAddress at 16,
	// MethodSize at 24 of the 36 fixed bytes (clrevents.DecodeMethodRange),
	// read in place.
	pl := ev.Payload
	if len(pl) < 36 {
		_, err := clrevents.DecodeMethodRange(pl, version)
		b.decodeFailed(err)
		return
	}
	if start := le64(pl[16:]); !b.touched(start, start+uint64(le32(pl[24:]))) {
		return
	}
	if err := b.syms().symbols.AddMethodPayload(pl, version); err != nil {
		b.decodeFailed(err)
	}
}
