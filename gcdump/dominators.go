package gcdump

import (
	"context"
	"math/bits"
	"unsafe"
)

// Dominators is the dominator tree of a graph: node d dominates node n
// when every path from the roots to n goes through d, so that freeing d
// would free n. The retained (dominated) size of a node is its size plus
// the sizes of all the nodes it dominates.
//
// The tree hangs from a virtual node above the graph's Root; nodes the
// Root does not reach (objects reported by the heap walk that no root
// leads to) hang from it too, each as the root of its own subtree.
//
// Inside, vertices are numbered in the depth-first order of the search
// that found them (1 to n; 0 is the virtual node), and every array but num
// is indexed by that number: walking them in order walks the tree top
// down, with no random access by node.
type Dominators struct {
	g        *Graph
	order    []NodeID // DFS number -> node; order[0] is NoNode
	num      []uint32 // node -> DFS number
	idom     []uint32 // DFS number -> its immediate dominator's, 0 for the virtual node
	retained []uint64 // by DFS number
	// The dominator tree's children, by DFS number: the first child of
	// v is links[v]>>32 (0 for none), and its next sibling is the low half
	// of the child's own word.
	links   []uint64
	reached int // order[1:reached+1] are the nodes the Root reaches
	// Unreachable counts the nodes that the graph's Root does not reach.
	Unreachable int
}

// BytesPerNodeDominators is what a Dominators keeps per node: the DFS
// order and numbering, the immediate dominators, the retained sizes and
// the tree's child and sibling links (4+4+4+8+8). Computing it takes no
// more memory than that but the predecessors (4 bytes a reference beyond
// the first of each node), so that it leaves little for the garbage
// collector.
const BytesPerNodeDominators = 4 + 4 + 4 + 8 + 8

// ComputeDominators computes the dominator tree. See
// ComputeDominatorsContext.
func ComputeDominators(g *Graph) *Dominators {
	d, _ := ComputeDominatorsContext(context.Background(), g)
	return d
}

// domCheckEvery is how many vertices ComputeDominatorsContext handles
// between two looks at its context.
const domCheckEvery = 1 << 16

