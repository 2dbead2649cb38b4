package profile

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/timeline"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
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
	// and a count by name is a map update (about 150 instructions).
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

type threadAcc struct {
	id uint64
	// kept is set when Config.Threads keeps the thread; sampled once it
	// has a sample (it is then in Builder.order).
	kept, sampled bool
	// cont is the thread's lock wait state (events.go), nil until it has
	// a contention event.
	cont        *contThread
	counts      countLog // stack<<1 | 1 for managed -> samples
	all         int64    // samples of any kind, for the period estimate
	changes     int64    // kept samples whose stack differs from the previous one
	first, last int64
	// timeline holds runs with their raw stacks (Finish gives it their
	// map to Stacks); runs is its last chunk, filled in place
	// (Timeline.grow), head the index in runs of the last run's head;
	// runSK is that run's stackKind (noRun before the first run),
	// runStart and runLast the ticks of its first and last sample, and
	// runExtra its samples after the first that are not in its words yet
	// (endRun writes them when the next run starts, or in Finish: a
	// sample of the run then adds to a count, not to a word of the chunk
	// found through runs and head).
	timeline          timeline.Data
	runs              []timeline.Word
	head              int
	runSK, runExtra   uint32
	runStart, runLast int64
	// firstStack is the stack of the earliest kept sample (at firstTS), -1
	// until one is kept.
	firstStack int
	firstKind  SampleKind
	firstTS    int64
	// recent are the thread's last few distinct stacks with the samples
	// not yet added to counts: a thread mostly repeats or alternates
	// between a few stacks, and comparing with them is cheaper than
	// building and hashing a key. hot is the slot of the previous sample,
	// next the slot a new stack replaces.
	recent        [recentStacks]recentStack
	nRecent       int
	hot, nextSlot int
	// hotID and hotRegion are the stack id and region of the previous
	// counted sample when it had a stack id (hotID 0 otherwise): a sample
	// with the same id has hot's stack (see nettrace.Event.StackRegion),
	// which it takes without looking the id up.
	hotID     uint32
	hotRegion uint64
}

// recentStacks is the number of stacks a thread remembers.
const recentStacks = 4

type recentStack struct {
	stack int
	pend  [2]int64 // samples not yet in counts: External, Managed
}

// flushSlot adds the pending samples of a recent stack to counts.
func (t *threadAcc) flushSlot(i int) {
	r := &t.recent[i]
	for k, n := range r.pend {
		if n > 0 {
			t.counts.add(int64(r.stack)<<1|int64(k), n)
			r.pend[k] = 0
		}
	}
}

// countLog records a thread's sample counts by key (stack<<1 | 1 for
// Managed) as its recent stacks are flushed: a word per flush, the key
// above the count (32 bits each: a stack index fits in 31, the stack store
// numbers them with int32), summed by stack in Finish, which sums the keys
// of a stack anyway. A thread flushes a key a few times (objver4: 3.9K
// flushes of 2.4K keys per conversion); a hash table by key cost about 100
// instructions a flush, a third of them in its growth. The words are kept
// in chunks, a first small one then chunks of logChunk words, so that
// growing copies nothing and leaves less room unused than doubling. A
// thread that cycles through more stacks than it remembers flushes at each
// sample: the log is then compacted (sorted, and summed by key) whenever it
// has doubled since the last compaction, so that it stays within about
// twice its keys, plus minCompact words.
type countLog struct {
	chunks    [][]uint64 // the full chunks
	words     []uint64   // the last chunk, filled in place
	n         int        // words in chunks
	compacted int        // words after the last compaction
}

const (
	// minCompact is the length under which a countLog is not compacted.
	minCompact = 1024
	// firstChunk and logChunk are the sizes of a countLog's first chunk
	// and of the others.
	firstChunk = 16
	logChunk   = 128
)

// add adds v (> 0) to the count of key k (0 <= k < 1<<32).
func (c *countLog) add(k, v int64) {
	if n := len(c.words); n < cap(c.words) && v <= math.MaxUint32 {
		c.words = c.words[:n+1]
		c.words[n] = uint64(k)<<32 | uint64(v)
		return
	}
	for ; v > math.MaxUint32; v -= math.MaxUint32 {
		c.push(uint64(k)<<32 | math.MaxUint32)
	}
	c.push(uint64(k)<<32 | uint64(v))
}

// push appends a word, starting a chunk when the last one is full, after
// compacting the log when it has doubled since the last compaction.
func (c *countLog) push(w uint64) {
	if len(c.words) == cap(c.words) {
		if c.n+len(c.words) >= max(minCompact, 2*c.compacted) {
			c.compact()
		}
		if len(c.words) == cap(c.words) {
			size := logChunk
			if c.words == nil {
				size = firstChunk
			} else {
				c.chunks = append(c.chunks, c.words)
				c.n += len(c.words)
			}
			c.words = make([]uint64, 0, size)
		}
	}
	c.words = append(c.words, w)
}

// compact sorts the log into one chunk and sums the words of each key,
// into more than one word when the sum does not fit in 32 bits. The chunk
// keeps the log's length as its capacity, room for the words to come.
func (c *countLog) compact() {
	all := make([]uint64, 0, c.n+len(c.words))
	for _, ch := range c.chunks {
		all = append(all, ch...)
	}
	all = append(all, c.words...)
	slices.Sort(all)
	out := all[:0]
	for _, w := range all {
		if m := len(out) - 1; m >= 0 && out[m]>>32 == w>>32 && out[m]&math.MaxUint32+w&math.MaxUint32 <= math.MaxUint32 {
			out[m] += w & math.MaxUint32
			continue
		}
		out = append(out, w)
	}
	c.chunks, c.words, c.n, c.compacted = nil, out, 0, len(out)
}

