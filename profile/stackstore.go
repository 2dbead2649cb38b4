package profile

import (
	"math/bits"
	"slices"
)

// stackStore interns raw stacks (lists of return addresses) and the
// distinct addresses in them without a string or a map entry per stack:
// every stack is appended to one array (in chunks) as the indexes of its
// addresses among the distinct ones (4 bytes a frame rather than 8, and
// symbolise resolves an index without looking the address up), and
// open-addressing tables of int32 find a stack by its addresses and an
// address by its value. Interning a known stack allocates nothing; a new one only grows
// the arrays (amortised).
type stackStore struct {
	// The stacks' address indexes, one stack after the other, are in chunks
	// that are filled and never grown or copied (growing one array by
	// doubling allocated 1.7 times the final size in copies and slack),
	// a stack never straddling two. ends[i+1] holds where stack i ends in
	// the chunks' filled parts taken end to end, and its hash (the high
	// half of hashStack, so that neither a lookup's probes nor the growth
	// of slots hash stored stacks again); ends[0] is {0, 0}. Stack i is
	// ends[i].end up to ends[i+1].end, and a slot's stack+1 indexes its
	// hash. (The ends and the hashes were two arrays, allocated and grown
	// together.) frames is the last chunk, base where it starts; chunks
	// are the ones before it (none for a small trace).
	chunks [][]int32
	frames []int32
	base   int32
	ends   []stackEnd
	// slots finds stacks: stack+1 per slot (0: empty), at most half full;
	// inSlots counts them.
	slots   []int32
	inSlots int
	// addrs are the distinct addresses in order of first sight; addrSlots
	// finds them (index+1 per slot, 0: empty), at most half full, from
	// the slot addrHome gives.
	addrs     []uint64
	addrSlots []int32
}

// stackEnd is where a stack ends among the stacks' addresses, and its hash.
type stackEnd struct {
	end  int32
	hash uint32
}

// start makes the tables of the stacks, sized for a small trace, when
// the first stack comes: ends with room for 64 stacks, then slots and
// addrSlots (64 slots each) and the first chunk (128 addresses), all of
// int32, in one allocation, each table getting its own when it fills. Two
// allocations where there were five. (addrs keeps append's growth from the
// first stack's addresses: a larger start changed the steps by which it
// grows, and a trace of a few hundred addresses then ended with more.)
func (s *stackStore) start() {
	s.ends = make([]stackEnd, 1, 64)
	t := make([]int32, 64+64+128)
	s.slots, s.addrSlots, s.frames = t[:64:64], t[64:128:128], t[128:128]
}

// hashStack hashes a stack's addresses.
func hashStack(frames []uint64) uint64 {
	h := uint64(len(frames)) * 0x9E3779B97F4A7C15
	for _, a := range frames {
		h = (h ^ a) * 0x9E3779B97F4A7C15
		h ^= h >> 29
	}
	return h
}

// stackHash is the part of hashStack a stackStore keeps.
func stackHash(frames []uint64) uint32 { return uint32(hashStack(frames) >> 32) }

// hashAddr hashes an address (Fibonacci hashing, the high bits used).
func hashAddr(a uint64) uint64 { return (a ^ a>>31) * 0x9E3779B97F4A7C15 }

// addrHome is the slot where address a's probe starts in a table of
// addrSlots' length, shift being addrShift of it: the top bits of its
// Fibonacci hash, which every bit of the address mixes into (the bits
// below them, hashAddr's, put two to three times as many of a real
// trace's addresses out of their slot: counters-truncated's stack frames
// took 0.23 probes more each, objver4's 0.14).
func addrHome(a uint64, shift uint) uint64 {
	return a * 0x9E3779B97F4A7C15 >> (shift & 63) // & 63: no test for a shift past 63
}

// addrShift is 64 - log2 of the length of addrSlots (a power of 2, not
// 0), for addrHome.
func (s *stackStore) addrShift() uint {
	return uint(bits.LeadingZeros64(uint64(len(s.addrSlots) - 1)))
}

// stacks is the number of stacks interned.
func (s *stackStore) stacks() int { return max(len(s.ends)-1, 0) }

// stack returns the indexes in addrs of the addresses of stack i.
func (s *stackStore) stack(i int) []int32 {
	lo, hi := s.ends[i].end, s.ends[i+1].end
	if lo >= s.base {
		return s.frames[lo-s.base : hi-s.base]
	}
	return s.stackBefore(lo, hi)
}

// stackBefore is stack for a stack in a chunk before the last: the chunks
// are walked back from the last one, each starting where the one after it
// starts less its length.
func (s *stackStore) stackBefore(lo, hi int32) []int32 {
	base := s.base
	for k := len(s.chunks) - 1; ; k-- {
		base -= int32(len(s.chunks[k]))
		if base <= lo {
			return s.chunks[k][lo-base : hi-base]
		}
	}
}

// totalFrames is the number of addresses of all the stacks.
func (s *stackStore) totalFrames() int {
	if len(s.ends) == 0 {
		return 0
	}
	return int(s.ends[len(s.ends)-1].end)
}

// find returns the stack with these addresses and hash (stackHash), -1
// when there is none.
func (s *stackStore) find(frames []uint64, h uint32) int {
	if len(s.slots) == 0 {
		return -1
	}
	mask := uint64(len(s.slots) - 1)
	for i := uint64(h) & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == 0 {
			return -1
		}
		if s.ends[v].hash == h && s.equal(int(v-1), frames) {
			return int(v - 1)
		}
	}
}