// ComputeDominatorsContext computes the dominator tree with the semi-NCA
// algorithm (Georgiadis, Tarjan and Werneck: Lengauer and Tarjan's
// semidominators, then each immediate dominator as the nearest common
// ancestor of the DFS parent and the semidominator), iteratively over
// flat arrays of 32-bit vertex numbers: a linked list of millions of
// objects is fine, and there are no pointers for the garbage collector to
// follow. The semidominators' forest is Lengauer and Tarjan's balanced
// one (link by size, eval with path compression: O(E α(E, V)) time), which
// keeps the paths that eval walks short where the simple forest (the DFS
// tree itself) made them long on large heaps: each step of a path is a
// cache miss. It returns the context's error when ctx ends first.
//
// Predecessor lists are filled during the depth-first search itself,
// indexed by node: a first pass counts each node's references (all but
// one, since one of them is the tree edge that finds it, which needs no
// slot); the search then files each reference to a node it has already
// seen under that node, with the referrer's DFS number. A bitmap of seen
// nodes (one bit a node: it stays in the processor's cache) answers the
// search's question "seen?" without a memory access per reference.
func ComputeDominatorsContext(ctx context.Context, g *Graph) (*Dominators, error) {
	n := g.NumNodes()
	V := n + 1
	if uint64(V) >= 1<<32-2 {
		return nil, ErrTooLarge
	}

	// Slots for predecessors: each node's count of references, less one
	// (the tree edge, or for a search's start the first reference to it,
	// dropped: a start's only semidominator is the virtual node). Counts
	// go to predOff[v+2], so that after the prefix sums predOff[v+1] is
	// v's cursor and, once every slot is filled, predOff[v] its start and
	// predOff[v+1] its end.
	predOff := make([]uint32, n+2)
	adviseHuge(predOff) // before the first write: see adviseHuge
	for i := 0; i < len(g.edges); i += domCheckEvery {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for _, c := range g.edges[i:min(i+domCheckEvery, len(g.edges))] {
			predOff[c+2]++
		}
	}
	// A start's first reference is dropped (see seenRef). Nothing refers
	// to a heap's Root, so the search from it, most of the work, need not
	// look.
	checkStarts := predOff[g.Root+2] != 0
	for v := 2; v < n+2; v++ {
		predOff[v] += predOff[v-1] - min(predOff[v], 1)
	}
	preds := make([]uint32, predOff[n+1])
	adviseHuge(preds)

	// Depth-first search from the Root, then from each node not reached
	// yet in index order. f holds the search's stack and its copy of the
	// references' offsets before it holds the semidominators' forest,
	// and then the results.
	order := make([]NodeID, V)
	order[0] = NoNode
	parent := make([]uint32, V) // becomes idom
	f := make([]uint64, 2*(V+1))
	seen := make([]uint64, (n+63)/64)
	free := make([]uint64, (n+63)/64) // a start's reference to drop
	adviseHuge(order)
	adviseHuge(parent)
	adviseHuge(f)

	// A step down the search is a cache miss on the node, in a chain that
	// nothing overlaps: the next node is known only when the miss
	// returns. rec holds each node's first two references (the first in
	// the low half; NoNode where there is none), read together with the
	// node's offsets (asked for at the same time, so the two misses
	// overlap): a step through the first or the second reference costs
	// that one miss. The other references are read when the search comes
	// back to the node, after a prefetch. (With the offset in rec instead
	// of the second reference, every node whose first reference led to a
	// node seen waited for a second miss on its references: 4.1 million
	// of the 10 million steps on the uniform benchmark heap. Without the
	// offsets, from a bitmap of nodes with more than two references and
	// with the offsets read on the way back, it was 1 to 1.4 CPU s
	// slower there: most returns come soon after the step down, and then
	// waited for the offsets and the references in turn.) rec takes
	// f's last n+1 words; the stack, one word a level, takes its first
	// ones: a search is at most V levels deep, and f has 2V+2 words.
	rec := f[len(f)-(n+1):]
	for v := 0; v < n; v += domCheckEvery {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for u := v; u < min(v+domCheckEvery, n); u++ {
			a, end := g.off[u], g.off[u+1]
			first, second := NoNode, NoNode
			if a < end {
				first = g.edges[a]
			}
			if a+1 < end {
				second = g.edges[a+1]
			}
			rec[u] = uint64(second)<<32 | uint64(first)
		}
	}
	stack := f[:len(f)-(n+1)]

	next := uint32(1)
	// References to nodes already seen wait in pend (node, referrer)
	// until file puts them in their slots: a tight loop of independent
	// accesses, which the processor overlaps.
	var pend [4096]uint64
	np := 0
	file := func() {
		for i, p := range pend[:np] {
			// Ask for the counters of later items, then for the
			// slots of nearer ones (whose counters were asked for).
			// An item takes a few nanoseconds and a miss a few
			// hundred: the distances cover that.
			if i+2*fileDist < np {
				prefetch(unsafe.Pointer(&predOff[pend[i+2*fileDist]>>32+1]))
			}
			if i+fileDist < np {
				prefetch(unsafe.Pointer(&preds[min(predOff[pend[i+fileDist]>>32+1], uint32(len(preds)-1))]))
			}
			c := uint32(p >> 32)
			preds[predOff[c+1]] = uint32(p)
			predOff[c+1]++
		}
		np = 0
	}
	// seenRef files a reference from cur to c, which the search has
	// seen: unless it is the one reference to a search's start that
	// needs no slot (checkStarts: only once a start has references).
	seenRef := func(c NodeID, cur uint32) {
		word, bit := c/64, uint64(1)<<(c%64)
		if checkStarts && free[word]&bit != 0 {
			free[word] &^= bit
			return
		}
		// Filed later, in batches: the slot's counter is a random
		// access that would otherwise stall the search's own chain of
		// loads.
		pend[np] = uint64(c)<<32 | uint64(cur)
		if np++; np == len(pend) {
			file()
		}
	}
	unseen := func(c NodeID) bool { return seen[c/64]&(1<<(c%64)) == 0 }
	// search returns false when ctx ended. A level of the stack is the
	// cursor and the end of its node's references; its vertex, the
	// parent of the level above's, is read back from parent, so that a
	// level takes one word.
	search := func(start NodeID) bool {
		free[start/64] |= 1 << (start % 64)
		c, cur := start, uint32(0)
		sp := 0
	visit:
		for {
			// Down from c, which the search has not seen, as long as
			// the first two references lead to a node not seen.
			for {
				w := next
				next++
				if w%domCheckEvery == 0 && ctx.Err() != nil {
					return false
				}
				order[w], parent[w] = c, cur
				seen[c/64] |= 1 << (c % 64)
				cur = w
				prefetch(unsafe.Pointer(&g.off[c]))
				r := rec[c]
				a, end := g.off[c], g.off[c+1]
				if a+1 < end {
					prefetch(unsafe.Pointer(&g.edges[a+1]))
				}
				// The first two references come from rec: a node
				// whose first leads nowhere new needs no read of its
				// references unless it has more than two.
				e, inRec := a, min(end, a+2)
				for ; e < inRec && !unseen(NodeID(r)); e++ {
					seenRef(NodeID(r), cur)
					r >>= 32
				}
				if e < inRec {
					stack[sp] = uint64(e+1)<<32 | uint64(end)
					sp++
					c = NodeID(r)
					continue
				}
				stack[sp] = uint64(e)<<32 | uint64(end)
				sp++
				break
			}
			// Along the references of the stack's top, then back up.
			for sp > 0 {
				top := stack[sp-1]
				e, end := uint32(top>>32), uint32(top)
				for e < end {
					x := g.edges[e]
					e++
					if unseen(x) {
						stack[sp-1] = uint64(e)<<32 | uint64(end)
						// Ask for the offsets of the next
						// siblings, read when the search comes
						// back here.
						for _, y := range g.edges[e:min(end, e+pfRefs)] {
							if unseen(y) {
								prefetch(unsafe.Pointer(&rec[y]))
								prefetch(unsafe.Pointer(&g.off[y]))
							}
						}
						c = x
						continue visit
					}
					seenRef(x, cur)
				}
				sp--
				cur = parent[cur]
				// Ask for what the search will read when it comes
				// back to the levels below: their next references
				// (2*pfDist levels down), and the words in rec of
				// those not seen (pfDist levels down, whose
				// references were asked for earlier).
				if sp > 2*pfDist {
					if below := stack[sp-1-2*pfDist]; uint32(below>>32) < uint32(below) {
						prefetch(unsafe.Pointer(&g.edges[below>>32]))
					}
				}
				if sp > pfDist {
					below := stack[sp-1-pfDist]
					e, end := uint32(below>>32), uint32(below)
					for _, y := range g.edges[e:min(end, e+pfRefs)] {
						if unseen(y) {
							prefetch(unsafe.Pointer(&rec[y]))
							prefetch(unsafe.Pointer(&g.off[y]))
						}
					}
				}
			}
			return true
		}
	}
	if !search(g.Root) {
		return nil, ctx.Err()
	}
	reached := int(next) - 1
	for w := range seen {
		for ^seen[w] != 0 {
			v := w*64 + bits.TrailingZeros64(^seen[w])
			if v >= n {
				break
			}
			checkStarts = true
			if !search(NodeID(v)) {
				return nil, ctx.Err()
			}
		}
	}
	file()
	seen, free = nil, nil

	// Semidominators, in decreasing DFS number, with Lengauer and
	// Tarjan's link and eval over a forest kept in f, two words a vertex:
	// f[2x] is its forest ancestor (high half; none is V) and the
	// smallest semidominator on its compressed path (low half: the
	// semidominator of its "label"); f[2x+1] is the size of its subtree
	// (high) and its "child" (low; none is V). Vertex V is the sentinel,
	// of size 0 and value 0. Semidominators are only ever compared, so
	// the values stand for the labels. A vertex's own semidominator is
	// kept, once the vertex is done, in the first of its predecessor
	// slots (a vertex without one has its parent, or the virtual node for
	// a search's start, as semidominator).
	none := uint32(V)
	anc := func(x uint32) uint32 { return uint32(f[2*x] >> 32) }
	val := func(x uint32) uint32 { return uint32(f[2*x]) }
	size := func(x uint32) uint32 { return uint32(f[2*x+1] >> 32) }
	kid := func(x uint32) uint32 { return uint32(f[2*x+1]) }
	setAnc := func(x, a uint32) { f[2*x] = uint64(a)<<32 | f[2*x]&0xFFFFFFFF }
	setVal := func(x, v uint32) { f[2*x] = f[2*x]&^0xFFFFFFFF | uint64(v) }
	setSize := func(x, s uint32) { f[2*x+1] = uint64(s)<<32 | f[2*x+1]&0xFFFFFFFF }
	setKid := func(x, c uint32) { f[2*x+1] = f[2*x+1]&^0xFFFFFFFF | uint64(c) }
	for x := range uint32(V) {
		// An unlinked vertex's value is its own number (Lengauer and
		// Tarjan's initial label): a root's value is never below the
		// semidominator it is compared with.
		f[2*x], f[2*x+1] = uint64(none)<<32|uint64(x), 1<<32|uint64(none)
	}
	f[2*none], f[2*none+1] = uint64(none)<<32, uint64(none)
	var path []uint32
	eval := func(v uint32) uint32 {
		a := anc(v)
		if a == none {
			return val(v)
		}
		if anc(a) != none {
			// Compress: every vertex on the path below the root's
			// child takes the smaller value of its ancestor's and
			// points where its ancestor points, from the top down.
			path = append(path[:0], v)
			for x := a; anc(anc(x)) != none; x = anc(x) {
				path = append(path, x)
			}
			for k := len(path) - 1; k >= 0; k-- {
				x := path[k]
				ax := anc(x)
				f[2*x] = uint64(anc(ax))<<32 | uint64(min(val(x), val(ax)))
			}
			a = anc(v)
		}
		return min(val(v), val(a))
	}
	link := func(v, w uint32) {
		s := w
		vw := val(w)
		for {
			cs := kid(s)
			if vw >= val(cs) {
				break
			}
			if ccs := kid(cs); size(s)+size(ccs) >= 2*size(cs) {
				setAnc(cs, s)
				setKid(s, ccs)
			} else {
				setSize(cs, size(s))
				setAnc(s, cs)
				s = cs
			}
		}
		setVal(s, vw)
		sw := size(w)
		setSize(v, size(v)+sw)
		if size(v) < 2*sw {
			s, cv := kid(v), s
			setKid(v, cv)
			for ; s != none; s = kid(s) {
				setAnc(s, v)
			}
			return
		}
		for ; s != none; s = kid(s) {
			setAnc(s, v)
		}
	}
	for w := uint32(V - 1); w >= 1; w-- {
		if w%domCheckEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Ask ahead for what the turns of w-pfDist.. will read: their
		// predecessor ranges, their predecessors, and those
		// predecessors' forest words and their forest ancestors'
		// (each stage reading what the one before asked for), and the
		// parent's forest words, which link reads.
		if w > 3*pfDist && len(preds) > 0 {
			prefetch(unsafe.Pointer(&predOff[order[w-3*pfDist]]))
			n2 := order[w-2*pfDist]
			prefetch(unsafe.Pointer(&preds[min(predOff[n2], uint32(len(preds)-1))]))
			w1 := w - pfDist
			n1 := order[w1]
			for _, v := range preds[predOff[n1]:predOff[n1+1]] {
				if v > w1 {
					prefetch(unsafe.Pointer(&f[2*v]))
				}
			}
			prefetch(unsafe.Pointer(&f[2*parent[w1]]))
			w0 := w - pfDist/2
			n0 := order[w0]
			for _, v := range preds[predOff[n0]:predOff[n0+1]] {
				if v > w0 {
					prefetch(unsafe.Pointer(&f[2*anc(v)]))
				}
			}
		}
		p := parent[w]
		s := p
		if p != 0 {
			node := order[w]
			ps := preds[predOff[node]:predOff[node+1]]
			for _, v := range ps {
				if v > w {
					v = eval(v)
				}
				s = min(s, v)
			}
			if len(ps) > 0 {
				ps[0] = s
			}
		}
		setVal(w, s)
		link(p, w)
	}
	path = nil

	// Immediate dominators, in increasing DFS number: the nearest common
	// ancestor of the parent and the semidominator is the first vertex up
	// the dominator tree from the parent that is not below the
	// semidominator. In the same pass, the memory of the arrays no longer
	// needed takes the results: parent becomes idom, predOff the node
	// numbering, and f the retained sizes (its first V words) and the
	// tree's child and sibling links (the next V). A vertex's first child
	// is linked after its own semidominator was read.
	idom := parent
	num := predOff[:n]
	retained := f[:V:V]
	links := f[V : 2*V : 2*V] // child (high), sibling (low)
	semiOf := func(w uint32, node NodeID) uint32 {
		if a, b := predOff[node], predOff[node+1]; a < b {
			return preds[a]
		}
		return parent[w]
	}
	links[0] = 0
	// The walk up the dominator tree is short on heaps, but a crafted
	// graph can make it long for many vertices (a chain whose end and
	// whose start both refer to the same many objects: quadratic). When
	// the walks have taken more than a few steps a vertex, the tree gets
	// Myers' skew-binary jump pointers (jp: depth, high half, and an
	// ancestor, low half), over which each walk takes O(log depth) steps:
	// DFS numbers decrease up the tree, so a jump to an ancestor still
	// above the semidominator passes nothing that the walk wants.
	var jp []uint64
	steps := 0
	setJump := func(x uint32) {
		p := idom[x]
		dp, j := jp[p]>>32, uint32(jp[p])
		dj, jj := jp[j]>>32, uint32(jp[j])
		if dp-dj == dj-jp[jj]>>32 {
			jp[x] = (dp+1)<<32 | uint64(jj)
		} else {
			jp[x] = (dp+1)<<32 | uint64(p)
		}
	}
	for w := uint32(1); w < uint32(V); w++ {
		if w%domCheckEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The same, for the semidominators kept in the predecessor
		// slots, the node sizes and the first dominator looked at.
		if int(w)+2*pfDist < V && len(preds) > 0 {
			n2 := order[w+2*pfDist]
			prefetch(unsafe.Pointer(&predOff[n2]))
			prefetch(unsafe.Pointer(&g.size[n2]))
			n1 := order[w+pfDist]
			prefetch(unsafe.Pointer(&preds[min(predOff[n1], uint32(len(preds)-1))]))
			prefetch(unsafe.Pointer(&idom[parent[w+pfDist]]))
		}
		node := order[w]
		s, i := semiOf(w, node), parent[w]
		if jp == nil {
			for i > s {
				i = idom[i]
				steps++
			}
			if steps > 4*V {
				jp = make([]uint64, V) // the virtual node: depth 0, jump to itself
				for x := uint32(1); x < w; x++ {
					setJump(x)
				}
			}
		} else {
			for i > s {
				if j := uint32(jp[i]); j > s {
					i = j
				} else {
					i = idom[i]
				}
			}
		}
		idom[w] = i
		if jp != nil {
			setJump(w)
		}
		retained[w] = uint64(g.size[node])
		links[w] = links[i] >> 32                      // no child yet; sibling: i's first child
		links[i] = uint64(w)<<32 | links[i]&0xFFFFFFFF // w is i's first child
	}
	// The node numbering goes where predOff was, now that no semidominator
	// is read from the predecessor slots.
	for w := 1; w < V; w++ {
		num[order[w]] = uint32(w)
	}
	retained[0] = 0
	for w := V - 1; w >= 1; w-- {
		retained[idom[w]] += retained[w]
	}
	return &Dominators{g: g, order: order, num: num, idom: idom, retained: retained,
		links: links, reached: reached, Unreachable: n - reached}, nil
}

