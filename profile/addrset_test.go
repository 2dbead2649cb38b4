package profile

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// addrSet answers like a linear scan, whatever the order of additions and
// queries (interleaved, or queries after all additions, which consolidates).
// The set takes in the addresses appended to all at each query.
func TestAddrSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, interleave := range []bool{true, false} {
		var s addrSet
		var all []uint64
		seen := map[uint64]bool{}
		query := func() {
			start := r.Uint64N(1 << 20)
			end := start + r.Uint64N(64)
			want := slices.ContainsFunc(all, func(a uint64) bool { return a >= start && a <= end })
			if got := s.any(start, end, all); got != want {
				t.Fatalf("interleave %v, %d addresses: any(%d, %d) = %v, want %v", interleave, len(all), start, end, got, want)
			}
		}
		for range 5000 {
			a := r.Uint64N(1 << 20)
			if seen[a] {
				continue
			}
			seen[a] = true
			all = append(all, a)
			// Without interleaving, one query after the first address
			// makes the others go through the pending buffer and runs
			// (rather than all into the base at once).
			if interleave || len(all) == 1 {
				query()
			}
		}
		for range 5000 {
			query()
		}
		if !interleave && (len(s.runs) != 0 || len(s.pending) != 0) {
			t.Errorf("5000 queries without additions did not consolidate: %d runs, %d pending", len(s.runs), len(s.pending))
		}
	}
}

// With sparse addresses most queries fall in pages that hold none (the page
// bitmap answers), and some span more pages than the bitmap is asked about;
// every answer is still a scan's.
func TestAddrSetSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var s addrSet
	var all []uint64
	seen := map[uint64]bool{}
	for round := range 4 {
		for range 500 * (round + 1) {
			a := r.Uint64N(1 << 32)
			if !seen[a] {
				seen[a] = true
				all = append(all, a)
			}
		}
		for range 2000 {
			start := r.Uint64N(1 << 32)
			end := start + r.Uint64N(256)
			if r.IntN(8) == 0 {
				end = start + r.Uint64N(1<<24) // more pages than the bitmap is asked about
			}
			want := slices.ContainsFunc(all, func(a uint64) bool { return a >= start && a <= end })
			if got := s.any(start, end, all); got != want {
				t.Fatalf("%d addresses: any(%d, %d) = %v, want %v", len(all), start, end, got, want)
			}
		}
	}
	if got := (&addrSet{}).any(0, ^uint64(0), nil); got {
		t.Error("an empty set has an address")
	}
}

// The set answers like a linear scan whatever the batches of addresses
// between queries: a first batch large enough to become the sorted base at
// once, then batches of every size (the pending buffer, merged runs, a
// large batch into a non-empty set).
func TestAddrSetBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, first := range []int{0, 1, pendingAddrs - 1, pendingAddrs, 1000} {
		var s addrSet
		var all []uint64
		seen := map[uint64]bool{}
		batch := func(n int) {
			for lo := len(all); len(all) < lo+n; {
				if a := r.Uint64N(1 << 20); !seen[a] {
					seen[a] = true
					all = append(all, a)
				}
			}
		}
		batch(first)
		for round := range 40 {
			for range 50 {
				start := r.Uint64N(1 << 20)
				end := start + r.Uint64N(1<<uint(r.IntN(14)))
				want := slices.ContainsFunc(all, func(a uint64) bool { return a >= start && a <= end })
				if got := s.any(start, end, all); got != want {
					t.Fatalf("first batch %d, round %d, %d addresses: any(%d, %d) = %v, want %v", first, round, len(all), start, end, got, want)
				}
			}
			batch(r.IntN(3 * pendingAddrs))
		}
		s.any(0, 0, all)
		if s.size() != len(all) {
			t.Errorf("first batch %d: size %d, want %d", first, s.size(), len(all))
		}
	}
}
