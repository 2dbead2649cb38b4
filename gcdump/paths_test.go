package gcdump

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// chainGraph is the shape of every leak: a static field holds the head of
// a linked list of n objects of type Node, each also holding a 40-byte
// Payload. Every kth node (k > 0) is a Marker instead of a Node.
func chainGraph(tb testing.TB, n, k int) *Graph {
	tb.Helper()
	b := NewBuilder(2*n + 8)
	node, marker, payload := b.Type("App.Node", "/app/App.dll"), b.Type("App.Marker", "/app/App.dll"), b.Type("App.Payload", "/app/App.dll")
	addr := func(i int) uint64 { return 0x10000 + 64*uint64(i) }
	for i := range n {
		refs := []NodeID{b.Ref(addr(n + i))}
		if i+1 < n {
			refs = append(refs, b.Ref(addr(i+1)))
		}
		t := node
		if k > 0 && i%k == k-1 {
			t = marker
		}
		if _, err := b.SetObject(addr(i), t, 32, refs); err != nil {
			tb.Fatal(err)
		}
		if _, err := b.SetObject(addr(n+i), payload, 40, nil); err != nil {
			tb.Fatal(err)
		}
	}
	root, statics, field := b.NewNode(), b.NewNode(), b.NewNode()
	must(tb, b.SetNode(field, b.Type("[static var App.Node.s_head]", ""), 0, []NodeID{b.Ref(addr(0))}))
	must(tb, b.SetNode(statics, b.Type("[static vars]", ""), 0, []NodeID{field}))
	must(tb, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, []NodeID{statics}))
	g, err := b.Finish(root)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestPathsChain: a linked list is one kind of path, however long, with
