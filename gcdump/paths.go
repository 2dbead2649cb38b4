package gcdump

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrNoSuchType is wrapped by FindPaths' error when no type matches.
var ErrNoSuchType = errors.New("no such type in the snapshot")

// PathStep is a node on a path from the roots.
type PathStep struct {
	Type    string `json:"type"`
	Address uint64 `json:"address,omitempty"`
	// Pseudo is set for the root pseudo-nodes ([local vars], [static var
	// ...]): the kind of root, not an object.
	Pseudo bool `json:"pseudo,omitempty"`
}

// Path is a chain of references from a root to objects of the searched
// type. Objects whose shortest paths go through the same types share one
// Path; Steps is the path of the first (and shortest) of them.
type Path struct {
	// Root says in words what holds the chain: "static field s_items
	// (holds System.Collections.Generic.List<App.Item>)", "a local
	// variable (stack root)", "a strong GC handle", "the finalizer queue".
	Root  string     `json:"root"`
	Steps []PathStep `json:"steps"`
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
	// More counts the objects whose kinds of path were cut by max.
	More int64 `json:"more,omitempty"`
	// Unreachable counts objects of the type that no root reaches.
	Unreachable int64 `json:"unreachable,omitempty"`
}

// MatchType returns the indexes of the types the name designates: the
// types with exactly that name (or Module!Name), or else the types whose
// name ends with "."+name or contains name, when that is a single type
// name. An ambiguous name gives an error listing the candidates.
func MatchType(g *Graph, name string) ([]int, error) {
	var exact, suffix, sub []int
	names := map[string]bool{}
	for i, t := range g.Types {
		if i == 0 || t.IsPseudo() {
			continue
		}
		switch {
		case t.Name == name || t.String() == name:
			exact = append(exact, i)
		case strings.HasSuffix(t.Name, "."+name):
			suffix = append(suffix, i)
		case strings.Contains(t.Name, name):
			sub = append(sub, i)
		}
	}
	for _, set := range [][]int{exact, suffix, sub} {
		if len(set) == 0 {
			continue
		}
		clear(names)
		for _, i := range set {
			names[g.Types[i].Name] = true
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

// FindPaths finds, for every object of the named type (see MatchType), its
// shortest path from the roots (counted in objects: the root pseudo-nodes
// are free), and groups the objects by the types along their paths. Among
// paths of the same length, one from a static field wins over one from a
// handle, and those over one from a local variable. At most max groups are
// returned (0: 10), largest first.
func FindPaths(g *Graph, name string, max int) (*Paths, error) {
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
	// Shortest paths count objects, not pseudo-nodes: first the pseudo-
	// nodes under the Root, depth first, static fields first, then handles
	// and the finalizer queue, local variables last (a static field is the
	// more telling answer when a local holds the same object); the objects
	// they hold start a breadth-first search whose parent pointers give
	// the paths.
	n := g.NumNodes()
	parent := make([]NodeID, n)
	for i := range parent {
		parent[i] = NoNode
	}
	parent[g.Root] = g.Root
	queue := make([]NodeID, 0, 1024)
	pseudo := func(v NodeID) bool { return v == g.Root || g.Types[g.typ[v]].IsPseudo() }
	stack := []NodeID{g.Root}
	var kids []NodeID
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids = append(kids[:0], g.Refs(v)...)
		slices.SortStableFunc(kids, func(a, b NodeID) int { return cmp.Compare(rootRank(g, a), rootRank(g, b)) })
		for i := len(kids) - 1; i >= 0; i-- { // pushed in reverse: popped in order
			if c := kids[i]; pseudo(c) && parent[c] == NoNode {
				parent[c] = v
				stack = append(stack, c)
			}
		}
		for _, c := range g.Refs(v) {
			if !pseudo(c) && parent[c] == NoNode {
				parent[c] = v
				queue = append(queue, c)
			}
		}
	}
	queue = append([]NodeID{g.Root}, queue...) // the Root itself is not searched
	res := &Paths{Type: g.Types[match[0]].Name}
	type group struct {
		path Path
		key  string
	}
	groups := map[string]*group{}
	var order []*group
	var chain []NodeID
	var key []byte
	for qi := 1; qi < len(queue); qi++ {
		v := queue[qi]
		if want[g.typ[v]] {
			chain = chain[:0]
			for x := v; ; x = parent[x] {
				chain = append(chain, x)
				if x == g.Root {
					break
				}
			}
			slices.Reverse(chain)
			key = key[:0]
			for _, x := range chain[1:] {
				key = fmt.Appendf(key, "%d,", g.typ[x])
			}
			gr := groups[string(key)]
			if gr == nil {
				gr = &group{key: string(key)}
				for _, x := range chain[1:] {
					st := PathStep{Type: g.TypeName(x), Address: g.addr[x], Pseudo: g.Types[g.typ[x]].IsPseudo()}
					gr.path.Steps = append(gr.path.Steps, st)
				}
				gr.path.Root = describeRoot(gr.path.Steps)
				groups[gr.key] = gr
				order = append(order, gr)
			}
			gr.path.Objects++
			gr.path.Size += uint64(g.size[v])
		}
		for _, c := range g.Refs(v) {
			if parent[c] == NoNode {
				parent[c] = v
				queue = append(queue, c)
			}
		}
	}
	for v := range n {
		if want[g.typ[v]] {
			res.Objects++
			res.Size += uint64(g.size[v])
			if parent[v] == NoNode {
				res.Unreachable++
			}
		}
	}
	slices.SortStableFunc(order, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.path.Objects, a.path.Objects), cmp.Compare(len(a.path.Steps), len(b.path.Steps)))
	})
	for i, gr := range order {
		if i >= max {
			res.More += gr.path.Objects
			continue
		}
		res.Paths = append(res.Paths, gr.path)
	}
	return res, nil
}