// seal puts the last chunk with the others: the log is then read from
// chunks.
func (c *countLog) seal() {
	if len(c.words) > 0 {
		c.chunks = append(c.chunks, c.words)
		c.n += len(c.words)
	}
	c.words = nil
}

// flush adds every pending sample to counts.
func (t *threadAcc) flush() {
	for i := range t.nRecent {
		t.flushSlot(i)
	}
}

// recentSlot returns the slot of the event's stack among the thread's
// recent stacks, -1 when it is not one of them.
func (b *Builder) recentSlot(t *threadAcc, ev *nettrace.Event) int {
	if t.nRecent == 0 {
		return -1
	}
	n := ev.StackLen()
	if b.sameStack(ev, n, t.recent[t.hot].stack) {
		return t.hot
	}
	for i := range t.nRecent {
		if i != t.hot && b.sameStack(ev, n, t.recent[i].stack) {
			return i
		}
	}
	return -1
}

// recentStack returns the slot of stack among the thread's recent stacks,
// -1 when it is not one of them. The slots not used yet hold stack -1
// (Builder.thread sets it), which no stack is: every slot is compared,
// without testing nRecent.
func (t *threadAcc) recentStack(stack int) int {
	if t.recent[t.hot].stack == stack {
		return t.hot
	}
	for i := range t.recent {
		if t.recent[i].stack == stack {
			return i
		}
	}
	return -1
}

