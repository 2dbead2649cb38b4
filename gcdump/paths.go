package gcdump

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrNoSuchType is wrapped by FindPaths' error when no type matches.
var ErrNoSuchType = errors.New("no such type in the snapshot")

// PathStep is a node on a path from the roots, or a run of objects of one
// type (a linked list) when Count is above 1.
type PathStep struct {
	Type    string `json:"type"`
	Address uint64 `json:"address,omitempty"`
	// Count is the number of objects of Type in a row on the path (a
	// chain), 0 or 1 for a single one; Address is the first of them.
	Count int64 `json:"count,omitempty"`
	// Pseudo is set for the root pseudo-nodes ([local vars], [static var
	// ...]): the kind of root, not an object.
	Pseudo bool `json:"pseudo,omitempty"`
}

// Path is a chain of references from a root to objects of the searched
// type. Objects whose shortest paths have the same shape share one Path:
// the same root and the same types in the same order, a run of objects of
// one type (a linked list of any length) counting as one. Steps is the
// path of the first (and shortest) of them.
type Path struct {
	// Root says in words what holds the chain: "static field s_items
	// (holds System.Collections.Generic.List<App.Item>)", "a local
	// variable (stack root)", "a strong GC handle", "the finalizer queue".
	Root  string     `json:"root"`
	Steps []PathStep `json:"steps"`
	// Depth is the number of objects on Steps' path, the object of the
	// searched type included.
	Depth int64 `json:"depth"`
	// Objects and Size count the objects of the type reached this way.
	Objects int64  `json:"objects"`
	Size    uint64 `json:"size"`
}

// Paths answers "what keeps the objects of a type alive".
type Paths struct {
	Type    string `json:"type"`
	Objects int64  `json:"objects"`
	Size    uint64 `json:"size"`
	Paths   []Path `json:"paths"`
	// More counts the objects whose kinds of path were cut by max, in
	// MoreKinds kinds.
	More      int64 `json:"more,omitempty"`
	MoreKinds int   `json:"moreKinds,omitempty"`
	// Unreachable counts objects of the type that no root reaches.
	Unreachable int64 `json:"unreachable,omitempty"`
}

// MatchType returns the indexes of the types the name designates: the
// types with exactly that name (or Module!Name), or else the types whose
// name ends with "."+name or contains name, when that is a single type
// name. Multi-dimensional arrays match in either spelling,
// System.String[,] or TraceEvent's System.String<,>. An ambiguous name
// gives an error listing the candidates.
func MatchType(g *Graph, name string) ([]int, error) {
	name = canonicalTypeName(name)
	var exact, suffix, sub []int
	names := map[string]bool{}
	for i, t := range g.Types {
		if i == 0 || t.IsPseudo() {
			continue
		}
		tn := canonicalTypeName(t.Name)
		switch {
		case tn == name || t.Module+"!"+tn == name:
			exact = append(exact, i)
		case strings.HasSuffix(tn, "."+name):
			suffix = append(suffix, i)
		case strings.Contains(tn, name):
			sub = append(sub, i)
		}
	}
	for _, set := range [][]int{exact, suffix, sub} {
		if len(set) == 0 {
			continue
		}
		clear(names)
		for _, i := range set {
			names[canonicalTypeName(g.Types[i].Name)] = true
		}
		if len(names) == 1 {
			return set, nil
		}
		var list []string
		for n := range names {
			list = append(list, n)
		}
		slices.Sort(list)
		if len(list) > 10 {
			list = append(list[:10], "...")
		}
		return nil, fmt.Errorf("%q matches %d types; give the full name: %s", name, len(names), strings.Join(list, ", "))
	}
	return nil, fmt.Errorf("%w: %q (see the type names with 'gcdump report')", ErrNoSuchType, name)
}

// Root kinds in the order in which they are preferred when several hold
// the same object, as PerfView's default priorities order them: static
// fields first (the most telling answer), then local variables, then COM
// wrappers, and GC handles last (the runtime's own handles, among them the
// pinned arrays in which .NET Core 3.1 keeps static fields, hold almost
// everything the statics hold).
const (
	rankStatic = iota
	rankLocal
	rankCOM
	rankHandle
)

