package gcdump

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// graphOf builds a graph whose node i has the given references and size
// i+1; node 0 is the Root.
func graphOf(t testing.TB, refs [][]int) *Graph {
	t.Helper()
	b := NewBuilder(len(refs))
	ids := make([]NodeID, len(refs))
	for i := range refs {
		ids[i] = b.NewNode()
	}
	ty := b.Type("T", "")
	for i, rs := range refs {
		var out []NodeID
		for _, r := range rs {
			out = append(out, ids[r])
		}
		if err := b.SetNode(ids[i], ty, uint64(i+1), out); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// naiveIdom computes immediate dominators by definition: d dominates v
// when v cannot be reached from the virtual root without d.
func naiveIdom(g *Graph) []NodeID {
	n := g.NumNodes()
	// The virtual root's successors: Root, then every node not reached
	// yet, in index order (as ComputeDominators chooses them).
	seen := make([]bool, n)
	var mark func(v NodeID)
	mark = func(v NodeID) {
		if seen[v] {
			return
		}
		seen[v] = true
		for _, c := range g.Refs(v) {
			mark(c)
		}
	}
	starts := []NodeID{g.Root}
	mark(g.Root)
	for i := range n {
		if !seen[i] {
			starts = append(starts, NodeID(i))
			mark(NodeID(i))
		}
	}
	reach := func(skip NodeID) []bool {
		r := make([]bool, n)
		var q []NodeID
		for _, s := range starts {
			if s != skip && !r[s] {
				r[s] = true
				q = append(q, s)
			}
		}
		for len(q) > 0 {
			v := q[0]
			q = q[1:]
			for _, c := range g.Refs(v) {
				if c != skip && !r[c] {
					r[c] = true
					q = append(q, c)
				}
			}
		}
		return r
	}
	dom := make([][]bool, n) // dom[d][v]: d strictly dominates v
	for d := range n {
		r := reach(NodeID(d))
		dom[d] = make([]bool, n)
		for v := range n {
			dom[d][v] = v != d && !r[v]
		}
	}
	idom := make([]NodeID, n)
	for v := range n {
		idom[v] = NoNode
		for d := range n {
			if !dom[d][v] {
				continue
			}
			// d is the immediate dominator if every other strict
			// dominator of v dominates d.
			ok := true
			for e := range n {
				if e != d && dom[e][v] && !dom[e][d] {
					ok = false
					break
				}
			}
			if ok {
				idom[v] = NodeID(d)
			}
		}
	}
	return idom
}

func checkDominators(t *testing.T, g *Graph) {
	t.Helper()
	d := ComputeDominators(g)
	want := naiveIdom(g)
	for v := range g.NumNodes() {
		if d.Idom(NodeID(v)) != want[v] {
			t.Fatalf("idom(%d) = %d, want %d (graph %v)", v, d.Idom(NodeID(v)), want[v], dumpRefs(g))
		}
	}
	// Retained sizes: the node's size plus those of the nodes it
	// dominates.
	for v := range g.NumNodes() {
		var sum uint64
		for u := range g.NumNodes() {
			if d.Dominates(NodeID(v), NodeID(u)) {
				sum += g.Size(NodeID(u))
			}
		}
		if d.Retained(NodeID(v)) != sum {
			t.Fatalf("retained(%d) = %d, want %d", v, d.Retained(NodeID(v)), sum)
		}
	}
	pos := make([]int, g.NumNodes())
	for i, v := range d.Order() {
		pos[v] = i
	}
	for v := range g.NumNodes() {
		if id := d.Idom(NodeID(v)); id != NoNode && pos[id] >= pos[v] {
			t.Fatalf("order puts %d before its dominator %d", v, id)
		}
	}
}

func dumpRefs(g *Graph) [][]NodeID {
	out := make([][]NodeID, g.NumNodes())
	for v := range out {
		out[v] = g.Refs(NodeID(v))
	}
	return out
}

func TestDominatorsKnown(t *testing.T) {
	// The flow graph of Lengauer and Tarjan's paper (R=0, A..L = 1..12).
	lt := [][]int{
		0: {1, 2, 3}, 1: {4}, 2: {1, 4, 5}, 3: {6, 7}, 4: {12}, 5: {8},
		6: {9}, 7: {9, 10}, 8: {5, 11}, 9: {11}, 10: {9}, 11: {0, 9}, 12: {8},
	}
	g := graphOf(t, lt)
	d := ComputeDominators(g)
	// From the paper: idom(I)=R, idom(K)=R, idom(E)=R, idom(H)=C, idom(L)=D.
	for v, want := range map[int]int{8: 0, 11: 0, 4: 0, 7: 3, 12: 4, 1: 0, 6: 3, 10: 7} {
		if got := d.Idom(NodeID(v)); got != NodeID(want) {
			t.Errorf("idom(%d) = %d, want %d", v, got, want)
		}
	}
	checkDominators(t, g)

	// A cycle that the Root enters at one point, unreachable islands, a
	// self loop and a diamond.
	checkDominators(t, graphOf(t, [][]int{{1}, {2}, {3}, {1}, {4, 5}, {6}, {6}, {}}))
	checkDominators(t, graphOf(t, [][]int{{1, 2}, {3}, {3}, {}, {5}, {4}, {6, 3}}))
}

func TestDominatorsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		n := 1 + r.IntN(40)
		refs := make([][]int, n)
		for v := range refs {
			k := r.IntN(4)
			if iter%3 == 0 {
				k = r.IntN(2) // sparse: more unreachable nodes
			}
			for range k {
				refs[v] = append(refs[v], r.IntN(n))
			}
		}
		checkDominators(t, graphOf(t, refs))
	}
}

