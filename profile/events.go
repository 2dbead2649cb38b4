package profile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"sort"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
)

// EventStacks are the events of one kind that a profile weighs besides the
// CPU samples (allocation ticks, lock waits, exceptions), aggregated by
// thread, stack and leaf.
type EventStacks struct {
	// Leaves name the pseudo-frames the events add below their stack: the
	// allocated type of an allocation tick, the type of an exception.
	Leaves []string
	// Samples has one entry per thread, stack and leaf, by thread id, then
	// largest Value first.
	Samples []EventSample
	// Count and Value total the samples.
	Count, Value int64
}

// EventSample is what the events of one thread with one stack and leaf
// add up to.
type EventSample struct {
	Thread uint64
	// Stack indexes Profile.Stacks: the stack of the events, leaf first.
	Stack int
	// Leaf indexes EventStacks.Leaves, -1 for none.
	Leaf int
	// Count is the number of events.
	Count int64
	// Value is what they weigh: bytes for allocation ticks, nanoseconds for
	// lock waits, the count for exceptions.
	Value int64
	// Objects is, for allocation ticks, the estimated number of objects
	// allocated (see AllocStats); 0 when the ticks do not report object
	// sizes.
	Objects int64
}

// AllocStats says what the allocation ticks of a trace can tell.
type AllocStats struct {
	// Ticks counts the GCAllocationTick events; Sized those that report
	// the size of the object that triggered them (version 4, .NET 5 and
	// later). Objects are estimated only when every tick is Sized.
	Ticks, Sized int64
}

// ObjectsKnown reports whether the ticks allow estimating object counts.
func (a AllocStats) ObjectsKnown() bool { return a.Ticks > 0 && a.Sized == a.Ticks }

// Wait is one lock wait of a thread in time order (Profile.Waits).
type Wait struct {
	// Start is the offset of the ContentionStart event from Profile.Start.
	Start    time.Duration
	Duration time.Duration
	Stack    int
}

// ThreadWaits are the lock waits of one thread in time order.
type ThreadWaits struct {
	Thread uint64
	Waits  []Wait
}

// typeNotReported is the leaf frame of an event that names no type
// (GCAllocationTick before version 2, ExceptionThrown version 0).
const typeNotReported = "[type not reported]"

// eventKey is what events are aggregated by while the stacks are raw.
type eventKey struct {
	thread      uint64
	stack, leaf int32
}

type eventVal struct {
	count, value, objects int64
}

// eventAcc aggregates events by eventKey. Events mostly repeat recent
// keys (a loop allocating, a thread throwing), which a direct-mapped table
// finds before the map is asked.
type eventAcc struct {
	index map[eventKey]int32
	keys  []eventKey
	vals  []eventVal
	// recentKeys holds index+1 of a recent key per slot (0: none); nil
	// until the first event.
	recentKeys *[eventSlots]int32
	// leaves are the leaf names, leafIndex their indexes.
	leaves    []string
	leafIndex map[string]int32
	// recent caches the leaves of raw type names seen (as UTF-16 bytes)
	// with their type id, so a name that repeats is not decoded: a name
	// with a type id (an allocation tick's) in the slot of its id, one
	// without (an exception's) in one of the first recentNoID slots in
	// turn. nil until the first name.
	recent *[leafSlots]recentLeaf
	next   int
	// layout is that of the last allocation tick read through
	// parseAllocTick (allocTick); its nameOff is 0 until then, and recent
	// is set once it is not.
	layout tickLayout
}

type recentLeaf struct {
	id   uint64
	raw  string
	leaf int32
	ok   bool
}

// leafSlots is the size of eventAcc's cache of type names, a power of two;
// recentNoID the slots that names without a type id take in turn.
const (
	leafSlots  = 64
	recentNoID = 8
)

// leafSlot is the cache slot of a type id (Fibonacci hashing).
func leafSlot(id uint64) int { return int((id * 0x9E3779B97F4A7C15) >> (64 - 6)) }

// eventSlots is the size of eventAcc's table of recent keys, a power of
// two.
const eventSlots = 256