// its run of nodes as one step.
func TestPathsChain(t *testing.T) {
	const n = 200_000
	g := chainGraph(t, n, 0)
	p, err := FindPaths(context.Background(), g, "App.Payload", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects != n || len(p.Paths) != 1 || p.More != 0 || p.Unreachable != 0 {
		t.Fatalf("%d objects, %d paths, %d more, %d unreachable", p.Objects, len(p.Paths), p.More, p.Unreachable)
	}
	path := p.Paths[0]
	if path.Objects != n || path.Size != 40*n || path.Depth != 2 || path.Root != "static field s_head (holds App.Node)" {
		t.Errorf("path %+v", path)
	}
	var steps []string
	for _, s := range path.Steps {
		steps = append(steps, s.Type)
	}
	if got := strings.Join(steps, " "); got != "[static vars] [static var App.Node.s_head] App.Node App.Payload" {
		t.Errorf("steps %q", got)
	}
	// The nodes themselves: one kind of path whose example is the head.
	p, err = FindPaths(context.Background(), g, "App.Node", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Paths) != 1 || p.Paths[0].Objects != n || p.Paths[0].Depth != 1 {
		t.Fatalf("%+v", p)
	}

	// The tail of a chain of markers every 1000 nodes: each marker is at
	// its own depth with its own shape (n/1000 kinds); only --max of them
	// are spelled out, the others counted. The first has the shortest
	// path.
	g = chainGraph(t, n, 1000)
	p, err = FindPaths(context.Background(), g, "App.Marker", 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects != n/1000 || len(p.Paths) != 3 || p.More != n/1000-3 || p.MoreKinds != n/1000-3 {
		t.Fatalf("%d objects, %d paths, %d more in %d kinds", p.Objects, len(p.Paths), p.More, p.MoreKinds)
	}
	first := p.Paths[0]
	if first.Depth != 1000 || len(first.Steps) != 4 || first.Steps[2].Count != 999 || first.Steps[2].Address != 0x10000 {
		t.Errorf("first marker: %+v", first)
	}
	second := p.Paths[1]
	// Node x999, Marker, Node x999, Marker.
	if second.Depth != 2000 || len(second.Steps) != 6 || second.Steps[4].Count != 999 || second.Steps[3].Count != 0 {
		t.Errorf("second marker: %+v", second)
	}
	var text strings.Builder
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-> App.Node @0x10000 (+ 998 more App.Node in a chain)", "1,000 objects deep", "197 more objects are held through 197 other kinds of path"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestPathsCanceled: the search stops when its context ends.
func TestPathsCanceled(t *testing.T) {
	g := chainGraph(t, 1000, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FindPaths(ctx, g, "App.Node", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

// TestPathsRootOrder: at the same depth, a static field beats a local
// variable, which beats a GC handle (PerfView's order), whatever the order
// of the roots in the graph.
func TestPathsRootOrder(t *testing.T) {
	for _, tc := range []struct {
		kinds []string
		want  string
	}{
		{[]string{"[pinning Handles]", "[static vars]"}, "static field f"},
		{[]string{"[strong Handles]", "[local vars]"}, "a local variable"},
		{[]string{"[local vars]", "[static vars]"}, "static field f"},
		{[]string{"[finalizer Handles]", "[COM/WinRT Objects]"}, "a COM/WinRT reference"},
	} {
		b := NewBuilder(0)
		obj, err := b.SetObject(0x1000, b.Type("App.X", ""), 24, nil)
		must(t, err)
		root, other := b.NewNode(), b.NewNode()
		var kids []NodeID
		for _, k := range tc.kinds {
			n := b.NewNode()
			holds := []NodeID{obj}
			if k == "[static vars]" {
				f := b.NewNode()
				must(t, b.SetNode(f, b.Type("[static var App.X.f]", ""), 0, holds))
				holds = []NodeID{f}
			}
			must(t, b.SetNode(n, b.Type(k, ""), 0, holds))
			if strings.HasSuffix(k, "Handles]") {
				kids = append(kids, other)
				must(t, b.SetNode(other, b.Type("[other roots]", ""), 0, []NodeID{n}))
				continue
			}
			kids = append(kids, n)
		}
		must(t, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, kids))
		g, err := b.Finish(root)
		must(t, err)
		p, err := FindPaths(context.Background(), g, "App.X", 0)
		must(t, err)
		if len(p.Paths) != 1 || !strings.HasPrefix(p.Paths[0].Root, tc.want) {
			t.Errorf("%v: %+v", tc.kinds, p.Paths)
		}
	}
}

// TestPathsRandom checks FindPaths against a second computation on random
// graphs: every object's depth by a plain breadth-first search, each
// group's objects all at their shortest depth, the groups' counts adding
// up, each group's example path a real path of the graph.
func TestPathsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := range 200 {
		n := 2 + r.IntN(60)
		b := NewBuilder(n)
		types := []int{b.Type("A", ""), b.Type("B", ""), b.Type("C", "")}
		ids := make([]NodeID, n)
		for i := range ids {
			ids[i] = b.Ref(uint64(0x1000 + 16*i))
		}
		for i := range ids {
			var refs []NodeID
			for range r.IntN(3) {
				refs = append(refs, ids[r.IntN(n)])
			}
			_, err := b.SetObject(uint64(0x1000+16*i), types[r.IntN(3)], uint64(8+r.IntN(4)*8), refs)
			must(t, err)
		}
		root, statics, locals := b.NewNode(), b.NewNode(), b.NewNode()
		var sr, lr []NodeID
		for range 1 + r.IntN(3) {
			sr = append(sr, ids[r.IntN(n)])
			lr = append(lr, ids[r.IntN(n)])
		}
		must(t, b.SetNode(statics, b.Type("[static vars]", ""), 0, sr))
		must(t, b.SetNode(locals, b.Type("[local vars]", ""), 0, lr))
		must(t, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, []NodeID{locals, statics}))
		g, err := b.Finish(root)
		must(t, err)

		// Depths by a plain search from the objects the roots hold.
		depth := make([]int, g.NumNodes())
		for i := range depth {
			depth[i] = -1
		}
		var q []NodeID
		for _, kind := range g.Refs(g.Root) {
			for _, c := range g.Refs(kind) {
				if depth[c] < 0 {
					depth[c] = 1
					q = append(q, c)
				}
			}
		}
		for len(q) > 0 {
			v := q[0]
			q = q[1:]
			for _, c := range g.Refs(v) {
				if depth[c] < 0 {
					depth[c] = depth[v] + 1
					q = append(q, c)
				}
			}
		}
		for _, name := range []string{"A", "B", "C"} {
			p, err := FindPaths(context.Background(), g, name, 1000)
			if errors.Is(err, ErrNoSuchType) {
				continue
			}
			must(t, err)
			var objects, reached, unreached int64
			minDepth := map[int64]bool{}
			for v := range g.NumNodes() {
				if g.TypeName(NodeID(v)) != name {
					continue
				}
				objects++
				if depth[v] < 0 {
					unreached++
					continue
				}
				minDepth[int64(depth[v])] = true
			}
			for _, path := range p.Paths {
				reached += path.Objects
				if !minDepth[path.Depth] {
					t.Fatalf("iter %d %s: a path of depth %d, but no object at that depth: %v", iter, name, path.Depth, depth)
				}
				rep := checkPathSteps(t, g, path)
				if rep != NoNode && int64(depth[rep]) != path.Depth {
					t.Fatalf("iter %d %s: the example object is at depth %d, not %d", iter, name, depth[rep], path.Depth)
				}
			}
			if p.Objects != objects || p.Unreachable != unreached || reached != objects-unreached {
				t.Fatalf("iter %d %s: %d objects %d unreachable %d in paths, want %d %d", iter, name, p.Objects, p.Unreachable, reached, objects, unreached)
			}
		}
	}
}

// checkPathSteps checks that a path's steps follow references of the
// graph from a kind of root, runs included, and returns the object at its
// end (NoNode when it ends with a run).
func checkPathSteps(t *testing.T, g *Graph, p Path) NodeID {
	t.Helper()
	var objs []PathStep
	for _, s := range p.Steps {
		if !s.Pseudo {
			objs = append(objs, s)
		}
	}
	var total int64
	for _, s := range objs {
		total += max(s.Count, 1)
	}
	if total != p.Depth {
		t.Fatalf("steps %+v count %d objects, depth %d", p.Steps, total, p.Depth)
	}
	byAddr := map[uint64]NodeID{}
	for v := range g.NumNodes() {
		if g.IsObject(NodeID(v)) {
			byAddr[g.Address(NodeID(v))] = NodeID(v)
		}
	}
	for i := 1; i < len(objs); i++ {
		prev, cur := byAddr[objs[i-1].Address], byAddr[objs[i].Address]
		if objs[i-1].Count > 1 {
			continue // the run's last object is not named
		}
		found := false
		for _, c := range g.Refs(prev) {
			found = found || c == cur
		}
		if !found {
			t.Fatalf("step %d: %#x does not refer to %#x (%+v)", i, objs[i-1].Address, objs[i].Address, p.Steps)
		}
	}
	if last := objs[len(objs)-1]; last.Count <= 1 {
		return byAddr[last.Address]
	}
	return NoNode
}
