package profile

import (
	"slices"

	"github.com/clrdiag/clrdiag/nettrace"
)

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