// remember makes stack a recent stack and returns its slot, replacing
// (after flushing it) a stack other than the hot one.
func (t *threadAcc) remember(stack int) int {
	i := t.nRecent
	if i < recentStacks {
		t.nRecent++
	} else {
		i = t.nextSlot
		if i == t.hot {
			i = (i + 1) % recentStacks
		}
		t.nextSlot = (i + 1) % recentStacks
		t.flushSlot(i)
	}
	t.recent[i] = recentStack{stack: stack}
	return i
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

// addSample adds a sample event, and its timestamp to the time range (as
// Add does for the other events): through its thread's first and last,
// which Finish takes in, or in firstSample for a sample that stops there.
func (b *Builder) addSample(ev *nettrace.Event) {
	// The thread changes with nearly every sample: the cache is looked up
	// here, and no pointer is stored per sample (a store runs the
	// collector's write barrier while it marks).
	id := ev.ThreadID
	t := b.tcache[threadSlot(id)]
	if t == nil || t.id != id {
		t = b.thread(id)
	}
	var typ SampleKind
	if pl := ev.Payload; len(pl) == 4 && t.sampled { // the whole payload: a u32 Type
		typ = SampleKind(le32(pl))
	} else {
		var ok bool
		if typ, ok = b.firstSample(t, ev); !ok {
			return
		}
	}
	ts := ev.Timestamp
	t.all++
	// Branches rather than min and max: samples come nearly in time
	// order, so the stores are rare.
	if ts < t.first {
		t.first = ts
	}
	if ts > t.last {
		t.last = ts
	}
	// m is 1 for a Managed sample, 0 for any other: its index in pend
	// and its bit in a stackKind (stack<<1 | m).
	m := 0
	if typ == clrevents.SampleManaged {
		m = 1
	} else if b.cfg.ManagedOnly {
		return
	}
	// The stack id of the previous counted sample is hot's stack: its
	// slot stays.
	if id := ev.StackID; id != t.hotID || id == 0 || ev.StackRegion != t.hotRegion {
		var slot int
		if id != 0 {
			stack, ok := b.knownStack(ev)
			if !ok {
				stack = b.stackOfSlow(ev)
			}
			if slot = t.recentStack(stack); slot < 0 {
				slot = t.remember(stack)
			}
			t.hotID, t.hotRegion = id, ev.StackRegion
		} else {
			if slot = b.recentSlot(t, ev); slot < 0 {
				slot = t.remember(b.intern(ev))
			}
			t.hotID = 0
		}
		// A change is a stack other than the previous counted sample's;
		// the first counted sample is none: its slot, 0, is hot's zero
		// value.
		if slot != t.hot {
			t.changes++
		}
		t.hot = slot
	}
	r := &t.recent[uint(t.hot)%recentStacks] // hot is a slot: no bounds test
	stack := r.stack
	r.pend[m&1]++
	if ts < t.firstTS || t.firstStack < 0 {
		t.firstStack, t.firstKind, t.firstTS = stack, clrevents.SampleExternal+SampleKind(m), ts
	}
	if b.noRuns {
		return
	}
	sk := uint32(stack)<<1 | uint32(m) // the stackKind
	// A run has at most math.MaxUint32 samples (its extension's count).
	if sk == t.runSK && ts-t.runLast <= b.gapTicks && ts >= t.runLast && t.runExtra < math.MaxUint32-1 {
		t.runLast = ts
		t.runExtra++
		return
	}
	if b.runs >= b.cfg.MaxTimelineRuns || stack > math.MaxUint32>>2 {
		b.noRuns = true
		return
	}
	b.runs++
	if k := t.runExtra; k != 0 {
		// endRun's most frequent case, inline: the last run's
		// extension after it (the chunk's last word).
		if h, n := &t.runs[t.head], len(t.runs); h.A&1 == 0 && n < cap(t.runs) {
			t.runs = t.runs[:n+1]
			t.runs[n] = timeline.Word{A: k + 1, B: uint32(int32(h.B) >> 31)}
			h.A |= 1
			t.runExtra = 0
		} else {
			t.endRun()
		}
	}
	if d := ts - t.runStart; int64(int32(d)) == d && len(t.runs) < cap(t.runs) {
		// newRun's most frequent case, inline (before the first run
		// runs has no room). Appended in place: only the length is
		// stored, not the chunk's pointer (a store the collector's
		// write barrier would see while it marks).
		// The fields after the chunk: a store to them before would
		// make the compiler load the chunk's capacity again.
		n := len(t.runs)
		t.runs = t.runs[:n+1]
		t.runs[n] = timeline.Word{A: sk << 1, B: uint32(d)}
		t.runStart, t.runLast, t.head, t.runSK = ts, ts, n, sk
		return
	}
	t.newRun(sk, ts)
}

// firstSample is addSample for the first sample of a thread, a sample of
// a thread not kept, and one with more than a u32 Type: it adds the
// sample's timestamp to the time range, and reports the sample's Type
// and whether addSample goes on with it (a thread kept, a payload that
// decodes), then with the thread in Builder.order.
func (b *Builder) firstSample(t *threadAcc, ev *nettrace.Event) (SampleKind, bool) {
	ts := ev.Timestamp
	b.minTS, b.maxTS = min(b.minTS, ts), max(b.maxTS, ts)
	if !t.kept {
		return 0, false
	}
	var typ SampleKind
	if pl := ev.Payload; len(pl) == 4 { // the whole payload: a u32 Type
		typ = SampleKind(le32(pl))
	} else {
		s, err := clrevents.DecodeThreadSample(pl, uint8(min(ev.Metadata.Version, 255)))
		if err != nil {
			b.decodeFailed(err)
			return 0, false
		}
		typ = s.Type
	}
	if !t.sampled {
		t.sampled = true
		b.order = append(b.order, t)
	}
	return typ, true
}

// noRun is threadAcc.runSK before the first run: no stackKind (a
// timeline stops before its stacks need 31 bits).
const noRun = math.MaxUint32

// newRun appends a run of one sample of stackKind sk at ts to the thread's
// timeline, with an extension when its delta does not fit in an int32.
func (t *threadAcc) newRun(sk uint32, ts int64) {
	d := ts - t.runStart
	t.runStart, t.runLast, t.runSK = ts, ts, sk
	run := timeline.Word{A: sk << 1, B: uint32(d)}
	if int64(int32(d)) != d {
		run.A |= 1
		t.add(run, timeline.Word{A: 1, B: uint32(uint64(d) >> 32)})
		return
	}
	if len(t.runs) < cap(t.runs) {
		t.head = len(t.runs)
		t.runs = append(t.runs, run)
	} else {
		t.runs, t.head = t.timeline.Grow(t.runs, run, nil), 0
	}
}

// add appends a run with its extension x to the thread's timeline.
func (t *threadAcc) add(h, x timeline.Word) {
	if cap(t.runs)-len(t.runs) >= 2 {
		t.head = len(t.runs)
		t.runs = append(t.runs, h, x)
		return
	}
	t.runs, t.head = t.timeline.Grow(t.runs, h, &x), 0
}

// endRun writes the samples of the thread's last run counted in runExtra
// into its extension, which it adds when the run has none (one sample,
// and a delta that fits in an int32).
func (t *threadAcc) endRun() {
	count := t.runExtra + 1
	t.runExtra = 0
	h := t.runs[t.head]
	if h.A&1 != 0 {
		t.runs[t.head+1].A += count - 1
		return
	}
	h.A |= 1
	// The run is the chunk's last word: its extension follows it, in
	// place or, in a new chunk, with it (a run's words share a chunk).
	t.runs = t.runs[:t.head]
	t.add(h, timeline.Word{A: count, B: uint32(int32(h.B) >> 31)})
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

// sameStack reports whether the event's stack, of n frames, is the raw
// stack st (never the over-the-cap stack).
func (b *Builder) sameStack(ev *nettrace.Event, n int, st int) bool {
	frames := b.st.stack(st)
	if len(frames) != n || st == b.overCap {
		return false
	}
	for i, a := range frames {
		if ev.Frame(i) != b.st.addrs[a] {
			return false
		}
	}
	return true
}

// touched reports whether a stack address seen so far lies in [start, end]
// (end included: a caller's return address can point just past the call).
func (b *Builder) touched(start, end uint64) bool {
	return b.syms().addrs.any(start, end, b.st.addrs)
}

// intern returns the index of the event's stack among the distinct stacks
// seen so far. Looking up a known stack does not allocate.
func (b *Builder) intern(ev *nettrace.Event) int {
	b.stackKey(ev)
	return b.internKey()
}

// maxIDStacks bounds the stack ids of a region that idStacks holds.
const maxIDStacks = 1 << 16

// stackOf is intern for events read by one nettrace.Reader: an event with
// a stack id seen before in the same stack region gets the stack interned
// then, without its frames being read.
func (b *Builder) stackOf(ev *nettrace.Event) int {
	if s, ok := b.knownStack(ev); ok {
		return s
	}
	return b.stackOfSlow(ev)
}

// knownStack is stackOf's common case, small enough to be inlined: a stack
// id seen before in the region. Id 0 never has an entry: below idBase it
// wraps around past idStacks, and at idBase 0 its entry stays 0.
func (b *Builder) knownStack(ev *nettrace.Event) (int, bool) {
	if i := ev.StackID - b.idBase; i < uint32(len(b.idStacks)) && ev.StackRegion == b.idRegion {
		if s := b.idStacks[i]; s != 0 {
			return s - 1, true
		}
	}
	return 0, false
}

// stackOfSlow is stackOf for the stacks knownStack does not know.
func (b *Builder) stackOfSlow(ev *nettrace.Event) int {
	id := ev.StackID
	if id == 0 { // no stack, or NetPerf's inline stacks
		return b.intern(ev)
	}
	if ev.StackRegion != b.idRegion {
		clear(b.idStacks)
		b.idStacks = b.idStacks[:0]
		clear(b.idMap)
		b.idRegion, b.idBase = ev.StackRegion, id
	}
	i := id - b.idBase // ids below idBase wrap around to idMap
	if id < b.idBase {
		// A region's first event need not have its lowest id: idStacks
		// moves its base down, by at least its length (so that descending
		// ids cost amortised constant time), while it spans at most
		// maxIDStacks ids. The stacks of ids put in idMap before are found
		// again by intern if their id now falls in idStacks.
		gap := b.idBase - id
		room := min(max(gap, uint32(len(b.idStacks))), b.idBase, maxIDStacks-uint32(len(b.idStacks)))
		if room >= gap {
			b.idStacks = slices.Insert(b.idStacks, 0, make([]int, room)...)
			b.idBase -= room
			i = id - b.idBase
		}
	}
	if i < uint32(len(b.idStacks)) {
		if s := b.idStacks[i]; s != 0 {
			return s - 1
		}
	} else if b.idMap != nil {
		if s, ok := b.idMap[id]; ok {
			return s
		}
	}
	s := b.intern(ev)
	switch {
	case i < maxIDStacks:
		if n := len(b.idStacks); int(i) >= n {
			if int(i) < cap(b.idStacks) {
				// In place when there is room (ids mostly come one
				// after the other), the entries skipped zeroed (what
				// lies past the length is not relied upon).
				b.idStacks = b.idStacks[:i+1]
				clear(b.idStacks[n:i])
			} else {
				b.idStacks = append(b.idStacks, make([]int, int(i)+1-n)...)
			}
		}
		b.idStacks[i] = s + 1
	default:
		if b.idMap == nil {
			b.idMap = make(map[uint32]int)
		}
		b.idMap[id] = s
	}
	return s
}

// stackKey puts the event's stack in b.keyBuf.
func (b *Builder) stackKey(ev *nettrace.Event) {
	b.keyBuf = ev.AppendStack(b.keyBuf[:0])
}

// internKey interns the stack in b.keyBuf. A stack that would go over
// Config.MaxStacks or Config.MaxAddresses gets the over-the-cap stack.
func (b *Builder) internKey() int {
	h := stackHash(b.keyBuf)
	if i := b.st.find(b.keyBuf, h); i >= 0 {
		return i
	}
	if b.st.stacks()-min(b.overCap+1, 1) >= b.cfg.MaxStacks {
		b.cappedStacks = true
		return b.overCapStack()
	}
	// Unless the stack's addresses could take the set over its cap, they
	// are added in one pass; near the cap they are counted first.
	fresh := len(b.keyBuf)
	if len(b.st.addrs)+fresh > b.cfg.MaxAddresses {
		fresh = 0
		for _, a := range b.keyBuf {
			if !b.st.hasAddr(a) {
				fresh++
			}
		}
		if fresh > 0 && len(b.st.addrs)+fresh > b.cfg.MaxAddresses {
			b.cappedAddrs = true
			return b.overCapStack()
		}
	}
	b.st.reserveAddrs(fresh)
	return b.st.add(b.keyBuf, h, true)
}

// overCapStack returns the over-the-cap stack, interned on first use: a
// stack without addresses that is not looked up, so each stack over the cap
// is looked up again (and found again over the cap) rather than
// remembered.
func (b *Builder) overCapStack() int {
	if b.overCap < 0 {
		b.overCapAddrs = len(b.st.addrs)
		b.overCap = b.st.add(nil, 0, false)
	}
	return b.overCap
}

// Finish symbolises the stacks with every method range seen and returns the
// profile. The Builder must not be used afterwards.
func (b *Builder) Finish() *Profile {
	p := &Profile{
		PointerSize:       b.hdr.PointerSize,
		ManagedOnly:       b.cfg.ManagedOnly,
		ProcessID:         b.hdr.ProcessID,
		Runtime:           b.runtime,
		DecodeErrors:      b.decodeErrors,
		FirstDecodeError:  b.firstDecodeErr,
		TimelineTruncated: b.truncated(),
		Capped:            CapStats{Stacks: b.cappedStacks, Addresses: b.cappedAddrs},
	}
	p.Capped.MaxStacks, p.Capped.MaxAddresses = b.cfg.MaxStacks, b.cfg.MaxAddresses
	// The samples' time range, from their threads (addSample).
	for _, t := range b.order {
		b.minTS, b.maxTS = min(b.minTS, t.first), max(b.maxTS, t.last)
	}
	if b.minTS <= b.maxTS { // an event was added
		p.Start = b.hdr.TimeOf(b.minTS)
		p.Duration = b.hdr.DurationOf(b.maxTS - b.minTS)
	}
	p.Period = b.period()
	p.Symbols = SymbolStats{Methods: b.methods(), Rundown: b.rundown, RundownMethods: b.rundownMethods}
	if b.sym != nil {
		p.Symbols.Modules = len(b.sym.symbols.modules)
	}
	p.RuntimeVersion = b.runtimeVersion
	if b.runtime != nil {
		if v := versionFromPath(b.runtime.RuntimeDllPath); v != "" {
			p.RuntimeVersion = v
		} else if p.RuntimeVersion == "" && b.runtime.VMMajorVersion >= 5 && b.runtime.VMMajorVersion < 100 &&
			b.runtime.VMVersion() != "42.42.42.42" { // a runtime built from source says 42.42.42.42
			// From .NET 5 the CLR's major and minor version are the
			// product's (its build and revision are not).
			p.RuntimeVersion = strconv.Itoa(int(b.runtime.VMMajorVersion)) + "." + strconv.Itoa(int(b.runtime.VMMinorVersion))
		}
	}
	p.CommandLine = b.commandLine
	if p.CommandLine == "" && b.runtime != nil {
		p.CommandLine = b.runtime.CommandLine
	}
	p.ProcessName = processName(p.CommandLine)

	symOf, stackResolved := b.symbolise(p)

	// pos[stack] is 1 + the index of the stack in the thread's Samples (0:
	// not yet), reset after each thread; none without threads.
	var pos []int32
	if len(b.order) > 0 {
		pos = make([]int32, len(p.Stacks))
	}
	// sortSamples' scratch, sized once for the thread that may have the
	// most samples (at most one per word of its count log, and per stack).
	most := 0
	for _, t := range b.order {
		t.flush()
		t.counts.seal()
		most = max(most, min(t.counts.n, len(p.Stacks)))
	}
	keys := make([]uint64, 0, most)
	tmp := make([]StackSample, 0, most)
	// The timelines' clock (see Timeline), a copy of the header shared by
	// them all; made for the first.
	var clock *nettrace.Header
	for _, t := range b.order {
		if t.counts.n == 0 {
			continue // every sample of the thread was filtered out
		}
		th := &Thread{ID: t.id, StackChanges: t.changes,
			First: b.hdr.DurationOf(t.first - b.minTS), Last: b.hdr.DurationOf(t.last - b.minTS),
			FirstStack: -1, FirstKind: t.firstKind}
		if t.firstStack >= 0 {
			th.FirstStack = symOf[t.firstStack]
		}
		if t.all > 1 {
			th.Period = b.hdr.DurationOf(t.last-t.first) / time.Duration(t.all-1)
		}
		// The count log's words, summed by stack: a first pass gives each
		// stack its index in Samples (pos), in the order of the words
		// (sortSamples orders them), a second sums the counts.
		n := int32(0)
		for _, ch := range t.counts.chunks {
			for _, w := range ch {
				if stack := symOf[w>>33]; pos[stack] == 0 {
					n++
					pos[stack] = n
				}
			}
		}
		th.Samples = make([]StackSample, n)
		for _, ch := range t.counts.chunks {
			for _, w := range ch {
				raw, c := int(w>>33), int64(w&math.MaxUint32)
				stack := symOf[raw]
				s := &th.Samples[pos[stack]-1]
				s.Stack = stack
				if w&(1<<32) != 0 {
					s.Managed += c
				} else {
					s.External += c
				}
				if raw == b.overCap {
					p.Capped.Samples += c
				}
			}
		}
		for _, s := range th.Samples {
			th.Managed += s.Managed
			th.External += s.External
			n := s.Count()
			frames := int64(len(p.Stacks[s.Stack].Frames))
			p.Symbols.SampleFrames += n * frames
			p.Symbols.ResolvedSampleFrames += n * int64(stackResolved[s.Stack])
			p.Symbols.EventFrames += n * frames
			p.Symbols.ResolvedEventFrames += n * int64(stackResolved[s.Stack])
		}
		// At most 1% Managed: .NET Core 3.1 labels Managed the odd sample
		// of a thread blocked in a P/Invoke (one of 3 642 of the Hot
		// target's main thread in Console.ReadLine, in a run that depended
		// on nothing but the length of the application's path).
		all := th.Managed + th.External
		th.Waiting = th.Managed*100 <= all && th.StackChanges*100 <= all
		keys, tmp = sortSamples(th.Samples, pos, keys, tmp)
		for _, s := range th.Samples {
			pos[s.Stack] = 0
		}
		if t.runExtra != 0 {
			t.endRun()
		}
		t.timeline.Sync(t.runs)
		if clock == nil && len(t.timeline.Chunks) > 0 {
			clock = new(nettrace.Header)
			*clock = b.hdr
		}
		// Every sample of the thread is in its timeline (if it has one),
		// unless the timeline stopped (-1: count them).
		samples := all
		if b.truncated() {
			samples = -1
		}
		b.finishTimeline(&t.timeline, symOf, clock, samples)
		th.Timeline = weighted.TimelineOf(t.timeline)
		p.Threads = append(p.Threads, th)
	}
	for raw, n := range b.eventStack {
		s, resolved := symStack(symOf, stackResolved, raw)
		p.Symbols.EventFrames += n * int64(len(p.Stacks[s].Frames))
		p.Symbols.ResolvedEventFrames += n * int64(resolved)
	}
	if b.overCap >= 0 && b.overCap < len(b.eventStack) {
		p.Capped.Events = b.eventStack[b.overCap]
	}

	b.flushGCReason()
	p.GC = b.gc
	b.finishEvents(p, symOf, stackResolved)
	return p
}

// finishTimeline gives a timeline as a Builder recorded it the map from
// its runs' stacks (raw) to the Profile's Stacks (symOf), the number of
// its samples (samples, or counted when -1; none without runs, as
// without Config.Timeline), and the clock that makes its starts, in
// ticks, offsets from Profile.Start.
func (b *Builder) finishTimeline(tl *timeline.Data, symOf []int, clock *nettrace.Header, samples int64) {
	tl.Clock, tl.Base, tl.Stacks = clock, b.minTS, symOf
	switch {
	case len(tl.Chunks) == 0:
		samples = 0
	case samples < 0:
		_, samples = timeline.Count(tl.Chunks)
	}
	tl.Samples = samples
}

// sortSamples orders a thread's samples by count, largest first, then by
// stack. It sorts a uint64 per sample (the count's complement above the
// stack) rather than calling a comparison per pair, then places the samples
// by their stack's pos (1 + the sample's index). keys and tmp are scratch,
// returned for reuse.
func sortSamples(samples []StackSample, pos []int32, keys []uint64, tmp []StackSample) ([]uint64, []StackSample) {
	keys = keys[:0]
	for _, s := range samples {
		c := s.Count()
		if c >= 1<<32 || uint64(s.Stack) >= 1<<32 { // never seen; sorted all the same
			slices.SortFunc(samples, func(a, c StackSample) int {
				if a.Count() != c.Count() {
					return cmp.Compare(c.Count(), a.Count())
				}
				return cmp.Compare(a.Stack, c.Stack)
			})
			return keys, tmp
		}
		keys = append(keys, uint64(1<<32-1-c)<<32|uint64(s.Stack))
	}
	slices.Sort(keys)
	tmp = append(tmp[:0], samples...)
	for i, k := range keys {
		samples[i] = tmp[pos[uint32(k)]-1]
	}
	return keys, tmp
}

// symbolise resolves every distinct address once and turns the raw stacks
// into p.Frames and p.Stacks, merging raw stacks that resolve to the same
// frames. It returns the p.Stacks index of each raw stack and the number of
// resolved frames of each of p.Stacks; both nil when the trace has neither
// methods nor sampled threads: each raw stack is then the Stack of the same
// index, with no frame resolved (symStack reads them), and nothing else
// needs the tables.
func (b *Builder) symbolise(p *Profile) (symOf, stackResolved []int) {
	nStacks, nAddrs := b.st.stacks(), len(b.st.addrs)
	// Sized once (a frame per address at most, a stack per raw stack at
	// most, every stack's frames in one array), and the tables of uint32
	// in one allocation: frameOf[i], the frame of address i of the stack
	// store (resolver.resolve), methodFrame (see resolver), and slots,
	// which finds the symbolised stacks by their frames: index+1 in
	// p.Stacks per slot (0: empty), at most half full. Without methods
	// there are no tables: see symboliseUnresolved.
	merging := b.methods() > 0
	// Without methods symOf is the identity, and only the threads'
	// samples and timelines index it rather than calling symStack.
	var ints []int
	if merging || len(b.order) > 0 {
		ints = make([]int, 2*nStacks)
		symOf, stackResolved = ints[:nStacks:nStacks], ints[nStacks:nStacks]
	}
	overCap := min(b.overCap+1, 1) // the over-the-cap frame
	p.Frames = make([]weighted.Frame, 0, nAddrs+overCap)
	p.Stacks = make([]weighted.Stack, 0, nStacks)
	arena := make([]int, 0, b.st.totalFrames()+overCap)
	if !merging {
		b.symboliseUnresolved(p, arena)
		if symOf == nil {
			return nil, nil
		}
		for i := range symOf {
			symOf[i] = i
		}
		return symOf, ints[nStacks:]
	}
	nSlots := max(2, 1<<bits.Len(uint(2*nStacks)))
	tables := make([]uint32, nAddrs+b.methods()+nSlots)
	frameOf, methodFrame, slots := tables[:nAddrs:nAddrs], tables[nAddrs:len(tables)-nSlots:len(tables)-nSlots], tables[len(tables)-nSlots:]
	mask := uint64(nSlots - 1)
	// Resolved frames merge by module and name; an unresolved address is a
	// frame of its own.
	var names frameNamer
	names.text.Grow(24 * nAddrs)
	// merge is asked once per method an address resolves to and once for
	// the over-the-cap frame: its table, sized once for that many, never
	// fills.
	mergeable := min(nAddrs, b.methods()) + overCap
	r := resolver{b: b, p: p, names: &names, methodFrame: methodFrame, mergeable: mergeable}
	// The frames are numbered in order of first sight in the stacks taken
	// in order. Every address is in a stack, and the store's addresses
	// are in that order already (a stack's new addresses are added with
	// it), so they are resolved in a loop of their own, with the
	// over-the-cap frame between the addresses of the stacks before the
	// over-the-cap stack and the others; the loop over the stacks then
	// only looks frames up.
	overCapFrame := -1
	for ai := range frameOf {
		if ai == b.overCapAddrs && b.overCap >= 0 {
			overCapFrame = r.overCapFrame()
		}
		frameOf[ai] = r.resolve(int32(ai))
	}
	if b.overCap >= 0 && overCapFrame < 0 { // no address after it
		overCapFrame = r.overCapFrame()
	}
	for i := range nStacks {
		// The stack's frames are appended to the arena (sized for every
		// raw stack: it never grows), and cut off again when the stack is
		// one of p.Stacks already.
		lo := len(arena)
		h, resolved := uint64(0), 0
		if i == b.overCap {
			arena = append(arena, overCapFrame)
			h = uint64(overCapFrame) * 0x9E3779B97F4A7C15
		}
		for _, ai := range b.st.stack(i) {
			v := frameOf[ai]
			arena = append(arena, int(v>>1)-1)
			resolved += int(v & 1)
			h = (h ^ uint64(v)) * 0x9E3779B97F4A7C15
			h ^= h >> 29
		}
		frames := arena[lo:]
		h = (h ^ uint64(len(frames))) * 0x9E3779B97F4A7C15
		j := h >> 32 & mask
		for slots[j] != 0 && !slices.Equal(p.Stacks[slots[j]-1].Frames, frames) {
			j = (j + 1) & mask
		}
		si := int(slots[j]) - 1
		if si < 0 {
			si = len(p.Stacks)
			slots[j] = uint32(si + 1)
			p.Stacks = append(p.Stacks, weighted.Stack{Frames: frames[:len(frames):len(frames)]})
			stackResolved = append(stackResolved, resolved)
		} else {
			arena = arena[:lo]
		}
		symOf[i] = si
	}
	return symOf, stackResolved
}

// symboliseUnresolved is symbolise for a trace without methods: every
// address is an unresolved frame of its own, numbered as the stack store
// numbers the addresses but for the over-the-cap frame, made between the
// addresses of the stacks before the over-the-cap stack and the others
// (from cut on, address ai is frame ai+1). The raw stacks, distinct as
// lists of addresses, are then distinct as lists of frames: each is one of
// p.Stacks, in the same order, with no frame resolved, and no table maps
// the addresses to frames or finds the stacks by their frames. arena is
// sized for every stack's frames.
func (b *Builder) symboliseUnresolved(p *Profile, arena []int) {
	addrs := b.st.addrs
	// Every address is named by hexText: "0x" and its digits, as many as
	// its value needs (a user-space address takes 12 of the 16 a uint64
	// may), counted rather than taken at most.
	var names frameNamer
	n := 0
	for _, a := range addrs {
		n += 2 + max(1, (bits.Len64(a)+3)/4)
	}
	names.text.Grow(n)
	cut, overCapFrame := len(addrs), -1
	if b.overCap >= 0 {
		cut = b.overCapAddrs
	}
	names.unresolvedAll(p, addrs[:cut])
	if b.overCap >= 0 {
		names.scratch = append(names.scratch[:0], OverCapFrame...)
		overCapFrame = names.merge(p, weighted.Frame{}, len(OverCapFrame), 1)
	}
	names.unresolvedAll(p, addrs[cut:])
	p.Symbols.Addresses += len(addrs)
	for i := range b.st.stacks() {
		lo := len(arena)
		if i == b.overCap {
			arena = append(arena, overCapFrame)
		}
		// Indexed stores rather than append's capacity test per frame.
		st := b.st.stack(i)
		frames := arena[len(arena) : len(arena)+len(st)]
		for j, ai := range st {
			f := int(ai)
			if f >= cut {
				f++
			}
			frames[j] = f
		}
		arena = arena[:len(arena)+len(st)]
		p.Stacks = append(p.Stacks, weighted.Stack{Frames: arena[lo:len(arena):len(arena)]})
	}
}

// symStack returns the Stack of raw stack raw and its resolved frames
// from symbolise's tables (raw and 0 when they are nil).
func symStack(symOf, stackResolved []int, raw int) (stack, resolved int) {
	if symOf == nil {
		return raw, 0
	}
	stack = symOf[raw]
	return stack, stackResolved[stack]
}

// resolver turns the addresses of the raw stacks into frames for
// symbolise. methodFrame[m] is 1 + the frame of method m of the symbol
// table (0: not yet): every return address in a method is one frame.
type resolver struct {
	b           *Builder
	p           *Profile
	names       *frameNamer
	methodFrame []uint32
	mergeable   int
}

// overCapFrame makes the frame of the over-the-cap stack.
func (r *resolver) overCapFrame() int {
	r.names.scratch = append(r.names.scratch[:0], OverCapFrame...)
	return r.names.merge(r.p, weighted.Frame{}, len(OverCapFrame), r.mergeable)
}

// resolve makes the frame of address ai of the stack store and returns
// (1 + the frame)<<1 | 1 if it is resolved (0 if not): its entry in
// symbolise's frameOf.
func (r *resolver) resolve(ai int32) uint32 {
	b, p := r.b, r.p
	addr := b.st.addrs[ai]
	p.Symbols.Addresses++
	mi := b.sym.symbols.index(addr)
	var v uint32
	if mi >= 0 {
		p.Symbols.ResolvedAddresses++
		fi := int(r.methodFrame[mi]) - 1
		if fi < 0 {
			var n int
			r.names.scratch, n = b.sym.symbols.appendNames(r.names.scratch[:0], mi)
			start, module := b.sym.symbols.method(mi)
			fi = r.names.merge(p, weighted.Frame{Module: module, Resolved: true, Address: start}, n, r.mergeable)
			r.methodFrame[mi] = uint32(fi + 1)
		}
		v = uint32(fi+1)<<1 | 1
	} else {
		v = uint32(r.names.unresolved(p, addr)+1) << 1
	}
	return v
}

// frameNamer names the frames symbolise makes: every name and signature
// is written to one strings.Builder and is a substring of what it holds
// (rather than four strings per method, or a buffer copied into one string
// at the end: strings.Builder's String does not copy, and what it has
// written never changes, so a substring stays valid when it grows). The
// frames that merge by module and name are found through a hash table.
type frameNamer struct {
	text strings.Builder
	// scratch holds the name and signature of the frame being merged
	// (written to text only when the frame is new).
	scratch []byte
	// slots finds the mergeable frames: p.Frames index+1 per slot (0:
	// empty), at most half full; nil until the first merge.
	slots []int32
	seed  maphash.Seed
}

// merge returns the frame of f's module whose name is scratch[:nameEnd]
// and whose signature is the rest of scratch, adding f so named when there
// is none. most bounds the frames merge is asked for (it sizes the table).
func (fn *frameNamer) merge(p *Profile, f weighted.Frame, nameEnd, most int) int {
	if fn.slots == nil {
		fn.seed = maphash.MakeSeed()
		fn.slots = make([]int32, max(64, 1<<bits.Len(uint(2*most))))
	}
	name := fn.scratch[:nameEnd]
	mask := uint64(len(fn.slots) - 1)
	j := maphash.Bytes(fn.seed, name) & mask
	for ; fn.slots[j] != 0; j = (j + 1) & mask {
		if g := &p.Frames[fn.slots[j]-1]; g.Name == string(name) && g.Module == f.Module {
			return int(fn.slots[j] - 1)
		}
	}
	f.Name, f.Signature = fn.add(nameEnd)
	fi := len(p.Frames)
	p.Frames = append(p.Frames, f)
	fn.slots[j] = int32(fi + 1)
	return fi
}

// add writes scratch to text and returns its name (scratch[:nameEnd]) and
// signature (the rest) as substrings of text.
func (fn *frameNamer) add(nameEnd int) (name, signature string) {
	fn.text.Write(fn.scratch)
	all := fn.text.String()
	s := all[len(all)-len(fn.scratch):]
	return s[:nameEnd], s[nameEnd:]
}

// unresolved adds the frame of an address no method holds, named by the
// address in hex, and returns its index.
func (fn *frameNamer) unresolved(p *Profile, addr uint64) int {
	fn.unresolvedAll(p, []uint64{addr})
	return len(p.Frames) - 1
}

// unresolvedAll adds the frame of each of addrs, addresses no method
// holds, named by the address in hex. The frames are filled in place in
// p.Frames grown once (symbolise sized it): appending a Frame literal
// copied all 64 bytes of it, through the write barrier while the
// collector marks. A name is written once into the names' text.
func (fn *frameNamer) unresolvedAll(p *Profile, addrs []uint64) {
	fi := len(p.Frames)
	p.Frames = slices.Grow(p.Frames, len(addrs))[:fi+len(addrs)]
	frames := p.Frames[fi:]
	for k, a := range addrs {
		buf, i := hexText(a)
		fn.text.Write(buf[i:])
		all := fn.text.String()
		f := &frames[k]
		f.Name, f.Address = all[len(all)-(len(buf)-i):], a
	}
}

// appendHex appends "0x" and v in lower-case hex, as
// strconv.AppendUint(append(b, "0x"...), v, 16) does, without a loop per
// digit (an unresolved frame is named so for each address): all 16 digits
// are made eight at a time, then the leading zeros skipped.
func appendHex(b []byte, v uint64) []byte {
	buf, i := hexText(v)
	return append(b, buf[i:]...)
}

// hexText returns appendHex's text of v as buf[i:].
func hexText(v uint64) (buf [18]byte, i int) {
	binary.BigEndian.PutUint64(buf[2:], hexDigits8(uint32(v>>32)))
	binary.BigEndian.PutUint64(buf[10:], hexDigits8(uint32(v)))
	i = 16 - max(1, (bits.Len64(v)+3)/4) // the first digit is buf[i+2]
	buf[i], buf[i+1] = '0', 'x'
	return buf, i
}

// hexDigits8 returns the eight hex digits of x, the least significant in
// the low byte: each nibble spread into a byte of its own, then 0-9 offset
// to '0'-'9' and 10-15 to 'a'-'f' (n+6 carries into bit 4 exactly when
// n >= 10; no byte overflows into the next).
func hexDigits8(x uint32) uint64 {
	y := uint64(x)
	y = (y | y<<16) & 0x0000FFFF0000FFFF
	y = (y | y<<8) & 0x00FF00FF00FF00FF
	y = (y | y<<4) & 0x0F0F0F0F0F0F0F0F
	letters := (y + 0x0606060606060606) >> 4 & 0x0101010101010101
	return y + 0x3030303030303030 + letters*('a'-'0'-10)
}

// sites groups stack counts by the top resolved frame of each stack.
func (p *Profile) sites(stacks map[int]int64) []Site {
	byFrame := make(map[int]int64)
	for s, n := range stacks {
		top := -1
		for _, f := range p.Stacks[s].Frames {
			if p.Frames[f].Resolved {
				top = f
				break
			}
		}
		byFrame[top] += n
	}
	out := make([]Site, 0, len(byFrame))
	for f, n := range byFrame {
		out = append(out, Site{Frame: f, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Frame < out[j].Frame
	})
	return out
}

// period is the median of the threads' mean sampling intervals, or the
// trace's expected rate.
func (b *Builder) period() time.Duration {
	var ps []time.Duration
	for _, t := range b.order {
		if t.all > 1 && t.last > t.first {
			ps = append(ps, b.hdr.DurationOf(t.last-t.first)/time.Duration(t.all-1))
		}
	}
	if len(ps) > 0 {
		slices.Sort(ps)
		return ps[len(ps)/2]
	}
	if b.hdr.ExpectedCPUSamplingRate > 0 {
		return time.Duration(b.hdr.ExpectedCPUSamplingRate)
	}
	return time.Millisecond
}

// Read builds a profile from a whole nettrace stream. On damaged or
// truncated input it returns the profile of the events before the damage
// together with the reader's error (a *nettrace.FormatError).
func Read(r io.Reader, cfg Config) (*Profile, error) {
	// On several cores, the event blocks past the first 8 MiB of a trace
	// of short events are decoded on all of them (parallel.go); the
	// profile is the same.
	return read(r, cfg, nettrace.ParallelConfig{})
}
