package gcdump

// Dominators is the dominator tree of a graph: node d dominates node n
// when every path from the roots to n goes through d, so that freeing d
// would free n. The retained (dominated) size of a node is its size plus
// the sizes of all the nodes it dominates.
//
// The tree hangs from a virtual node above the graph's Root; nodes the
// Root does not reach (objects reported by the heap walk that no root
// leads to) hang from it too, each as the root of its own subtree.
type Dominators struct {
	g        *Graph
	idom     []NodeID // per node: immediate dominator, NoNode under the virtual root
	retained []uint64 // per node
	order    []NodeID // nodes in DFS preorder: every node comes after its dominator
	// Unreachable counts the nodes that the graph's Root does not reach.
	Unreachable int
}

// BytesPerNodeDominators is what a Dominators keeps per node; computing it
// takes about 48 bytes per node and 4 per reference more, for a while.
const BytesPerNodeDominators = 4 + 8 + 4

// ComputeDominators computes the dominator tree with the Lengauer-Tarjan
// algorithm (path compression, O(E log N) time; iterative, so that a
// linked list of millions of objects does not exhaust the stack).
func ComputeDominators(g *Graph) *Dominators {
	n := g.NumNodes()
	V := n + 1 // DFS numbers: 0 is the virtual root, 1..n the nodes
	num := make([]int32, n)
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
	reached := len(order) - 1
	for i := range n {
		if num[i] < 0 {
			visit(NodeID(i))
		}
	}
	stack = nil

	// Predecessors in DFS numbers; the virtual root precedes every start.
	predOff := make([]uint32, V+1)
	for v := range n {
		for _, c := range g.Refs(NodeID(v)) {
			predOff[num[c]+1]++
		}
	}
	for w := 1; w < V; w++ {
		if parent[w] == 0 {
			predOff[w+1]++
		}
	}
	for w := 1; w <= V; w++ {
		predOff[w] += predOff[w-1]
	}
	preds := make([]int32, predOff[V])
	fill := make([]uint32, V)
	copy(fill, predOff[:V])
	for v := range n {
		nv := num[v]
		for _, c := range g.Refs(NodeID(v)) {
			w := num[c]
			preds[fill[w]] = nv
			fill[w]++
		}
	}
	for w := 1; w < V; w++ {
		if parent[w] == 0 {
			preds[fill[w]] = 0
			fill[w]++
		}
	}
	fill, num = nil, nil

	semi := make([]int32, V)
	label := make([]int32, V)
	ancestor := make([]int32, V)
	idom := make([]int32, V)
	bucket := make([]int32, V) // heads
	next := make([]int32, V)
	for i := range V {
		semi[i], label[i], ancestor[i], bucket[i] = int32(i), int32(i), -1, -1
	}
	var path []int32
	eval := func(v int32) int32 {
		if ancestor[v] < 0 {
			return v
		}
		// Compress the path from v to the root of its tree in the forest,
		// iteratively.
		path = path[:0]
		x := v
		for ancestor[ancestor[x]] >= 0 {
			path = append(path, x)
			x = ancestor[x]
		}
		for k := len(path) - 1; k >= 0; k-- {
			y := path[k]
			a := ancestor[y]
			if semi[label[a]] < semi[label[y]] {
				label[y] = label[a]
			}
			ancestor[y] = ancestor[a]
		}
		return label[v]
	}
	for w := int32(V - 1); w >= 1; w-- {
		for _, v := range preds[predOff[w]:predOff[w+1]] {
			if u := eval(v); semi[u] < semi[w] {
				semi[w] = semi[u]
			}
		}
		next[w] = bucket[semi[w]]
		bucket[semi[w]] = w
		p := parent[w]
		ancestor[w] = p
		for v := bucket[p]; v >= 0; v = next[v] {
			if u := eval(v); semi[u] < semi[v] {
				idom[v] = u
			} else {
				idom[v] = p
			}
		}
		bucket[p] = -1
	}
	for w := 1; w < V; w++ {
		if idom[w] != semi[w] {
			idom[w] = idom[idom[w]]
		}
	}
	preds, predOff, semi, label, ancestor, bucket, next, parent = nil, nil, nil, nil, nil, nil, nil, nil

	// Retained sizes, children before their dominators.
	ret := make([]uint64, V)
	for w := V - 1; w >= 1; w-- {
		ret[w] += uint64(g.size[order[w]])
		ret[idom[w]] += ret[w]
	}
	d := &Dominators{g: g, idom: make([]NodeID, n), retained: make([]uint64, n), order: order[1:], Unreachable: n - reached}
	for w := 1; w < V; w++ {
		node := order[w]
		d.retained[node] = ret[w]
		if idom[w] == 0 {
			d.idom[node] = NoNode
		} else {
			d.idom[node] = order[idom[w]]
		}
	}
	return d
}

// Idom returns the immediate dominator of n, or NoNode for the Root and
// for nodes that the Root does not reach and nothing else dominates.
func (d *Dominators) Idom(n NodeID) NodeID { return d.idom[n] }

// Retained returns the size of n and of everything it dominates.
func (d *Dominators) Retained(n NodeID) uint64 { return d.retained[n] }

// Order returns the nodes in an order in which every node comes after its
// immediate dominator. The slice aliases d.
func (d *Dominators) Order() []NodeID { return d.order }

// Dominates reports whether a dominates b (a node dominates itself).
func (d *Dominators) Dominates(a, b NodeID) bool {
	for x := b; x != NoNode; x = d.idom[x] {
		if x == a {
			return true
		}
	}
	return false
}