// add adds an event of key k and returns the key's index.
func (a *eventAcc) add(k eventKey, value, objects int64) int32 {
	if a.recentKeys == nil {
		a.recentKeys = new([eventSlots]int32)
	}
	h := (k.thread>>2 ^ k.thread ^ uint64(k.stack)*0x9E3779B1 ^ uint64(k.leaf)<<11) & (eventSlots - 1)
	i := a.recentKeys[h] - 1
	if i < 0 || a.keys[i] != k {
		var ok bool
		if i, ok = a.index[k]; !ok {
			if a.index == nil {
				a.index = make(map[eventKey]int32)
			}
			i = int32(len(a.keys))
			a.index[k] = i
			a.keys = append(a.keys, k)
			a.vals = append(a.vals, eventVal{})
		}
		a.recentKeys[h] = i + 1
	}
	a.addAt(i, value, objects)
	return i
}

// addAt adds an event to the key of index i.
func (a *eventAcc) addAt(i int32, value, objects int64) {
	v := &a.vals[i]
	v.count++
	v.value += value
	v.objects += objects
}

// leaf interns a leaf name.
func (a *eventAcc) leaf(name string) int32 {
	if i, ok := a.leafIndex[name]; ok {
		return i
	}
	if a.leafIndex == nil {
		a.leafIndex = make(map[string]int32)
	}
	i := int32(len(a.leaves))
	a.leaves = append(a.leaves, name)
	a.leafIndex[name] = i
	return i
}

// rawLeaf interns a leaf named by UTF-16LE bytes (and a type id, 0 when the
// event has none), decoding the name only when it is not one of the recent
// ones.
func (a *eventAcc) rawLeaf(id uint64, raw []byte) int32 {
	if a.recent == nil {
		a.recent = new([leafSlots]recentLeaf)
	}
	slot := leafSlot(id)
	if id == 0 {
		for i := range recentNoID {
			r := &a.recent[i]
			if r.ok && r.id == 0 && r.raw == string(raw) {
				return r.leaf
			}
		}
		slot = a.next
		a.next = (a.next + 1) % recentNoID
	} else if r := &a.recent[slot]; r.ok && r.id == id && r.raw == string(raw) {
		return r.leaf
	}
	name := wire.DecodeUTF16(raw)
	if name == "" {
		name = typeNotReported
	}
	leaf := a.leaf(name)
	a.recent[slot] = recentLeaf{id: id, raw: string(raw), leaf: leaf, ok: true}
	return leaf
}

// contThread is a thread's lock wait in progress and, with a timeline, its
// waits so far (start in raw ticks).
type contThread struct {
	pending bool
	start   int64
	stack   int32
	waits   []rawWait
}

type rawWait struct {
	start, dur int64 // ticks, nanoseconds
	stack      int32
}

// eventState is what a Builder keeps of the events other than samples.
// events returns the Builder's eventState, made by the first event that
// needs it: most conversions have none (a profile of wall time skips them),
// and the state is 504 bytes of the Builder every conversion allocates.
func (b *Builder) events() *eventState {
	if b.ev == nil {
		b.ev = new(eventState)
	}
	return b.ev
}

type eventState struct {
	allocs, thrown, waits eventAcc
	alloc                 AllocStats
	lastTick              lastTick
	contOrder             []*threadAcc // the threads with contention events, by first one
	stopsWithoutStart     int64
	// contention is only counted with a thread's contThread, which makes
	// the eventState (it was 72 bytes of the Builder).
	contention ContentionStats
}