// rootRank returns the rank of a root pseudo-node by its name; unknown
// names (files from other tools) take their parent's rank, given.
func rootRank(name string, parent int) int {
	switch {
	case name == "[static vars]", name == "[thread static vars]", strings.HasPrefix(name, "[static var "):
		return rankStatic
	case name == "[local vars]":
		return rankLocal
	case name == "[COM/WinRT Objects]":
		return rankCOM
	case name == "[other roots]", strings.HasSuffix(strings.ToLower(name), "handles]"):
		return rankHandle
	}
	return parent
}

// rootKind is a pseudo-node that holds objects: a kind of root.
type rootKind struct {
	node NodeID
	rank int
}

// rootKinds lists the pseudo-nodes that hold objects, reached from the
// graph's Root through pseudo-nodes, in the order in which their objects
// are preferred (see rootRank; depth first within a rank, the Root itself
// last when it refers to objects directly), and the parent of every
// pseudo-node it reached (the Root's is NoNode).
func rootKinds(g *Graph) ([]rootKind, map[NodeID]NodeID) {
	var kinds []rootKind
	parents := map[NodeID]NodeID{g.Root: NoNode}
	type frame struct {
		node NodeID
		rank int
	}
	stack := []frame{{g.Root, rankHandle}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		holds := false
		refs := g.Refs(f.node)
		for i := len(refs) - 1; i >= 0; i-- { // pushed in reverse: visited in order
			c := refs[i]
			if !g.isPseudo(c) {
				holds = true
				continue
			}
			if _, seen := parents[c]; !seen {
				parents[c] = f.node
				stack = append(stack, frame{c, rootRank(g.TypeName(c), f.rank)})
			}
		}
		if holds {
			kinds = append(kinds, rootKind(f))
		}
	}
	slices.SortStableFunc(kinds, func(a, b rootKind) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(b2i(a.node == g.Root), b2i(b.node == g.Root)))
	})
	return kinds, parents
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isPseudo reports whether n is the Root or a pseudo-node.
func (g *Graph) isPseudo(n NodeID) bool { return n == g.Root || g.Types[g.typ[n]].IsPseudo() }

// pathsCheckEvery is how many nodes FindPaths visits between two looks at
// its context.
const pathsCheckEvery = 1 << 16

