package gcdump

// referenceIdom is the dominator algorithm this package used before
// semi-NCA (Lengauer-Tarjan with path compression and buckets, written
// independently), kept as a second source for the tests: it returns the
// immediate dominator of every node, NoNode under the virtual root.
func referenceIdom(g *Graph) []NodeID {
	n := g.NumNodes()
	V := n + 1              // DFS numbers: 0 is the virtual root, 1..n the nodes
	num := make([]int32, V) // node -> DFS number (reused for the buckets)
	for i := range num {
		num[i] = -1
	}
	order := make([]NodeID, 1, V)
	order[0] = NoNode
	parent := make([]int32, V)

	// Depth-first numbering from the Root, then from every node not yet
	// reached (in index order).
	type frame struct{ node, edge uint32 }
	var stack []frame
	visit := func(start NodeID) {
		num[start] = int32(len(order))
		parent[len(order)] = 0
		order = append(order, start)
		stack = append(stack[:0], frame{uint32(start), g.off[start]})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.edge < g.off[top.node+1] {
				c := g.edges[top.edge]
				top.edge++
				if num[c] < 0 {
					num[c] = int32(len(order))
					parent[len(order)] = num[top.node]
					order = append(order, c)
					stack = append(stack, frame{uint32(c), g.off[c]})
				}
				continue
			}
			stack = stack[:len(stack)-1]
		}
	}
	visit(g.Root)
	for i := range n {
		if num[i] < 0 {
			visit(NodeID(i))
		}
	}
	stack = nil

	// Predecessors in DFS numbers; the virtual root precedes every start.
	// Counts go to predOff[w+2] so that, after the prefix sums, filling
	// with predOff[w+1] as the cursor leaves predOff[w] as w's start.
	predOff := make([]uint32, V+2)
	for v := range n {
		for _, c := range g.Refs(NodeID(v)) {
			predOff[num[c]+2]++
		}
	}
	for w := 1; w < V; w++ {
		if parent[w] == 0 {
			predOff[w+2]++
		}
	}
	for w := 2; w < len(predOff); w++ {
		predOff[w] += predOff[w-1]
	}
	preds := make([]int32, predOff[V+1])
	for v := range n {
		nv := num[v]
		for _, c := range g.Refs(NodeID(v)) {
			w := num[c]
			preds[predOff[w+1]] = nv
			predOff[w+1]++
		}
	}
	for w := 1; w < V; w++ {
		if parent[w] == 0 {
			preds[predOff[w+1]] = 0
			predOff[w+1]++
		}
	}

	// Per DFS number: the forest ancestor (-1 for a tree root), the label
	// (the vertex of smallest semidominator on the compressed path) and
	// that label's semidominator, and the vertex's own semidominator, side
	// by side so that each step of the path compression touches one cache
	// line per vertex.
	type ltv struct{ anc, label, lsemi, semi int32 }
	lt := make([]ltv, V)
	for i := range lt {
		lt[i] = ltv{anc: -1, label: int32(i), lsemi: int32(i), semi: int32(i)}
	}
	idom := make([]int32, V)
	bucket := num // heads; the DFS numbers are not needed any more
	num = nil
	next := make([]int32, V)
	for i := range bucket {
		bucket[i] = -1
	}
	path := make([]int32, 0, 1024)
	// Vertices are linked to their DFS parent in decreasing DFS number, so
	// a vertex is linked (has a forest ancestor) exactly when its number
	// is above lim, the last one not yet linked: eval knows whether a
	// vertex is a tree root without reading it.
	//
	// eval returns the vertex of smallest semidominator on the forest path
	// from v up to (not including) its tree root, and that semidominator,
	// compressing the path iteratively.
	eval := func(v, lim int32) (int32, int32) {
		if v <= lim {
			return v, lt[v].semi
		}
		x := lt[v].anc
		if x <= lim { // v's ancestor is a tree root: nothing to compress
			return lt[v].label, lt[v].lsemi
		}
		path = append(path[:0], v)
		for lt[x].anc > lim {
			path = append(path, x)
			x = lt[x].anc
		}
		for k := len(path) - 1; k >= 0; k-- {
			y := &lt[path[k]]
			a := &lt[y.anc]
			if a.lsemi < y.lsemi {
				y.label, y.lsemi = a.label, a.lsemi
			}
			y.anc = a.anc
		}
		return lt[v].label, lt[v].lsemi
	}
	for w := int32(V - 1); w >= 1; w-- {
		s := lt[w].semi
		for _, v := range preds[predOff[w]:predOff[w+1]] {
			if v <= w {
				// Not linked yet: eval(v) is v, whose semidominator is
				// still v. No need to touch it.
				if v < s {
					s = v
				}
				continue
			}
			if _, sv := eval(v, w); sv < s {
				s = sv
			}
		}
		lt[w].semi, lt[w].lsemi = s, s // w is unlinked: its label is w
		next[w] = bucket[s]
		bucket[s] = w
		p := parent[w]
		lt[w].anc = p // link; now the vertices above w-1 are linked
		for v := bucket[p]; v >= 0; v = next[v] {
			if u, su := eval(v, w-1); su < lt[v].semi {
				idom[v] = u
			} else {
				idom[v] = p
			}
		}
		bucket[p] = -1
	}
	for w := 1; w < V; w++ {
		if idom[w] != lt[w].semi {
			idom[w] = idom[idom[w]]
		}
	}
	// By node: NoNode under the virtual root.
	out := make([]NodeID, n)
	for w := 1; w < V; w++ {
		out[order[w]] = NoNode
		if idom[w] != 0 {
			out[order[w]] = order[idom[w]]
		}
	}
	return out
}