// Idom returns the immediate dominator of n, or NoNode for the Root and
// for nodes that the Root does not reach and nothing else dominates.
func (d *Dominators) Idom(n NodeID) NodeID {
	i := d.idom[d.num[n]]
	if i == 0 {
		return NoNode
	}
	return d.order[i]
}

// Retained returns the size of n and of everything it dominates.
func (d *Dominators) Retained(n NodeID) uint64 { return d.retained[d.num[n]] }

// Order returns the nodes in an order in which every node comes after its
// immediate dominator (the depth-first order of the search). The slice
// aliases d.
func (d *Dominators) Order() []NodeID { return d.order[1:] }

// Unreached returns the nodes the graph's Root does not reach. The slice
// aliases d.
func (d *Dominators) Unreached() []NodeID { return d.order[1+d.reached:] }

// Dominates reports whether a dominates b (a node dominates itself).
func (d *Dominators) Dominates(a, b NodeID) bool {
	na := d.num[a]
	for x := d.num[b]; x != 0; x = d.idom[x] {
		if x == na {
			return true
		}
		if x < na {
			return false // a dominator's number is below its dominees'
		}
	}
	return false
}

// pfDist is how many turns ahead the loops of ComputeDominatorsContext ask
// for the memory they will read.
const pfDist = 8

// fileDist is how many items ahead the filing of predecessors asks for
// the slots it will write (and twice that, for their counters).
const fileDist = 48

// pfRefs is how many references of a node the search looks at ahead.
const pfRefs = 8