// FindPaths finds, for every object of the named type (see MatchType), its
// shortest path from the roots (counted in objects: the root pseudo-nodes
// are free), and groups the objects by the shape of their paths: the root
// and the types along the path, a run of objects of one type counting as
// one. Among paths of the same length, one from a static field wins over
// one from a local variable, and those over one from a GC handle (see
// rootRank). At most max groups are returned (0: 10), largest first; the
// others are counted in More.
//
// It is one breadth-first search from the roots: O(objects + references)
// time, and one int32 per node (the predecessor on the shortest-path tree)
// plus the search's frontier. A group is known by a 64-bit hash of its
// shape, carried down the tree; only the groups returned have their path
// spelled out. It stops with the context's error when ctx ends.
func FindPaths(ctx context.Context, g *Graph, name string, max int) (*Paths, error) {
	if max <= 0 {
		max = 10
	}
	match, err := MatchType(g, name)
	if err != nil {
		return nil, err
	}
	want := make([]bool, len(g.Types))
	for _, i := range match {
		want[i] = true
	}
	n := g.NumNodes()
	parent := make([]NodeID, n)
	for i := range parent {
		parent[i] = NoNode
	}
	parent[g.Root] = g.Root

	// The queue holds the frontier with, per node, its depth in objects
	// and the hash of its path's shape. The objects the kinds of root hold
	// come first, in the order of the kinds.
	var q pathQueue
	kinds, pseudoParent := rootKinds(g)
	hashes := make(map[NodeID]uint64, len(pseudoParent))
	var pseudoHash func(p NodeID) uint64
	pseudoHash = func(p NodeID) uint64 {
		if h, ok := hashes[p]; ok {
			return h
		}
		var h uint64
		if pp := pseudoParent[p]; pp != NoNode {
			h = pseudoHash(pp)
		}
		h = shapeHash(h, g.typ[p])
		hashes[p] = h
		return h
	}
	for p, pp := range pseudoParent {
		if pp != NoNode {
			parent[p] = pp
		}
	}
	for _, k := range kinds {
		h := pseudoHash(k.node)
		for _, c := range g.Refs(k.node) {
			if parent[c] == NoNode && !g.isPseudo(c) {
				parent[c] = k.node
				q.push(c, shapeHash(h, g.typ[c]))
			}
		}
	}

	type group struct {
		rep     NodeID
		depth   uint32
		objects int64
		size    uint64
	}
	var groups []group
	byShape := map[uint64]int32{}
	// The search goes level by level: depth is the level of the nodes
	// popped, left the number of them still in the queue.
	depth, left := uint32(1), q.len()
	for visited := 0; q.len() > 0; visited++ {
		if visited%pathsCheckEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if left == 0 {
			depth, left = depth+1, q.len()
		}
		left--
		v, shape := q.pop()
		tv := g.typ[v]
		if want[tv] {
			gi, ok := byShape[shape]
			if !ok {
				gi = int32(len(groups))
				groups = append(groups, group{rep: v, depth: depth})
				byShape[shape] = gi
			}
			groups[gi].objects++
			groups[gi].size += uint64(g.size[v])
		}
		for _, c := range g.Refs(v) {
			if parent[c] != NoNode {
				continue
			}
			parent[c] = v
			h := shape
			if tc := g.typ[c]; tc != tv {
				h = shapeHash(h, tc)
			}
			q.push(c, h)
		}
	}

	res := &Paths{Type: g.Types[match[0]].Name}
	for v := range n {
		if v%pathsCheckEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if want[g.typ[v]] {
			res.Objects++
			res.Size += uint64(g.size[v])
			if parent[v] == NoNode {
				res.Unreachable++
			}
		}
	}
	order := make([]int32, len(groups))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &groups[a], &groups[b]
		return cmp.Or(cmp.Compare(y.objects, x.objects), cmp.Compare(x.depth, y.depth), cmp.Compare(a, b))
	})
	for i, gi := range order {
		gr := &groups[gi]
		if i >= max {
			res.More += gr.objects
			res.MoreKinds++
			continue
		}
		steps := pathSteps(g, parent, gr.rep)
		res.Paths = append(res.Paths, Path{Root: describeRoot(steps), Steps: steps, Depth: int64(gr.depth), Objects: gr.objects, Size: gr.size})
	}
	return res, nil
}

// pathSteps spells out the path from the Root (excluded) to v, runs of
// objects of one type as one step.
func pathSteps(g *Graph, parent []NodeID, v NodeID) []PathStep {
	var steps []PathStep // v first
	for x := v; x != g.Root && x != NoNode; x = parent[x] {
		t := g.TypeName(x)
		pseudo := g.isPseudo(x)
		if k := len(steps) - 1; k >= 0 && !pseudo && !steps[k].Pseudo && steps[k].Type == t {
			steps[k].Count++
			steps[k].Address = g.addr[x] // the run's first object, from the root
			continue
		}
		steps = append(steps, PathStep{Type: t, Address: g.addr[x], Count: 1, Pseudo: pseudo})
		if len(steps) > 1<<20 {
			break // a cycle would be a bug; never loop forever
		}
	}
	slices.Reverse(steps)
	for i := range steps {
		if steps[i].Count == 1 || steps[i].Pseudo {
			steps[i].Count = 0
		}
		if steps[i].Pseudo {
			steps[i].Address = 0
		}
	}
	return steps
}