// lastTick is the key of the last allocation tick, its stack by stack id
// (0: none) and region: a tick repeats the key of the one before nearly
// half of the time (objver4: 43%), and is then added to it without its
// stack being looked up or its key hashed. A stack id of a region always
// stands for the same stack (see Builder.knownStack).
type lastTick struct {
	region, thread uint64
	stackID        uint32
	leaf           int32
	i              int32 // the key's index in eventState.allocs
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// ptrAt reads a pointer of ps bytes (4 or 8).
func ptrAt(b []byte, ps int) uint64 {
	if ps == 4 {
		return uint64(le32(b))
	}
	return le64(b)
}

// utf16zLen returns the length in bytes of the NUL-terminated UTF-16 string
// at the start of b (without its NUL), -1 when it has no NUL.
func utf16zLen(b []byte) int {
	for off := 0; off+1 < len(b); {
		i := bytes.Index(b[off:], utf16NUL)
		if i < 0 {
			return -1
		}
		if (off+i)&1 == 0 {
			return off + i
		}
		off += i + 1 // two zero bytes across two characters (U+xx00 after U+00xx)
	}
	return -1
}

var utf16NUL = []byte{0, 0}

// kept reports whether the thread's events are kept (Config.Threads).
func (b *Builder) kept(thread uint64) bool {
	if b.keep == nil {
		return true
	}
	return b.thread(thread).kept
}

// allocTick is what an allocation profile reads of a GCAllocationTick.
type allocTick struct {
	amount, size, typeID uint64
	name                 []byte // the type name, UTF-16LE without its NUL
}

// parseAllocTick reads a GCAllocationTick of version 2 or later in place,
// without allocating. ok is false for anything else (an older version, a
// pointer size other than 4 or 8, a payload shorter than the layout): the
// generated decoder then decides, and reports what is wrong.
func parseAllocTick(pl []byte, version uint8, ps int) (t allocTick, ok bool) {
	if version < 2 || (ps != 4 && ps != 8) || len(pl) < 18+ps {
		return t, false
	}
	// AllocationAmount u32, AllocationKind u32, ClrInstanceID u16,
	// AllocationAmount64 u64, TypeID ptr, TypeName UTF-16z, HeapIndex u32,
	// Address ptr (v3), ObjectSize u64 (v4).
	name := pl[18+ps:]
	n := utf16zLen(name)
	if n < 0 {
		return t, false
	}
	return allocTickAt(pl, name, n, ptrAt(pl[18:], ps), version, ps)
}

// allocTickAt completes parseAllocTick once the type name (name[:n], its
// NUL at name[n:n+2]) is known: it checks that the payload holds the fields
// after the name (HeapIndex u32, Address ptr from v3, ObjectSize u64 from
// v4) and reads the tick.
func allocTickAt(pl, name []byte, n int, id uint64, version uint8, ps int) (t allocTick, ok bool) {
	rest := name[n+2:]
	need := 4
	if version >= 3 {
		need += ps
	}
	if version >= 4 {
		need += 8
	}
	if len(rest) < need {
		return t, false
	}
	t = allocTick{amount: le64(pl[10:]), typeID: id, name: name[:n]}
	if version >= 4 {
		t.size = le64(rest[4+ps:])
	}
	return t, true
}

// parseExceptionType reads the type of an ExceptionThrown of version 1 or
// later in place (UTF-16LE without its NUL), checking that the payload
// holds the rest of the layout; ok is false otherwise.
func parseExceptionType(pl []byte, version uint8, ps int) (name []byte, ok bool) {
	if version < 1 || (ps != 4 && ps != 8) {
		return nil, false
	}
	// ExceptionType UTF-16z, ExceptionMessage UTF-16z, ExceptionEIP ptr,
	// ExceptionHRESULT u32, ExceptionFlags u16, ClrInstanceID u16.
	n := utf16zLen(pl)
	if n < 0 {
		return nil, false
	}
	m := utf16zLen(pl[n+2:])
	if m < 0 || len(pl) < n+2+m+2+ps+8 {
		return nil, false
	}
	return pl[:n], true
}

// tickLayout is where the fields of a GCAllocationTick of one version and
// pointer size are: the type name starts at nameOff, and tail bytes follow
// its NUL (HeapIndex u32, Address ptr from v3, ObjectSize u64 from v4),
// ObjectSize at sizeOff of them (0: not in this version).
type tickLayout struct {
	version       uint8
	ps            int
	nameOff, tail int
	sizeOff       int
}

// layoutOf returns the layout of a tick of version 2 or later with a
// pointer size of 4 or 8.
func layoutOf(version uint8, ps int) tickLayout {
	l := tickLayout{version: version, ps: ps, nameOff: 18 + ps, tail: 4}
	if version >= 3 {
		l.tail += ps
	}
	if version >= 4 {
		l.sizeOff = l.tail
		l.tail += 8
	}
	return l
}

// allocTick reads a GCAllocationTick in place: its AllocationAmount, its
// ObjectSize (0 before version 4) and the leaf of its type. When the type
// id is one of the recent ones and the payload has its name there, the name
// is compared, not scanned or decoded. ok is false when the payload is not
// one parseAllocTick takes.
//
// The common case (a recent type, the layout of the previous tick) is
// written to keep few values live across the name's comparison: it is most
// of the cost of a tick, and the report reads every tick of a trace.
func (a *eventAcc) allocTick(pl []byte, version uint8, ps int) (amount, size uint64, leaf int32, ok bool) {
	l := &a.layout
	if l.nameOff != 0 && l.version == version && l.ps == ps && len(pl) >= l.nameOff {
		var id uint64
		if ps == 8 {
			id = le64(pl[18:])
		} else {
			id = uint64(le32(pl[18:]))
		}
		r := &a.recent[leafSlot(id)]
		// The cached name has no NUL: one that matches ends here too.
		if end := l.nameOff + len(r.raw); r.id == id && id != 0 && end+2+l.tail <= len(pl) && pl[end]|pl[end+1] == 0 {
			amount = le64(pl[10:])
			if l.sizeOff > 0 {
				size = le64(pl[end+2+l.sizeOff:])
			}
			if leaf = r.leaf; string(pl[l.nameOff:end]) == r.raw {
				return amount, size, leaf, true
			}
		}
	}
	t, ok := parseAllocTick(pl, version, ps)
	if !ok {
		return 0, 0, 0, false
	}
	if a.recent == nil || l.version != version || l.ps != ps {
		// The fast path needs the cache and the layout: both set once (a
		// trace has one pointer size, and its ticks one version).
		*l = layoutOf(version, ps)
	}
	return t.amount, t.size, a.rawLeaf(t.typeID, t.name), true
}

// addAllocTick adds a GCAllocationTick. The payload is read in place: the
// type name is decoded only when it is not one of the recent ones, and
// anything unexpected goes to the generated decoder, which reports it.
func (b *Builder) addAllocTick(ev *nettrace.Event, version uint8) {
	if !b.kept(ev.ThreadID) {
		return
	}
	e := b.events()
	amount, size, leaf, ok := e.allocs.allocTick(ev.Payload, version, b.hdr.PointerSize)
	if !ok {
		a, err := clrevents.DecodeGCAllocationTick(ev.Payload, version, b.hdr.PointerSize)
		if err != nil {
			b.decodeFailed(err)
			return
		}
		amount, size = a.AllocationAmount, a.ObjectSize
		name := a.TypeName
		if name == "" {
			name = typeNotReported
		}
		leaf = e.allocs.leaf(name)
	}
	e.alloc.Ticks++
	amount = min(amount, 1<<62)
	var objects int64
	if size > 0 {
		e.alloc.Sized++
		// The tick stands for amount bytes of allocation, taken to be
		// objects the size of the one that triggered it.
		objects = int64(max(1, (amount+size/2)/size))
	}
	l := &e.lastTick
	if id := ev.StackID; id != 0 && id == l.stackID && leaf == l.leaf && ev.ThreadID == l.thread && ev.StackRegion == l.region {
		e.allocs.addAt(l.i, int64(amount), objects)
		return
	}
	l.i = e.allocs.add(eventKey{ev.ThreadID, int32(b.stackOf(ev)), leaf}, int64(amount), objects)
	l.region, l.thread, l.stackID, l.leaf = ev.StackRegion, ev.ThreadID, ev.StackID, leaf
}

// addException adds an ExceptionThrown.
func (b *Builder) addException(ev *nettrace.Event, version uint8) {
	if !b.kept(ev.ThreadID) {
		return
	}
	e := b.events()
	var leaf int32
	if raw, ok := parseExceptionType(ev.Payload, version, b.hdr.PointerSize); ok {
		leaf = e.thrown.rawLeaf(0, raw)
	} else {
		x, err := clrevents.DecodeExceptionThrown(ev.Payload, version, b.hdr.PointerSize)
		if err != nil {
			b.decodeFailed(err)
			return
		}
		name := x.ExceptionType
		if name == "" {
			name = typeNotReported
		}
		leaf = e.thrown.leaf(name)
	}
	e.thrown.add(eventKey{ev.ThreadID, int32(b.stackOf(ev)), leaf}, 1, 0)
}

// contThread returns the contention state of a thread.
func (b *Builder) contThread(thread uint64) *contThread {
	t := b.thread(thread)
	if t.cont == nil {
		t.cont = &contThread{}
		e := b.events()
		e.contOrder = append(e.contOrder, t)
	}
	return t.cont
}

// addContentionStart starts a lock wait of the event's thread. A start
// while one is pending (a stop lost) ends the pending one there.
func (b *Builder) addContentionStart(ev *nettrace.Event, ts int64) {
	if !b.kept(ev.ThreadID) {
		return
	}
	c := b.contThread(ev.ThreadID)
	b.ev.contention.Count++ // contThread made b.ev
	if c.pending {
		b.endWait(ev.ThreadID, c, ts, b.hdr.DurationOf(ts-c.start))
	}
	c.pending, c.start, c.stack = true, ts, int32(b.stackOf(ev))
}

// addContentionStop ends the lock wait of the event's thread. Version 1
// (sent by .NET Core 3.1 already) says how long the wait was (DurationNs);
// with version 0 the wait is the time from the thread's ContentionStart. A stop without a start (the wait began before
// the trace) counts with its own stack when it has a duration, and is only
// counted in ContentionStats.StopsWithoutStart otherwise.
func (b *Builder) addContentionStop(ev *nettrace.Event, version uint8, ts int64) {
	if !b.kept(ev.ThreadID) {
		return
	}
	s, err := clrevents.DecodeContentionStop(ev.Payload, version)
	if err != nil {
		b.decodeFailed(err)
		return
	}
	c := b.contThread(ev.ThreadID)
	var d time.Duration
	switch {
	case c.pending && s.DurationNs > 0 && s.DurationNs < 1<<62:
		d = time.Duration(s.DurationNs)
	case c.pending:
		d = b.hdr.DurationOf(ts - c.start)
	case s.DurationNs > 0 && s.DurationNs < 1<<62:
		b.ev.contention.Count++ // contThread made b.ev
		d = time.Duration(s.DurationNs)
		c.start, c.stack = ts-b.ticksOf(d), int32(b.stackOf(ev))
	default:
		b.events().stopsWithoutStart++
		return
	}
	b.endWait(ev.ThreadID, c, c.start, d)
}

// ticksOf converts a duration to the trace's ticks.
func (b *Builder) ticksOf(d time.Duration) int64 {
	f := b.hdr.TickFrequency
	if f <= 0 {
		return int64(d)
	}
	return int64(float64(d) * float64(f) / 1e9)
}

// endWait records a wait of c's thread that started at start (ticks).
func (b *Builder) endWait(thread uint64, c *contThread, start int64, d time.Duration) {
	c.pending = false
	d = max(d, 0)
	e := b.events()
	e.contention.Total += d
	e.contention.Max = max(e.contention.Max, d)
	e.waits.add(eventKey{thread, c.stack, -1}, int64(d), 0)
	if b.noRuns {
		return
	}
	if b.runs >= b.cfg.MaxTimelineRuns {
		b.noRuns = true
		return
	}
	b.runs++
	c.waits = append(c.waits, rawWait{start: start, dur: int64(d), stack: c.stack})
}

// finishEvents ends the waits still pending (counted up to the end of the
// trace), symbolises the events' stacks and fills the profile's event
// measures and summaries.
func (b *Builder) finishEvents(p *Profile, symOf, stackResolved []int) {
	var none eventState // for a trace without any of these events
	e := b.ev
	if e == nil {
		e = &none
	}
	for _, t := range e.contOrder {
		if c := t.cont; c.pending {
			d := b.hdr.DurationOf(b.maxTS - c.start)
			e.contention.Unfinished++
			e.contention.UnfinishedTotal += max(d, 0)
			b.endWait(t.id, c, c.start, d)
		}
	}
	e.contention.StopsWithoutStart = e.stopsWithoutStart

	fill := func(a *eventAcc) EventStacks {
		es := EventStacks{Leaves: a.leaves}
		if len(a.keys) == 0 {
			return es
		}
		merged := make(map[eventKey]int, len(a.keys))
		for i, k := range a.keys {
			v := a.vals[i]
			raw := int(k.stack)
			if raw == b.overCap {
				p.Capped.Events += v.count
			}
			s, resolved := symStack(symOf, stackResolved, raw)
			p.Symbols.EventFrames += v.count * int64(len(p.Stacks[s].Frames))
			p.Symbols.ResolvedEventFrames += v.count * int64(resolved)
			key := eventKey{k.thread, int32(s), k.leaf}
			j, ok := merged[key]
			if !ok {
				j = len(es.Samples)
				merged[key] = j
				es.Samples = append(es.Samples, EventSample{Thread: k.thread, Stack: s, Leaf: int(k.leaf)})
			}
			e := &es.Samples[j]
			e.Count += v.count
			e.Value += v.value
			e.Objects += v.objects
			es.Count += v.count
			es.Value += v.value
		}
		slices.SortFunc(es.Samples, func(x, y EventSample) int {
			return cmp.Or(cmp.Compare(x.Thread, y.Thread), cmp.Compare(y.Value, x.Value),
				cmp.Compare(x.Stack, y.Stack), cmp.Compare(x.Leaf, y.Leaf))
		})
		return es
	}
	p.AllocStacks = fill(&e.allocs)
	p.ExceptionStacks = fill(&e.thrown)
	p.ContentionStacks = fill(&e.waits)
	p.Allocs = e.alloc
	if !p.Allocs.ObjectsKnown() {
		for i := range p.AllocStacks.Samples {
			p.AllocStacks.Samples[i].Objects = 0
		}
	}

	// Summaries by type, and sites.
	type byLeaf struct {
		count, value, objects int64
		stacks                map[int]int64
	}
	// group sums the samples by leaf, and with sites their counts by stack.
	group := func(es EventStacks, sites bool) []byLeaf {
		out := make([]byLeaf, len(es.Leaves))
		for _, s := range es.Samples {
			l := &out[s.Leaf]
			l.count += s.Count
			l.value += s.Value
			l.objects += s.Objects
			if !sites {
				continue
			}
			if l.stacks == nil {
				l.stacks = make(map[int]int64)
			}
			l.stacks[s.Stack] += s.Count
		}
		return out
	}
	// The leaves are distinct names: each sort has one order.
	for i, l := range group(p.AllocStacks, false) {
		if l.count > 0 {
			p.GC.Allocations = append(p.GC.Allocations, TypeAllocation{Type: p.AllocStacks.Leaves[i], Bytes: uint64(l.value), Ticks: l.count, Objects: l.objects})
		}
	}
	slices.SortFunc(p.GC.Allocations, func(a, c TypeAllocation) int {
		return cmp.Or(cmp.Compare(c.Bytes, a.Bytes), cmp.Compare(a.Type, c.Type))
	})
	for i, l := range group(p.ExceptionStacks, true) {
		if l.count > 0 {
			p.Exceptions = append(p.Exceptions, ExceptionStats{Type: p.ExceptionStacks.Leaves[i], Count: l.count, Sites: p.sites(l.stacks)})
		}
	}
	slices.SortFunc(p.Exceptions, func(a, c ExceptionStats) int {
		return cmp.Or(cmp.Compare(c.Count, a.Count), cmp.Compare(a.Type, c.Type))
	})
	p.Contention = e.contention
	p.Contention.Sites = []Site{}
	if len(p.ContentionStacks.Samples) > 0 {
		sites := make(map[int]int64)
		for _, s := range p.ContentionStacks.Samples {
			sites[s.Stack] += s.Count
		}
		p.Contention.Sites = p.sites(sites)
	}

	if b.cfg.Timeline {
		for _, t := range e.contOrder {
			c := t.cont
			if len(c.waits) == 0 {
				continue
			}
			tw := ThreadWaits{Thread: t.id, Waits: make([]Wait, len(c.waits))}
			for i, w := range c.waits {
				stack, _ := symStack(symOf, stackResolved, int(w.stack))
				tw.Waits[i] = Wait{Start: b.hdr.DurationOf(w.start - b.minTS), Duration: time.Duration(w.dur), Stack: stack}
			}
			sort.SliceStable(tw.Waits, func(i, j int) bool { return tw.Waits[i].Start < tw.Waits[j].Start })
			p.Waits = append(p.Waits, tw)
		}
	}
}
