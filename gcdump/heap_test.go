package gcdump_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/weighted"
)

func leakyGraph(t testing.TB, n int, opt gcdumptest.Options) *gcdump.Graph {
	t.Helper()
	var buf bytes.Buffer
	if err := gcdumptest.Trace(&buf, gcdumptest.Leaky(n), opt); err != nil {
		t.Fatal(err)
	}
	g, err := gcdump.FromTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func nodeAt(t testing.TB, g *gcdump.Graph, addr uint64) gcdump.NodeID {
	t.Helper()
	for v := range g.NumNodes() {
		if g.Address(gcdump.NodeID(v)) == addr {
			return gcdump.NodeID(v)
		}
	}
	t.Fatalf("no node at %#x", addr)
	return 0
}

func TestFromTrace(t *testing.T) {
	const n = 10
	for _, opt := range []gcdumptest.Options{{}, {NodesPerEvent: 1, EdgesPerEvent: 1}, {NodesPerEvent: 100, EdgesPerEvent: 100},
		{EndFirst: true}, {Twice: true}} {
		g := leakyGraph(t, n, opt)
		r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		// List + array + n items + n strings + the local's item and the
		// handle's string.
		if r.Objects != 2*n+4 || r.TotalSize != 32+uint64(32+8*n)+(n+1)*(40+30) {
			t.Fatalf("%d objects, %d bytes", r.Objects, r.TotalSize)
		}
		stats := map[string]gcdump.TypeStat{}
		for _, s := range r.Types {
			stats[s.Name] = s
		}
		want := map[string][3]uint64{ // count, size, retained
			"App.Item":      {n + 1, (n + 1) * 40, n*70 + 40},
			"System.String": {n + 1, (n + 1) * 30, (n + 1) * 30},
			"System.Collections.Generic.List<App.Item>": {1, 32, 32 + 32 + 8*n + n*70},
			"App.Item[]": {1, 32 + 8*n, 32 + 8*n + n*70},
		}
		for name, w := range want {
			s, ok := stats[name]
			if !ok || uint64(s.Count) != w[0] || s.Size != w[1] || s.RetainedSize != w[2] {
				t.Errorf("%s: %+v, want count %d size %d retained %d", name, s, w[0], w[1], w[2])
			}
		}
		if s := stats["App.Item"]; s.Module != "/app/App.dll" {
			t.Errorf("module %q", s.Module)
		}
		// The local variable, the strong handle and the static field (the
		// weak handle is no root).
		if r.Roots != 3 {
			t.Errorf("%d root references", r.Roots)
		}
		d := gcdump.ComputeDominators(g)
		list, arr, item0 := nodeAt(t, g, gcdumptest.AddrList), nodeAt(t, g, gcdumptest.AddrArray), nodeAt(t, g, gcdumptest.AddrItems)
		if d.Idom(arr) != list || d.Idom(item0) != arr || d.Idom(nodeAt(t, g, gcdumptest.AddrStrings)) != item0 {
			t.Errorf("dominators: array %d<-%d, item %d<-%d", arr, d.Idom(arr), item0, d.Idom(item0))
		}
		if g.TypeName(g.Root) != "[.NET Roots]" {
			t.Errorf("root %q", g.TypeName(g.Root))
		}
	}
}

func TestFromTraceIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  gcdumptest.Options
		want error
	}{
		{"lost node event", gcdumptest.Options{SkipNodeEvent: 2}, gcdump.ErrIncomplete},
		{"no end of the GC", gcdumptest.Options{NoGCEnd: true}, gcdump.ErrIncomplete},
	} {
		var buf bytes.Buffer
		if err := gcdumptest.Trace(&buf, gcdumptest.Leaky(5), tc.opt); err != nil {
			t.Fatal(err)
		}
		_, err := gcdump.FromTrace(&buf)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	var buf bytes.Buffer
	if err := gcdumptest.Trace(&buf, gcdumptest.Heap{}, gcdumptest.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gcdump.FromTrace(&buf); !errors.Is(err, gcdump.ErrNoHeapDump) {
		t.Errorf("empty heap: %v", err)
	}
}

func TestPaths(t *testing.T) {
	g := leakyGraph(t, 10, gcdumptest.Options{})
	p, err := gcdump.FindPaths(g, "Item", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != "App.Item" || p.Objects != 11 || len(p.Paths) != 2 {
		t.Fatalf("%+v", p)
	}
	static, local := p.Paths[0], p.Paths[1]
	if static.Objects != 10 || static.Root != "static field s_items (holds System.Collections.Generic.List<App.Item>)" {
		t.Errorf("static path %+v", static)
	}
	var steps []string
	for _, s := range static.Steps {
		steps = append(steps, s.Type)
	}
	want := "[static vars] [static var System.Collections.Generic.List<App.Item>.s_items] System.Collections.Generic.List<App.Item> App.Item[] App.Item"
	if strings.Join(steps, " ") != want {
		t.Errorf("steps %q", steps)
	}
	if local.Objects != 1 || !strings.Contains(local.Root, "local variable") || local.Steps[len(local.Steps)-1].Address != gcdumptest.AddrLocal {
		t.Errorf("local path %+v", local)
	}
	var text bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "-> App.Item[] @0x1100") {
		t.Errorf("text:\n%s", text.String())
	}
	if _, err := gcdump.FindPaths(g, "Nope", 0); !errors.Is(err, gcdump.ErrNoSuchType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := gcdump.FindPaths(g, "S", 0); err == nil || !strings.Contains(err.Error(), "matches") {
		t.Errorf("ambiguous type: %v", err)
	}
}

func TestDiff(t *testing.T) {
	before, after := leakyGraph(t, 10, gcdumptest.Options{}), leakyGraph(t, 25, gcdumptest.Options{})
	d := gcdump.DiffGraphs(before, after)
	if len(d.Types) != 3 {
		t.Fatalf("%+v", d.Types)
	}
	// Item grew most (15*40), then String (15*30), then the array (15*8).
	for i, w := range []struct {
		name         string
		count, bytes int64
	}{{"App.Item", 15, 600}, {"System.String", 15, 450}, {"App.Item[]", 0, 120}} {
		if got := d.Types[i]; got.Name != w.name || got.CountDelta != w.count || got.SizeDelta != w.bytes {
			t.Errorf("row %d: %+v, want %+v", i, got, w)
		}
	}
	if d.SizeAfter-d.SizeBefore != 1170 || d.ObjectsAfter-d.ObjectsBefore != 30 {
		t.Errorf("totals %+v", d)
	}
	back := gcdump.DiffGraphs(after, before)
	if back.Types[len(back.Types)-1].SizeDelta != -600 {
		t.Errorf("shrink %+v", back.Types)
	}
}

func TestFlame(t *testing.T) {
	g := leakyGraph(t, 10, gcdumptest.Options{})
	f := gcdump.BuildFlame(g, nil, gcdump.FlameConfig{})
	var folded bytes.Buffer
	if err := weighted.WriteFolded(&folded, f.Weighted("leaky")); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(folded.String()), "\n") {
		i := strings.LastIndexByte(l, ' ')
		lines[l[:i]] = l[i+1:]
	}
	sv := "[static vars];[static var System.Collections.Generic.List<App.Item>.s_items];System.Private.CoreLib!System.Collections.Generic.List<App.Item>"
	for stack, bytes := range map[string]string{
		sv:                                  "32",
		sv + ";App!App.Item[]":              "112",
		sv + ";App!App.Item[];App!App.Item": "400",
		sv + ";App!App.Item[];App!App.Item;System.Private.CoreLib!System.String": "300",
		"[local vars];App!App.Item":                                    "40",
		"[held by several roots];System.Private.CoreLib!System.String": "30", // the local's item and the handle
	} {
		if lines[stack] != bytes {
			t.Errorf("%s: %q, want %s\n%s", stack, lines[stack], bytes, folded.String())
		}
	}
	if f.Bytes != 32+112+10*70+70 {
		t.Errorf("total %d", f.Bytes)
	}
	// A chain deeper than MaxDepth keeps its top and the leaf's type.
	deep := gcdump.BuildFlame(g, nil, gcdump.FlameConfig{MaxDepth: 4})
	for _, s := range deep.Stacks {
		if len(s.Frames) > 5 {
			t.Errorf("stack of %d frames", len(s.Frames))
		}
	}
}

// A static field and a local both reach the same objects at the same
// depth (the runtime reports the array of statics as a local when a frame
// holds it): the static field is named.
func TestPathsPreferStatics(t *testing.T) {
	h := gcdumptest.Leaky(3)
	const statics = 0x9000
	h.Types = append(h.Types, gcdumptest.Type{ID: 0x7f0000009000, Name: "System.Object[]", Module: 2})
	h.Objects = append(h.Objects, gcdumptest.Object{Addr: statics, Type: 0x7f0000009000, Size: 40, Refs: []uint64{gcdumptest.AddrArray}})
	h.Roots = append([]gcdumptest.Root{{Object: statics, Kind: 0}}, h.Roots...)
	h.Statics = []gcdumptest.Static{{Object: gcdumptest.AddrArray, Field: "s_items"}}
	var buf bytes.Buffer
	if err := gcdumptest.Trace(&buf, h, gcdumptest.Options{}); err != nil {
		t.Fatal(err)
	}
	g, err := gcdump.FromTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gcdump.FindPaths(g, "App.Item", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Paths[0].Objects != 3 || !strings.HasPrefix(p.Paths[0].Root, "static field s_items") {
		var text bytes.Buffer
		p.WriteText(&text)
		t.Errorf("paths:\n%s", text.String())
	}
}
