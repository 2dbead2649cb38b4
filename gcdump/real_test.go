//go:build unix

package gcdump_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/weighted"
)

// Object sizes on 64-bit CoreCLR: an object is its header (8), its method
// table pointer (8) and its fields, at least 24 bytes; an array of
// references adds its length (8 with padding) and 8 bytes an element.
const (
	sizeStaticItem = 32 // two longs
	sizeSmall      = 24 // one int, or one reference
)

func refArray(n int) uint64 { return uint64(24 + 8*n) }

func collectReal(t *testing.T, tg *dotnettest.Target) *gcdump.Graph {
	// The main thread back in its command loop: a command's temporaries
	// still live on its stack would show as extra roots (likely under load).
	tg.WaitReading(t, time.Minute)
	t.Helper()
	c := diag.NewClient(transport.Endpoint{Network: "unix", Address: tg.Socket, PID: tg.PID}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log strings.Builder
	g, err := gcdump.Collect(ctx, c, gcdump.CollectConfig{Timeout: time.Minute, ProcessName: "Heap", ProcessID: tg.PID,
		Notify: func(n gcdump.Note) { fmt.Fprintln(&log, n) }})
	if err != nil {
		t.Fatalf("collect: %v\nnotes:\n%s\ntarget stderr:\n%s", err, log.String(), tg.Stderr())
	}
	t.Logf("notes:\n%s", log.String())
	return g
}

// TestRealHeap takes snapshots of the Heap target on real runtimes (3.1,
// 8, 10 and 11) and checks the exact counts, sizes, roots, dominators and
// the growth between two snapshots.
func TestRealHeap(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testRealHeap)
}

