package profile

import "slices"

// addrSet holds distinct addresses for the query "is any of them in
// [start, end]?", asked once per rundown method. It is a log-structured
// merge of sorted runs: new addresses collect in a small unsorted buffer,
// a full buffer is sorted and merged with the runs of equal size like a
// binary counter carries. Adding is amortised O(log n) per address and a
// query O(log² n), so a trace that alternates new stacks and rundown
// methods stays near-linear instead of re-sorting everything per method.
// The addresses added must be distinct.
//
// The set indexes an append-only list of addresses that another structure
// owns (stackStore.addrs): each query passes the whole list and the set
// first takes in the addresses added to it since the last query, so that
// a trace with no query (no rundown methods) never pays for the set.
//
// A run of queries with no addition in between (a rundown after the
// samples, the common case) consolidates everything into one sorted base
// once the queries have paid for it, so that each later query is one
// binary search. Before any of that, a bitmap of the 4 KB pages that hold
// an address answers most queries of a rundown (methods in pages no stack
// went through) with a bit test or two. The bitmap is made by the first
// query, sized by the addresses then (64 bits each, 1 KB to 8 KB), and made
// again when additions outgrow it: a trace without a rundown does not pay
// for it.
type addrSet struct {
	base    []uint64   // sorted
	pending []uint64   // unsorted, at most pendingAddrs
	runs    [][]uint64 // runs[i] is nil or sorted with pendingAddrs<<i addresses
	n       int        // addresses in pending and runs
	queries int        // since the last addition
	// pages has the bit pageBit(a>>pageShift, pageBits) set for every
	// address a (nil until a query makes it).
	pages    []uint64
	pageBits uint
}

// The page bitmap: at most 64K bits, one per hashed 4 KB page.
const (
	pageShift   = 12
	minPageBits = 13
	maxPageBits = 16
	// maxPageProbes bounds the pages a query tests; a wider range skips the
	// bitmap.
	maxPageProbes = 16
)

// pageBit is the bit of a page in a bitmap of 1<<bits bits (Fibonacci
// hashing).
func pageBit(page uint64, bits uint) uint64 { return (page * 0x9E3779B97F4A7C15) >> (64 - bits) }

// size is the number of addresses in the set.
func (s *addrSet) size() int { return len(s.base) + s.n }

// setPage sets the bit of address a's page.
func (s *addrSet) setPage(a uint64) {
	bit := pageBit(a>>pageShift, s.pageBits)
	s.pages[bit/64] |= 1 << (bit % 64)
}

// makePages makes the page bitmap for the addresses in the set.
func (s *addrSet) makePages() {
	bits := uint(minPageBits)
	for bits < maxPageBits && 1<<bits < 64*s.size() {
		bits++
	}
	s.pageBits = bits
	s.pages = make([]uint64, 1<<bits/64)
	for _, a := range s.base {
		s.setPage(a)
	}
	for _, a := range s.pending {
		s.setPage(a)
	}
	for _, r := range s.runs {
		for _, a := range r {
			s.setPage(a)
		}
	}
}

// pendingAddrs is the size of the unsorted buffer a query scans.
const pendingAddrs = 64

func (s *addrSet) add(a uint64) {
	if s.pages != nil {
		if s.pageBits < maxPageBits && 1<<s.pageBits < 16*(s.size()+1) {
			s.pages = nil // outgrown: the next query makes a larger one
		} else {
			s.setPage(a)
		}
	}
	s.queries = 0
	s.n++
	s.pending = append(s.pending, a)
	if len(s.pending) < pendingAddrs {
		return
	}
	carry := slices.Clone(s.pending)
	slices.Sort(carry)
	s.pending = s.pending[:0]
	for i := 0; ; i++ {
		if i == len(s.runs) {
			s.runs = append(s.runs, nil)
		}
		if s.runs[i] == nil {
			s.runs[i] = carry
			return
		}
		carry = mergeSorted(s.runs[i], carry)
		s.runs[i] = nil
	}
}

// addAll adds distinct addresses. Into an empty set, many of them make
// the sorted base at once (one sort, rather than a buffer sorted and
// merged at every pendingAddrs addresses).
func (s *addrSet) addAll(as []uint64) {
	if s.size() == 0 && len(as) >= pendingAddrs {
		s.base = slices.Clone(as)
		slices.Sort(s.base)
		s.queries, s.pages = 0, nil
		return
	}
	for _, a := range as {
		s.add(a)
	}
}

// any reports whether an address of all lies in [start, end]. all is the
// list of the previous query with new addresses at its end, if any (the
// set holds all[:s.size()]).
func (s *addrSet) any(start, end uint64, all []uint64) bool {
	// One test in the common case: no new address, the bitmap made.
	if s.pages == nil || len(all) > s.size() {
		if len(all) > s.size() {
			s.addAll(all[s.size():])
		}
		if s.size() == 0 {
			return false
		}
		if s.pages == nil {
			s.makePages()
		}
	}
	if end < start {
		return false
	}
	if first, last := start>>pageShift, end>>pageShift; last-first < maxPageProbes {
		// Most queries end here, at the first page when the range is in
		// one (the loop is written for that case).
		pages, bits := s.pages, s.pageBits
		for p := first; ; p++ {
			bit := pageBit(p, bits)
			if pages[bit/64]&(1<<(bit%64)) != 0 {
				break
			}
			if p == last {
				return false
			}
		}
	}
	if s.n > 0 {
		// Consolidating costs about as much as len(base)+n comparisons;
		// queries without additions pay for it before it is done.
		if s.queries++; s.queries > 64+(len(s.base)+s.n)/16 {
			s.consolidate()
		}
	}
	if i, _ := slices.BinarySearch(s.base, start); i < len(s.base) && s.base[i] <= end {
		return true
	}
	for _, a := range s.pending {
		if a >= start && a <= end {
			return true
		}
	}
	for _, r := range s.runs {
		if i, _ := slices.BinarySearch(r, start); i < len(r) && r[i] <= end {
			return true
		}
	}
	return false
}

// mergeSorted merges two sorted slices into a new one.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out = append(out, a[0])
			a = a[1:]
		} else {
			out = append(out, b[0])
			b = b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// consolidate merges pending and the runs into base.
func (s *addrSet) consolidate() {
	slices.Sort(s.pending)
	s.base = mergeSorted(s.base, s.pending)
	for _, r := range s.runs {
		if r != nil {
			s.base = mergeSorted(s.base, r)
		}
	}
	s.pending, s.runs, s.n = s.pending[:0], s.runs[:0], 0
}
