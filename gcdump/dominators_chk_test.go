package gcdump

import (
	"math/rand/v2"
	"testing"
)

// chkIdom computes immediate dominators with Cooper, Harvey and Kennedy's
// iterative algorithm ("A Simple, Fast Dominance Algorithm"): a fixed
// point over the reverse postorder, each node's dominator the
// intersection of its processed predecessors' dominators, written from the
// paper's description as a third source for the tests (it shares no code
// or idea with semi-NCA or Lengauer-Tarjan besides the virtual root). It
// returns NoNode for nodes under the virtual root, whose successors are
// the Root and then every node not reached yet, in index order.
func chkIdom(g *Graph) []NodeID {
	n := g.NumNodes()
	virt := n // the virtual root's index
	succ := func(v int) []NodeID {
		if v == virt {
			return nil // its successors are found below, in order
		}
		return g.Refs(NodeID(v))
	}
	// Postorder of a depth-first search (an explicit stack; the order of
	// the children does not matter to the result).
	post := make([]int, 0, n+1)
	postNum := make([]int, n+1)
	visited := make([]bool, n+1)
	type frame struct{ v, i int }
	dfs := func(s int) {
		visited[s] = true
		stack := []frame{{s, 0}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if rs := succ(top.v); top.i < len(rs) {
				c := int(rs[top.i])
				top.i++
				if !visited[c] {
					visited[c] = true
					stack = append(stack, frame{c, 0})
				}
				continue
			}
			postNum[top.v] = len(post)
			post = append(post, top.v)
			stack = stack[:len(stack)-1]
		}
	}
	visited[virt] = true
	var starts []int
	for _, s := range append([]int{int(g.Root)}, seq(n)...) {
		if !visited[s] {
			starts = append(starts, s)
			dfs(s)
		}
	}
	postNum[virt] = len(post)
	post = append(post, virt)

	preds := make([][]int, n+1)
	for v := range n {
		for _, c := range g.Refs(NodeID(v)) {
			preds[c] = append(preds[c], v)
		}
	}
	for _, s := range starts {
		preds[s] = append(preds[s], virt)
	}

	const undef = -1
	idom := make([]int, n+1)
	for i := range idom {
		idom[i] = undef
	}
	idom[virt] = virt
	intersect := func(a, b int) int {
		for a != b {
			for postNum[a] < postNum[b] {
				a = idom[a]
			}
			for postNum[b] < postNum[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for i := len(post) - 2; i >= 0; i-- { // reverse postorder, virtual root excluded
			v := post[i]
			nd := undef
			for _, p := range preds[v] {
				if idom[p] == undef {
					continue
				}
				if nd == undef {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if idom[v] != nd {
				idom[v] = nd
				changed = true
			}
		}
	}
	out := make([]NodeID, n)
	for v := range n {
		if idom[v] == virt {
			out[v] = NoNode
		} else {
			out[v] = NodeID(idom[v])
		}
	}
	return out
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestDominatorsAgainstCHK compares ComputeDominators with Cooper, Harvey
// and Kennedy's iterative algorithm (chkIdom) on thousands of small random
// graphs of many shapes: sparse, dense (dozens of references a node), long chains with back, forward
// and cross references, ties (diamonds, ladders: vertices reached by
// several paths of the same length, duplicate references), self loops,
// and islands the Root does not reach. Immediate dominators must agree
// for every node and retained sizes must be the sums over the other
// algorithm's tree.
func TestDominatorsAgainstCHK(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 2026))
	shapes := []func(n int) [][]int{
		// Uniform random, of growing density.
		func(n int) [][]int {
			refs := make([][]int, n)
			deg := 1 + r.IntN(5)
			for v := range refs {
				for range r.IntN(2 * deg) {
					refs[v] = append(refs[v], r.IntN(n))
				}
			}
			return refs
		},
		// Dense: dozens of references a node, duplicates among them
		// (more than the search's bitmaps can share memory with).
		func(n int) [][]int {
			refs := make([][]int, n)
			for v := range refs {
				for range 20 + r.IntN(60) {
					refs[v] = append(refs[v], r.IntN(n))
				}
			}
			return refs
		},
		// A long chain with a few references back, forward and to
		// itself.
		func(n int) [][]int {
			refs := make([][]int, n)
			for v := range n - 1 {
				refs[v] = []int{v + 1}
			}
			for range r.IntN(n/4 + 1) {
				v := r.IntN(n)
				switch r.IntN(3) {
				case 0:
					refs[v] = append(refs[v], r.IntN(v+1)) // back or self
				case 1:
					refs[v] = append(refs[v], v+r.IntN(n-v)) // forward
				default:
					refs[v] = append(refs[v], v) // self loop
				}
			}
			return refs
		},
		// Diamonds in a row, some with duplicate references: every
		// join has two (or more) paths of the same length.
		func(n int) [][]int {
			refs := make([][]int, n)
			for v := 0; v+3 < n; v += 3 {
				refs[v] = []int{v + 1, v + 2}
				refs[v+1] = []int{v + 3}
				refs[v+2] = []int{v + 3}
				if r.IntN(3) == 0 {
					refs[v+1] = append(refs[v+1], v+3)
				}
				if r.IntN(4) == 0 && v > 0 {
					refs[v+2] = append(refs[v+2], r.IntN(v)) // back
				}
			}
			return refs
		},
		// A ladder: two rails with rungs, so that most vertices have
		// two candidate dominators at the same depth.
		func(n int) [][]int {
			refs := make([][]int, n)
			for v := range n {
				if v+2 < n {
					refs[v] = append(refs[v], v+2)
				}
				if v%2 == 0 && v+1 < n && r.IntN(2) == 0 {
					refs[v] = append(refs[v], v+1)
				}
				if v%2 == 1 && r.IntN(3) == 0 {
					refs[v] = append(refs[v], v-1)
				}
			}
			return refs
		},
		// Unreachable islands: the Root holds a chain; the rest are
		// cycles and chains that refer into each other and into the
		// Root's part, but nothing of the Root's part refers to them.
		func(n int) [][]int {
			refs := make([][]int, n)
			half := n / 2
			for v := range half - 1 {
				refs[v] = []int{v + 1}
			}
			for v := half; v < n; v++ {
				refs[v] = append(refs[v], half+r.IntN(n-half))
				if r.IntN(3) == 0 {
					refs[v] = append(refs[v], r.IntN(n))
				}
			}
			return refs
		},
	}
	for iter := range 3000 {
		n := 1 + r.IntN(60)
		if iter%10 == 0 {
			n = 200 + r.IntN(800) // long chains
		}
		shape := iter % len(shapes)
		g := graphOf(t, shapes[shape](n))
		d := ComputeDominators(g)
		want := chkIdom(g)
		for v := range n {
			if got := d.Idom(NodeID(v)); got != want[v] {
				t.Fatalf("iteration %d (shape %d, %d nodes): idom(%d) = %d, CHK says %d (graph %v)",
					iter, shape, n, v, got, want[v], dumpRefs(g))
			}
		}
		// Retained sizes over CHK's tree: children after parents in
		// d.Order() was checked elsewhere; here sum bottom-up by depth.
		depth := make([]int, n)
		var depthOf func(v int) int
		depthOf = func(v int) int {
			if want[v] == NoNode {
				return 0
			}
			if depth[v] == 0 {
				depth[v] = 1 + depthOf(int(want[v]))
			}
			return depth[v]
		}
		byDepth := make([][]int, n+1)
		for v := range n {
			byDepth[depthOf(v)] = append(byDepth[depthOf(v)], v)
		}
		retained := make([]uint64, n)
		for k := n; k >= 0; k-- {
			for _, v := range byDepth[k] {
				retained[v] += g.Size(NodeID(v))
				if p := want[v]; p != NoNode {
					retained[p] += retained[v]
				}
			}
		}
		for v := range n {
			if got := d.Retained(NodeID(v)); got != retained[v] {
				t.Fatalf("iteration %d (shape %d): retained(%d) = %d, CHK's tree gives %d", iter, shape, v, got, retained[v])
			}
		}
	}
}
