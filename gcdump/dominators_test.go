package gcdump

import (
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