// rootRank orders the kinds of roots for FindPaths: static fields first,
// then the others (handles, the finalizer queue), local variables last.
func rootRank(g *Graph, v NodeID) int {
	switch name := g.TypeName(v); {
	case !g.Types[g.typ[v]].IsPseudo():
		return 1
	case name == "[static vars]", name == "[thread static vars]", strings.HasPrefix(name, "[static var "):
		return 0
	case name == "[local vars]":
		return 2
	}
	return 1
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
		fmt.Fprintf(w, "\n%s objects (%s bytes) held by %s:\n", group(path.Objects), group(int64(path.Size)), path.Root)
		for i, s := range path.Steps {
			prefix := "  "
			if i > 0 {
				prefix = "  -> "
			}
			if s.Pseudo {
				fmt.Fprintf(w, "%s%s\n", prefix, s.Type)
				continue
			}
			fmt.Fprintf(w, "%s%s @0x%x\n", prefix, s.Type, s.Address)
		}
	}
	if p.More > 0 {
		fmt.Fprintf(w, "\n%s more objects are held through other paths (raise --max).\n", group(p.More))
	}
	if p.Unreachable > 0 {
		fmt.Fprintf(w, "\n%s objects are reachable from no root (garbage at the next collection).\n", group(p.Unreachable))
	}
	_, err := fmt.Fprint(w)
	return err
}

// TypeDiff is the change of one type between two snapshots.
type TypeDiff struct {
	Name        string `json:"name"`
	Module      string `json:"-"`
	CountBefore int64  `json:"countBefore"`
	CountAfter  int64  `json:"countAfter"`
	SizeBefore  uint64 `json:"sizeBefore"`
	SizeAfter   uint64 `json:"sizeAfter"`
	CountDelta  int64  `json:"countDelta"`
	SizeDelta   int64  `json:"sizeDelta"`
}

