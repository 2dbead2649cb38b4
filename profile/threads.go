package profile

import "math"

// threadCache finds the accumulators of the threads seen recently without
// a map lookup: a direct-mapped table by thread id. Samples come a thread
// at a time in turn (the SampleProfiler walks every thread at each tick),
// so the thread changes with nearly every sample of a busy process.
type threadCache [threadSlots]*threadAcc

// threadSlots is the size of threadCache.
const (
	threadBits  = 7
	threadSlots = 1 << threadBits
)

// threadSlot spreads thread ids over the slots (Windows ids are multiples
// of 4, Linux ids often consecutive) by Fibonacci hashing.
func threadSlot(id uint64) int {
	return int((id * 0x9E3779B97F4A7C15) >> (64 - threadBits))
}

// thread returns the accumulator of an OS thread, made on first use. A
// thread's slot in the cache is threadSlot, or the other slot of its pair
// when two threads of a trace share one (two of 15 threads do in a real
// trace), so that neither goes through the map at each of its samples.
func (b *Builder) thread(id uint64) *threadAcc {
	if b.tcache == nil {
		b.tcache = new(threadCache)
	}
	i := threadSlot(id)
	if t := b.tcache[i]; t != nil && t.id == id {
		return t
	}
	if t := b.tcache[i^1]; t != nil && t.id == id {
		return t
	}
	t := b.threads[id]
	if t == nil {
		t = &threadAcc{id: id, runSK: noRun, kept: b.keep == nil || b.keep[id],
			first: math.MaxInt64, last: math.MinInt64, firstStack: -1}
		for i := range t.recent {
			t.recent[i].stack = -1 // no stack (see recentStack)
		}
		if b.threads == nil {
			b.threads = make(map[uint64]*threadAcc) // made for the first thread
		}
		b.threads[id] = t
	}
	if b.tcache[i] != nil && b.tcache[i^1] == nil {
		i ^= 1
	}
	b.tcache[i] = t
	return t
}