func testRealHeap(t *testing.T, rt *dotnettest.Runtime) {
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
	g := collectReal(t, tg)

	// Through the file format and back, as a user would.
	var file bytes.Buffer
	if err := gcdump.Write(&file, g); err != nil {
		t.Fatal(err)
	}
	g, err := gcdump.Read(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Is64Bit || g.Info.ProcessID != tg.PID {
		t.Errorf("64-bit %v, info %+v", g.Is64Bit, g.Info)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]gcdump.TypeStat{}
	for _, s := range r.Types {
		stats[s.Name] = s
	}
	for name, w := range map[string]struct{ count, size, retained uint64 }{
		"Heap.StaticItem":    {100, 100 * sizeStaticItem, 100 * sizeStaticItem},
		"Heap.StaticItem[]":  {1, refArray(100), refArray(100) + 100*sizeStaticItem},
		"Heap.LocalItem":     {50, 50 * sizeSmall, 50 * sizeSmall},
		"Heap.LocalItem[]":   {1, refArray(50), refArray(50) + 50*sizeSmall},
		"Heap.HandleItem":    {25, 25 * sizeSmall, 25 * 2 * sizeSmall},
		"Heap.HandlePayload": {25, 25 * sizeSmall, 25 * sizeSmall},
		"Heap.HandleItem[]":  {1, refArray(25), refArray(25) + 25*2*sizeSmall},
		"Heap.Leak[]":        {1, refArray(0), refArray(0)},
	} {
		s, ok := stats[name]
		if !ok || uint64(s.Count) != w.count || s.Size != w.size || s.RetainedSize != w.retained {
			t.Errorf("%s: %+v, want count %d size %d retained %d", name, s, w.count, w.size, w.retained)
		}
		if ok && !strings.HasSuffix(s.Module, "Heap.dll") {
			t.Errorf("%s: module %q", name, s.Module)
		}
	}
	// Array types of every rank and nesting, named as the runtime's
	// reflection names them (C#'s int[,][], a two-dimensional array of
	// int[], is System.Int32[][,]), generic arguments in angle brackets,
	// each found by paths under that name and under TraceEvent's spelling
	// of multi-dimensional arrays. (The runtime has a string[,] of its own,
	// in System.ConsolePal.)
	for name, field := range map[string]string{
		"System.String[,]":  "s_grid",
		"System.Int32[][]":  "s_jagged",
		"System.Int32[][,]": "s_mixed",
		"System.Collections.Generic.List<System.String>[]": "s_lists",
	} {
		for _, q := range []string{name, strings.ReplaceAll(name, "[,]", "<,>")} {
			p, err := gcdump.FindPaths(context.Background(), g, q, 0)
			if err != nil {
				t.Errorf("paths of %s: %v", q, err)
				continue
			}
			found := false
			for _, path := range p.Paths {
				found = found || path.Root == "static field "+field+" (holds "+name+")" && path.Objects == 1
			}
			if !found || p.Type != name {
				t.Errorf("paths of %s: %+v", q, p)
			}
		}
	}
	if s := stats["System.Int32[]"]; s.Count < 3+4 {
		t.Errorf("System.Int32[]: %+v, want the 7 of s_jagged and s_mixed", s)
	}
	if _, ok := stats["Heap.Leak"]; ok {
		t.Errorf("Leak objects before any grow: %+v", stats["Heap.Leak"])
	}

	// Roots: each array is held by the root kind the target uses.
	for _, c := range []struct{ typ, root string }{
		{"Heap.StaticItem", "static field s_held (holds Heap.StaticItem[])"},
		{"Heap.LocalItem", "a local variable or argument of a running method (stack root)"},
		{"Heap.HandlePayload", "a strong GC handle (GCHandle.Alloc, or a runtime handle)"},
	} {
		p, err := gcdump.FindPaths(context.Background(), g, c.typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Paths) == 0 || p.Paths[0].Root != c.root || p.Paths[0].Objects != p.Objects {
			var text bytes.Buffer
			p.WriteText(&text)
			t.Errorf("%s: want every object held by %q:\n%s", c.typ, c.root, text.String())
		}
	}

	// Dominators: every item is dominated by its array.
	d := gcdump.ComputeDominators(g)
	arrays := map[string]gcdump.NodeID{}
	for v := range g.NumNodes() {
		if n := g.TypeName(gcdump.NodeID(v)); strings.HasSuffix(n, "Item[]") {
			arrays[strings.TrimSuffix(n, "[]")] = gcdump.NodeID(v)
		}
	}
	for v := range g.NumNodes() {
		n := g.TypeName(gcdump.NodeID(v))
		if a, ok := arrays[n]; ok && d.Idom(gcdump.NodeID(v)) != a {
			t.Fatalf("%s at %#x is dominated by %s, not by its array", n, g.Address(gcdump.NodeID(v)), g.TypeName(d.Idom(gcdump.NodeID(v))))
		}
	}

	// The flame graph names the static field that holds the items,
	// though the pinned array of statics (a handle) holds them too, and
	// says that a choice was made.
	f := gcdump.BuildFlame(g, d, gcdump.FlameConfig{})
	var folded bytes.Buffer
	if err := weighted.WriteFolded(&folded, f.Weighted("heap")); err != nil {
		t.Fatal(err)
	}
	static := "[static vars];[static var Heap.StaticItem[].s_held];[also held by other roots];Heap!Heap.StaticItem[]"
	for _, want := range []string{static + fmt.Sprintf(" %d\n", refArray(100)), static + fmt.Sprintf(";Heap!Heap.StaticItem %d\n", 100*sizeStaticItem)} {
		if !strings.Contains(folded.String(), want) {
			t.Errorf("flame lacks %q:\n%s", want, folded.String())
		}
	}
	if f.ChosenObjects < 101 || strings.Contains(folded.String(), "[held by several roots]") {
		t.Errorf("chosen %d objects:\n%s", f.ChosenObjects, folded.String())
	}

	// Grow the leak by 37 objects and compare.
	tg.Send(t, "grow 37")
	tg.Expect(t, "GROWN 37", 30*time.Second)
	after := collectReal(t, tg)
	diff := gcdump.DiffGraphs(g, after)
	rows := map[string]gcdump.TypeDiff{}
	for _, row := range diff.Types {
		rows[row.Name] = row
	}
	if row := rows["Heap.Leak"]; row.CountDelta != 37 || row.SizeDelta != 37*sizeSmall || row.CountBefore != 0 {
		t.Errorf("Leak: %+v", row)
	}
	if row := rows["Heap.Leak[]"]; row.CountDelta != 0 || row.SizeDelta != 37*8 || row.RetainedDelta != 37*(8+sizeSmall) {
		t.Errorf("Leak[]: %+v", row)
	}
	if len(diff.Warnings) != 0 {
		t.Errorf("warnings for two snapshots of one process: %q", diff.Warnings)
	}
	for _, name := range []string{"Heap.StaticItem", "Heap.LocalItem", "Heap.HandleItem"} {
		if row, ok := rows[name]; ok {
			t.Errorf("%s changed: %+v", name, row)
		}
	}
	if diff.Types[0].Name != "Heap.Leak" && diff.Types[0].SizeDelta < 37*sizeSmall {
		t.Logf("largest growth: %+v", diff.Types[0])
	}
}

// TestRealHeapServerGC: with server GC the runtime logs the collection's
// start and end and the heap walk from different threads, whose events the
// stream does not keep in time order.
func TestRealHeapServerGC(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, &dotnettest.Options{Env: []string{"COMPlus_gcServer=1"}})
	tg.Send(t, "grow 20000")
	tg.Expect(t, "GROWN 20000", 30*time.Second)
	for range 2 {
		g := collectReal(t, tg)
		r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][2]uint64{"Heap.Leak": {20000, 20000 * sizeSmall}, "Heap.StaticItem": {100, 100 * sizeStaticItem}, "Heap.LocalItem": {50, 50 * sizeSmall}}
		for _, s := range r.Types {
			if w, ok := want[s.Name]; ok {
				if uint64(s.Count) != w[0] || s.Size != w[1] {
					t.Errorf("%s: %+v, want %v", s.Name, s, w)
				}
				delete(want, s.Name)
			}
		}
		if len(want) > 0 {
			t.Errorf("missing types %v", want)
		}
	}
}