// equal reports whether stack i has these addresses.
func (s *stackStore) equal(i int, frames []uint64) bool {
	st := s.stack(i)
	if len(st) != len(frames) {
		return false
	}
	for j, a := range st {
		if s.addrs[a] != frames[j] {
			return false
		}
	}
	return true
}

// add interns a stack of hash h that find did not find, and its addresses
// (reserveAddrs must have made room for the new ones), and returns its
// index. With lookup false the stack is only stored (the over-the-cap
// placeholder): find never returns it.
func (s *stackStore) add(frames []uint64, h uint32, lookup bool) int {
	if s.ends == nil {
		s.start() // the over-the-cap stack may come first
	}
	i := len(s.ends) - 1
	n := len(s.frames)
	if n+len(frames) > cap(s.frames) {
		s.addChunk(len(frames))
		n = 0
	}
	// Resliced in place: no pointer is stored (see Timeline.add).
	s.frames = s.frames[:n+len(frames)]
	s.addAddrs(s.frames[n:], frames)
	s.ends = append(s.ends, stackEnd{end: s.base + int32(len(s.frames)), hash: h})
	if lookup {
		if 2*(s.inSlots+1) > len(s.slots) {
			old := s.slots
			s.slots = make([]int32, max(64, 2*len(old)))
			for _, v := range old {
				if v != 0 {
					s.place(s.ends[v].hash, v)
				}
			}
		}
		s.place(h, int32(i+1))
		s.inSlots++
	}
	return i
}

// addChunk starts a new chunk with room for at least n addresses. Chunks
// grow by a quarter of what the chunks before hold (at least 1024
// addresses): there are few of them, and the last one's slack is a small
// part of the whole. The first chunk is small, for a small trace (a few
// hundred addresses in all its stacks; 1024 cost it 8 KB to allocate and
// clear).
func (s *stackStore) addChunk(n int) {
	least := 128
	if len(s.frames) > 0 { // not start's first chunk, still empty
		s.chunks = append(s.chunks, s.frames)
		s.base += int32(len(s.frames))
		least = 1024
	}
	s.frames = make([]int32, 0, max(n, least, int(s.base)/4))
}

func (s *stackStore) place(h uint32, v int32) {
	mask := uint64(len(s.slots) - 1)
	i := uint64(h) & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = v
}

// addrSlot returns the slot of address a in addrSlots: the one holding it,
// or the empty one where it would go.
func (s *stackStore) addrSlot(a uint64) uint64 {
	mask := uint64(len(s.addrSlots) - 1)
	i := addrHome(a, s.addrShift())
	for {
		v := s.addrSlots[i]
		if v == 0 || s.addrs[v-1] == a {
			return i
		}
		i = (i + 1) & mask
	}
}

// hasAddr reports whether address a was added.
func (s *stackStore) hasAddr(a uint64) bool {
	return len(s.addrSlots) > 0 && s.addrSlots[s.addrSlot(a)] != 0
}

// reserveAddrs makes room for n more addresses: addAddrs then neither
// grows addrSlots nor reallocates addrs.
func (s *stackStore) reserveAddrs(n int) {
	if s.ends == nil {
		s.start()
	}
	if need := 2 * (len(s.addrs) + n); need > len(s.addrSlots) {
		old := s.addrSlots
		size := max(64, len(old))
		for size < need {
			size *= 2
		}
		s.addrSlots = make([]int32, size)
		// The addresses are distinct: each goes to the first empty slot.
		shift, mask := s.addrShift(), uint64(size-1)
		for _, v := range old {
			if v != 0 {
				i := addrHome(s.addrs[v-1], shift)
				for s.addrSlots[i] != 0 {
					i = (i + 1) & mask
				}
				s.addrSlots[i] = v
			}
		}
	}
	if cap(s.addrs)-len(s.addrs) < n {
		// Doubling (append grows a large slice by a quarter).
		s.addrs = slices.Grow(s.addrs, max(n, len(s.addrs)))
	}
}

// addAddrs sets idx[j] to the index in addrs of address frames[j],
// adding the addresses that are new. reserveAddrs must have made room for
// them.
func (s *stackStore) addAddrs(idx []int32, frames []uint64) {
	idx = idx[:len(frames)]
	// The tables in locals (the compiler would otherwise load them again
	// after each store), and a new address added by a call: the loop of
	// the common case, an address seen before, keeps its values in
	// registers (a call per address cost a third more).
	slots, addrs, shift := s.addrSlots, s.addrs, s.addrShift()
	mask := uint64(len(slots) - 1)
	for j, a := range frames {
		i := addrHome(a, shift)
		for {
			// uint32: the index is not sign-extended.
			v := uint32(slots[i])
			if v == 0 {
				idx[j] = s.newAddr(i, a) - 1
				addrs = s.addrs
				break
			}
			if addrs[v-1] == a {
				idx[j] = int32(v - 1)
				break
			}
			i = (i + 1) & mask
		}
	}
}

// newAddr adds address a, whose slot in addrSlots is i, and returns its
// index+1.
func (s *stackStore) newAddr(i, a uint64) int32 {
	// Resliced in place: no pointer is stored (see Timeline.add).
	n := len(s.addrs)
	s.addrs = s.addrs[:n+1]
	s.addrs[n] = a
	s.addrSlots[i] = int32(n + 1)
	return int32(n + 1)
}
