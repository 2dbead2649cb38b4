package profile

import (
	"math"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/timeline"
	"github.com/clrdiag/clrdiag/nettrace"
)

// threadAcc accumulates the samples of one thread as they stream in: counts
// by stack, its recent stacks, and its timeline.
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
	// (timeline.Data.Grow), head the index in runs of the last run's head;
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