// Diff is the per-type growth between two snapshots of a process.
type Diff struct {
	Types         []TypeDiff `json:"types"`
	SizeBefore    uint64     `json:"sizeBefore"`
	SizeAfter     uint64     `json:"sizeAfter"`
	ObjectsBefore int64      `json:"objectsBefore"`
	ObjectsAfter  int64      `json:"objectsAfter"`
}

func typeTotals(g *Graph) (map[Type]*TypeDiff, uint64, int64) {
	m := map[Type]*TypeDiff{}
	var size uint64
	var objs int64
	for v := range g.NumNodes() {
		if !g.IsObject(NodeID(v)) {
			continue
		}
		t := g.Types[g.typ[v]]
		d := m[t]
		if d == nil {
			d = &TypeDiff{Name: t.Name, Module: t.Module}
			m[t] = d
		}
		d.CountAfter++
		d.SizeAfter += uint64(g.size[v])
		size += uint64(g.size[v])
		objs++
	}
	return m, size, objs
}

// DiffGraphs compares two snapshots type by type (types are matched by
// name and module) and lists the types that changed, the largest growth
// in bytes first.
func DiffGraphs(before, after *Graph) *Diff {
	b, bs, bo := typeTotals(before)
	a, as, ao := typeTotals(after)
	d := &Diff{SizeBefore: bs, SizeAfter: as, ObjectsBefore: bo, ObjectsAfter: ao}
	for t, x := range a {
		td := *x
		if y := b[t]; y != nil {
			td.CountBefore, td.SizeBefore = y.CountAfter, y.SizeAfter
		}
		d.Types = append(d.Types, td)
	}
	for t, y := range b {
		if a[t] == nil {
			d.Types = append(d.Types, TypeDiff{Name: t.Name, Module: t.Module, CountBefore: y.CountAfter, SizeBefore: y.SizeAfter})
		}
	}
	out := d.Types[:0]
	for _, t := range d.Types {
		t.CountDelta = t.CountAfter - t.CountBefore
		t.SizeDelta = int64(t.SizeAfter) - int64(t.SizeBefore)
		if t.CountDelta != 0 || t.SizeDelta != 0 {
			out = append(out, t)
		}
	}
	d.Types = out
	slices.SortFunc(d.Types, func(x, y TypeDiff) int {
		return cmp.Or(cmp.Compare(y.SizeDelta, x.SizeDelta), cmp.Compare(y.CountDelta, x.CountDelta),
			cmp.Compare(x.Name, y.Name), cmp.Compare(x.Module, y.Module))
	})
	return d
}

// WriteText prints the diff: growth first, shrinkage last.
func (d *Diff) WriteText(w io.Writer, top int) error {
	fmt.Fprintf(w, "GC heap: %s -> %s bytes (%s), %s -> %s objects (%s)\n\n",
		group(int64(d.SizeBefore)), group(int64(d.SizeAfter)), signed(int64(d.SizeAfter)-int64(d.SizeBefore)),
		group(d.ObjectsBefore), group(d.ObjectsAfter), signed(d.ObjectsAfter-d.ObjectsBefore))
	if len(d.Types) == 0 {
		_, err := fmt.Fprintln(w, "No type changed.")
		return err
	}
	rows := d.Types
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	fmt.Fprintf(w, "%15s %12s %15s %12s  %s\n", "Bytes Delta", "Count Delta", "Bytes After", "Count After", "Type")
	for _, t := range rows {
		fmt.Fprintf(w, "%15s %12s %15s %12s  %s\n", signed(t.SizeDelta), signed(t.CountDelta), group(int64(t.SizeAfter)), group(t.CountAfter), t.Name)
	}
	if len(rows) < len(d.Types) {
		fmt.Fprintf(w, "(%d more types changed; --top 0 lists them all)\n", len(d.Types)-len(rows))
	}
	return nil
}

func signed(n int64) string {
	if n > 0 {
		return "+" + group(n)
	}
	return group(n)
}