// TestDominatorsDeepChain checks that a linked list of a million nodes
// (a stack depth no recursive algorithm survives) works.
func TestDominatorsDeepChain(t *testing.T) {
	const n = 1_000_000
	b := NewBuilder(n)
	ty := b.Type("Node", "")
	ids := make([]NodeID, n)
	for i := range ids {
		ids[i] = b.Ref(uint64(0x1000 + 16*i))
	}
	for i := range ids {
		var refs []NodeID
		if i+1 < n {
			refs = []NodeID{ids[i+1]}
		}
		if i == n-1 {
			refs = []NodeID{ids[0]} // and a cycle back
		}
		if _, err := b.SetObject(uint64(0x1000+16*i), ty, 16, refs); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	d := ComputeDominators(g)
	if d.Retained(g.Root) != 16*n || d.Idom(ids[n-1]) != ids[n-2] || d.Unreachable != 0 {
		t.Fatalf("retained %d idom %d unreachable %d", d.Retained(g.Root), d.Idom(ids[n-1]), d.Unreachable)
	}
}

// checkAgainstReference compares ComputeDominators with referenceIdom (the
// algorithm this package had before) on g: immediate dominators, retained
// sizes summed from the reference's tree, and the tree's child links.
func checkAgainstReference(t *testing.T, name string, g *Graph) {
	t.Helper()
	d := ComputeDominators(g)
	want := referenceIdom(g)
	n := g.NumNodes()
	for v := range n {
		if got := d.Idom(NodeID(v)); got != want[v] {
			t.Fatalf("%s: idom(%d) = %d, reference %d", name, v, got, want[v])
		}
	}
	retained := make([]uint64, n)
	order := d.Order()
	if len(order) != n {
		t.Fatalf("%s: order has %d nodes of %d", name, len(order), n)
	}
	pos := make([]int, n)
	for i, v := range order {
		pos[v] = i
	}
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		retained[v] += g.Size(v)
		if p := want[v]; p != NoNode {
			if pos[p] >= i {
				t.Fatalf("%s: order puts %d before its dominator %d", name, v, p)
			}
			retained[p] += retained[v]
		}
	}
	for v := range n {
		if d.Retained(NodeID(v)) != retained[v] {
			t.Fatalf("%s: retained(%d) = %d, reference %d", name, v, d.Retained(NodeID(v)), retained[v])
		}
	}
	// Every vertex is a child of its dominator exactly once.
	kids := 0
	for w := range uint32(len(d.order)) {
		for c := uint32(d.links[w] >> 32); c != 0; c = uint32(d.links[c]) {
			if d.idom[c] != w {
				t.Fatalf("%s: %d is a child of %d, not of its dominator %d", name, c, w, d.idom[c])
			}
			kids++
		}
	}
	if kids != n {
		t.Fatalf("%s: %d children in the tree, %d nodes", name, kids, n)
	}
	if d.Unreachable != len(d.Unreached()) || len(d.Unreached()) > n {
		t.Fatalf("%s: unreachable %d", name, d.Unreachable)
	}
}

