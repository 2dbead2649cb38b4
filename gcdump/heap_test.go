package gcdump_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	p, err := gcdump.FindPaths(context.Background(), g, "Item", 0)
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
	if _, err := gcdump.FindPaths(context.Background(), g, "Nope", 0); !errors.Is(err, gcdump.ErrNoSuchType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := gcdump.FindPaths(context.Background(), g, "S", 0); err == nil || !strings.Contains(err.Error(), "matches") {
		t.Errorf("ambiguous type: %v", err)
	}
}

func TestDiff(t *testing.T) {
	before, after := leakyGraph(t, 10, gcdumptest.Options{}), leakyGraph(t, 25, gcdumptest.Options{})
	d := gcdump.DiffGraphs(before, after)
	if len(d.Types) != 4 {
		t.Fatalf("%+v", d.Types)
	}
	// Item grew most (15*40), then String (15*30), then the array (15*8);
	// the list's objects did not change, but it retains all of them: its
	// retained size grew by 15*(8+40+30).
	for i, w := range []struct {
		name                   string
		count, bytes, retained int64
	}{{"App.Item", 15, 600, 15 * 70}, {"System.String", 15, 450, 15 * 30}, {"App.Item[]", 0, 120, 15 * 78},
		{"System.Collections.Generic.List<App.Item>", 0, 0, 15 * 78}} {
		if got := d.Types[i]; got.Name != w.name || got.CountDelta != w.count || got.SizeDelta != w.bytes || got.RetainedDelta != w.retained {
			t.Errorf("row %d: %+v, want %+v", i, got, w)
		}
	}
	if d.SizeAfter-d.SizeBefore != 1170 || d.ObjectsAfter-d.ObjectsBefore != 30 || len(d.Warnings) != 0 {
		t.Errorf("totals %+v", d)
	}
	back := gcdump.DiffGraphs(after, before)
	if back.Types[len(back.Types)-1].SizeDelta != -600 {
		t.Errorf("shrink %+v", back.Types)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Bytes Before  Bytes After  Bytes Delta  Count Before  Count After  Count Delta  Retained Delta  Type",
		"           440        1,040         +600            11           26          +15          +1,050  App.Item",
		"            32           32            0             1            1            0          +1,170  System.Collections.Generic.List<App.Item>"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	// Snapshots that do not compare: different processes, runtimes (the
	// directory of System.Private.CoreLib), pointer sizes; the second
	// taken first.
	other := gcdumptest.Leaky(25)
	other.Modules[2] = "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.34/System.Private.CoreLib.dll"
	var buf bytes.Buffer
	if err := gcdumptest.Trace(&buf, other, gcdumptest.Options{ProcessID: 777}); err != nil {
		t.Fatal(err)
	}
	o, err := gcdump.FromTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	o.Is64Bit = false
	before.Info.ProcessID = 4242
	o.Info.Time = before.Info.Time.Add(-time.Minute)
	w := gcdump.DiffGraphs(before, o).Warnings
	if len(w) != 4 || !strings.Contains(w[0], "different processes (pid 4242 before, pid 777 after)") ||
		!strings.Contains(w[1], "different runtimes (.NET 3.1.2 before, 8.0.34 after)") || !strings.Contains(w[2], "32-bit") ||
		!strings.Contains(w[3], "the second snapshot was taken first") {
		t.Errorf("warnings %q", w)
	}
	// The same types match across runtime versions: only Item, String
	// and the array grew (the list's module moved from 3.1.2 to 8.0.34).
	if got := gcdump.DiffGraphs(before, o).Types; len(got) != 4 || got[3].Name != "System.Collections.Generic.List<App.Item>" || got[3].CountDelta != 0 {
		t.Errorf("rows across runtimes %+v", got)
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
		"[local vars];App!App.Item": "40",
		// The local's item and the strong handle hold the same string:
		// shown under the local variable, which PerfView prefers to a
		// handle, with a frame saying that other roots hold it.
		"[local vars];[also held by other roots];System.Private.CoreLib!System.String": "30",
	} {
		if lines[stack] != bytes {
			t.Errorf("%s: %q, want %s\n%s", stack, lines[stack], bytes, folded.String())
		}
	}
	if f.Bytes != 32+112+10*70+70 || f.ChosenObjects != 1 || f.ChosenBytes != 30 {
		t.Errorf("total %d, chosen %d objects %d bytes", f.Bytes, f.ChosenObjects, f.ChosenBytes)
	}
	if note := f.ChosenNote(); !strings.Contains(note, "1 objects (30 bytes) are held by several kinds of roots") {
		t.Errorf("note %q", note)
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
	p, err := gcdump.FindPaths(context.Background(), g, "App.Item", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Paths[0].Objects != 3 || !strings.HasPrefix(p.Paths[0].Root, "static field s_items") {
		var text bytes.Buffer
		p.WriteText(&text)
		t.Errorf("paths:\n%s", text.String())
	}
}