// TestRealHeapTargetKilled kills a real target in the middle of its heap
// walk: Collect says that the target exited (how many objects had come),
// and keeps nothing of what it built.
func TestRealHeapTargetKilled(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
	tg.Send(t, "grow 3000000")
	tg.Expect(t, "GROWN 3000000", 2*time.Minute)
	tg.WaitReading(t, time.Minute)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	c := diag.NewClient(transport.Endpoint{Network: "unix", Address: tg.Socket, PID: tg.PID}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen int64
	_, err := gcdump.Collect(ctx, c, gcdump.CollectConfig{Timeout: time.Minute, ProcessID: tg.PID, Notify: func(n gcdump.Note) {
		if n.Kind == gcdump.NoteProgress && n.Objects > 1_000_000 && seen == 0 {
			seen = n.Objects
			tg.Kill()
		}
	}})
	t.Logf("error after %d objects: %v", seen, err)
	if seen == 0 {
		t.Skip("the walk ended before the target could be killed")
	}
	if !errors.Is(err, gcdump.ErrTargetExited) || !strings.Contains(err.Error(), "exited") {
		t.Errorf("error %v, want ErrTargetExited", err)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("heap in use: %s before, %s after the failed collection", units.FormatBytes(int64(before.HeapAlloc)), units.FormatBytes(int64(after.HeapAlloc)))
	if after.HeapAlloc > before.HeapAlloc+16<<20 {
		t.Errorf("the failed collection keeps %s (more than 16 MiB)", units.FormatBytes(int64(after.HeapAlloc-before.HeapAlloc)))
	}
}