// TestDominatorsAgainstReference is the property test of semi-NCA against
// the former Lengauer-Tarjan: random graphs of every density, and graphs
// built against dominator algorithms (long compression paths, back edges
// from deep vertices, unreachable cycles whose DFS starts have referrers,
// self loops, duplicate references, a heap-shaped synthetic graph).
func TestDominatorsAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := range 400 {
		n := 1 + r.IntN(2000)
		deg := []int{1, 2, 3, 6}[iter%4]
		refs := make([][]int, n)
		for v := range refs {
			for range r.IntN(2*deg + 1) {
				refs[v] = append(refs[v], r.IntN(n))
			}
		}
		checkAgainstReference(t, "random", graphOf(t, refs))
	}

	const long = 50_000
	// A chain whose last vertex refers back to every vertex: every
	// semidominator is found through one long forest path.
	refs := make([][]int, long)
	for v := range long - 1 {
		refs[v] = []int{v + 1}
	}
	for v := range long {
		refs[long-1] = append(refs[long-1], v)
	}
	checkAgainstReference(t, "chain with back edges from its end", graphOf(t, refs))

	// A chain whose every vertex refers back to a random earlier one, and
	// a second chain beside it with cross references.
	refs = make([][]int, long)
	for v := range long {
		if v+1 < long/2 || v+1 > long/2 && v+1 < long {
			refs[v] = append(refs[v], v+1)
		}
		refs[v] = append(refs[v], r.IntN(v+1))
		if v > long/2 {
			refs[v] = append(refs[v], r.IntN(long/2), v, v) // a cross reference, a self loop twice
		}
	}
	refs[0] = append(refs[0], long/2+1)
	checkAgainstReference(t, "chains with back and cross edges", graphOf(t, refs))

	// A ladder: two rails with rungs both ways (many vertices with two
	// dominator candidates).
	refs = make([][]int, long)
	for v := range long {
		if v+2 < long {
			refs[v] = append(refs[v], v+2)
		}
		if v%2 == 0 && v+1 < long {
			refs[v] = append(refs[v], v+1)
			refs[v+1] = append(refs[v+1], v)
		}
	}
	checkAgainstReference(t, "ladder", graphOf(t, refs))

	// Islands the Root does not reach: cycles (each DFS start has a
	// referrer in its island), chains into them, a node referring to
	// itself only.
	refs = make([][]int, 0, 1000)
	refs = append(refs, []int{1}, []int{0})
	for len(refs) < 990 {
		base := len(refs)
		size := 1 + r.IntN(8)
		for k := range size {
			refs = append(refs, []int{base + (k+1)%size})
		}
		if r.IntN(2) == 0 {
			refs[base] = append(refs[base], base+r.IntN(size), base) // duplicates
		}
	}
	refs = append(refs, []int{len(refs)})
	checkAgainstReference(t, "unreachable islands", graphOf(t, refs))

	// A star whose leaves all refer back to the Root and to each other.
	refs = make([][]int, long)
	for v := 1; v < long; v++ {
		refs[0] = append(refs[0], v)
		refs[v] = []int{0, 1 + r.IntN(long-1)}
	}
	checkAgainstReference(t, "star", graphOf(t, refs))

	// A wide array: the Root holds 300,000 leaves through one node, as an
	// Object[] of that length would (the search must not scan the rest of
	// the array again at each element).
	refs = make([][]int, 300_002)
	refs[0] = []int{1}
	for v := 2; v < len(refs); v++ {
		refs[1] = append(refs[1], v)
	}
	checkAgainstReference(t, "wide array", graphOf(t, refs))

	// A chain whose last vertex refers to many leaves, each of which a
	// vertex of the chain's first half refers to too: a leaf's
	// semidominator is that vertex, its DFS parent the last, and the
	// walk between them half the chain or more. Semi-NCA's walks would be
	// quadratic (42 s at 80,000 and 80,000); past a budget they go over
	// jump pointers, which this checks too, to every depth.
	const chain, leaves = 30_000, 30_000
	refs = make([][]int, chain+1+leaves)
	for v := range chain {
		refs[v] = []int{v + 1}
	}
	for j := range leaves {
		refs[chain] = append(refs[chain], chain+1+j)
		from := 1 + j*7919%(chain/2)
		refs[from] = append(refs[from], chain+1+j)
	}
	checkAgainstReference(t, "chain and leaves (semi-NCA's worst case)", graphOf(t, refs))

	// The benchmarks' heap shape: a binary tree with random references,
	// uniform and mostly local.
	checkAgainstReference(t, "synthetic heap", synthHeap(t, 50_000, 150_000))
	checkAgainstReference(t, "synthetic local heap", synthHeapLocal(t, 50_000, 150_000, true))
	checkAgainstReference(t, "synthetic heap in allocation order", synthHeapShape(t, 50_000, 150_000, shapeAlloc))
}

// TestDominatorsCanceled: the computation stops when its context ends.
func TestDominatorsCanceled(t *testing.T) {
	g := synthHeap(t, 1000, 3000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := ComputeDominatorsContext(ctx, g); d != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("%v %v", d, err)
	}
}
