package profile

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The stack store gives back every stack as added (its addresses through
// their indexes), across the chunks it fills (empty stacks and stacks
// longer than a chunk included), and finds each by its addresses.
func TestStackStoreChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s stackStore
	var want [][]uint64
	total := 0
	for i := range 3000 {
		n := rng.IntN(40)
		switch i {
		case 7, 1500:
			n = 0
		case 900:
			n = 5000 // longer than the chunk it comes after
		}
		// Addresses from a pool, so that stacks share them.
		st := make([]uint64, n)
		for k := range st {
			st[k] = 1<<40 | uint64(rng.IntN(500))<<4
		}
		h := stackHash(st)
		if got := s.find(st, h); got >= 0 && len(st) > 0 {
			if !slices.Equal(want[got], st) {
				t.Fatalf("stack %d found as %d, another stack", i, got)
			}
			continue // drawn twice
		}
		s.reserveAddrs(len(st))
		if got := s.add(st, h, len(st) > 0); got != len(want) {
			t.Fatalf("stack %d added as %d, want %d", i, got, len(want))
		}
		want = append(want, st)
		total += n
	}
	if len(s.chunks) < 2 {
		t.Fatalf("%d chunks: the test should span several", len(s.chunks))
	}
	if s.stacks() != len(want) || s.totalFrames() != total {
		t.Fatalf("stacks %d, frames %d; want %d, %d", s.stacks(), s.totalFrames(), len(want), total)
	}
	// symbolise relies on the addresses being in order of first sight in
	// the stacks taken in order.
	seen := 0
	for i := range want {
		for _, a := range s.stack(i) {
			if int(a) > seen {
				t.Fatalf("stack %d: address %d before address %d", i, a, seen)
			}
			if int(a) == seen {
				seen++
			}
		}
	}
	if seen != len(s.addrs) {
		t.Fatalf("%d addresses in the stacks, %d stored", seen, len(s.addrs))
	}
	for i, st := range want {
		var got []uint64
		for _, a := range s.stack(i) {
			got = append(got, s.addrs[a])
		}
		if !slices.Equal(got, st) {
			t.Fatalf("stack %d: %d addresses, want %d", i, len(got), len(st))
		}
		if len(st) > 0 {
			if got := s.find(st, stackHash(st)); got != i {
				t.Fatalf("find(stack %d) = %d", i, got)
			}
		}
	}
}