// shapeHash extends the hash of a path's shape by a type.
func shapeHash(h uint64, t uint32) uint64 {
	x := h ^ (uint64(t)+1)*0x9E3779B97F4A7C15
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// pathQueue is FindPaths' frontier: a FIFO ring buffer of nodes with the
// hash of their path's shape (12 bytes a node), which grows as needed: its
// size is the widest frontier, not the number of nodes.
type pathQueue struct {
	nodes      []NodeID
	shapes     []uint64
	head, size int
}

func (q *pathQueue) len() int { return q.size }

func (q *pathQueue) push(v NodeID, shape uint64) {
	if q.size == len(q.nodes) {
		n := max(64, 2*len(q.nodes))
		nodes, shapes := make([]NodeID, n), make([]uint64, n)
		k := copy(nodes, q.nodes[q.head:])
		copy(nodes[k:], q.nodes[:q.head])
		copy(shapes, q.shapes[q.head:])
		copy(shapes[k:], q.shapes[:q.head])
		q.nodes, q.shapes, q.head = nodes, shapes, 0
	}
	i := q.head + q.size
	if i >= len(q.nodes) {
		i -= len(q.nodes)
	}
	q.nodes[i], q.shapes[i] = v, shape
	q.size++
}

func (q *pathQueue) pop() (NodeID, uint64) {
	v, h := q.nodes[q.head], q.shapes[q.head]
	if q.head++; q.head == len(q.nodes) {
		q.head = 0
	}
	q.size--
	return v, h
}

// describeRoot names the kind of root a path starts from.
func describeRoot(steps []PathStep) string {
	kind := ""
	for _, s := range steps {
		if !s.Pseudo {
			break
		}
		kind = s.Type
	}
	switch {
	case kind == "[local vars]":
		return "a local variable or argument of a running method (stack root)"
	case strings.HasPrefix(kind, "[static var "):
		v := strings.TrimSuffix(strings.TrimPrefix(kind, "[static var "), "]")
		if i := strings.LastIndexByte(v, '.'); i > 0 {
			return fmt.Sprintf("static field %s (holds %s)", v[i+1:], v[:i])
		}
		return "static field " + v
	case kind == "[strong Handles]":
		return "a strong GC handle (GCHandle.Alloc, or a runtime handle)"
	case kind == "[pinning Handles]":
		return "a pinning GC handle (pinned objects, and the arrays that hold static fields)"
	case kind == "[finalizer Handles]":
		return "the finalizer queue (finalizable objects)"
	case kind == "[Dependent Handles]":
		return "a ConditionalWeakTable entry (dependent handle)"
	case kind == "[COM/WinRT Objects]":
		return "a COM/WinRT reference"
	case kind == "[other Handles]":
		return "another kind of GC handle"
	case kind == "":
		return "no root"
	}
	return kind
}

// WriteText prints the paths, root first.
func (p *Paths) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s objects of %s (%s bytes)", group(p.Objects), p.Type, group(int64(p.Size)))
	if len(p.Paths) == 0 {
		fmt.Fprintln(w, ": no root reaches them.")
		return nil
	}
	fmt.Fprintln(w, "; shortest paths from the roots:")
	for _, path := range p.Paths {
		fmt.Fprintf(w, "\n%s objects (%s bytes) held by %s", group(path.Objects), group(int64(path.Size)), path.Root)
		if path.Depth > 1 {
			fmt.Fprintf(w, ", %s objects deep", group(path.Depth))
		}
		fmt.Fprintln(w, ":")
		for i, s := range path.Steps {
			prefix := "  "
			if i > 0 {
				prefix = "  -> "
			}
			switch {
			case s.Pseudo:
				fmt.Fprintf(w, "%s%s\n", prefix, s.Type)
			case s.Count > 1:
				fmt.Fprintf(w, "%s%s @0x%x (+ %s more %s in a chain)\n", prefix, s.Type, s.Address, group(s.Count-1), s.Type)
			default:
				fmt.Fprintf(w, "%s%s @0x%x\n", prefix, s.Type, s.Address)
			}
		}
	}
	if p.More > 0 {
		fmt.Fprintf(w, "\n%s more objects are held through %s other kinds of path (raise --max).\n", group(p.More), group(int64(p.MoreKinds)))
	}
	if p.Unreachable > 0 {
		fmt.Fprintf(w, "\n%s objects are reachable from no root (garbage at the next collection).\n", group(p.Unreachable))
	}
	_, err := fmt.Fprint(w)
	return err
}
