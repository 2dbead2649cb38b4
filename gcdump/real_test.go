//go:build unix

package gcdump_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/transport"
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

// TestRealHeap takes snapshots of the Heap target on the real 3.1 runtime
// and checks the exact counts, sizes, roots, dominators and the growth
// between two snapshots.
func TestRealHeap(t *testing.T) {
	rt := dotnettest.Find(t)
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
	if _, ok := stats["Heap.Leak"]; ok {
		t.Errorf("Leak objects before any grow: %+v", stats["Heap.Leak"])
	}

	// Roots: each array is held by the root kind the target uses.
	for _, c := range []struct{ typ, root string }{
		{"Heap.StaticItem", "static field s_held (holds Heap.StaticItem[])"},
		{"Heap.LocalItem", "a local variable or argument of a running method (stack root)"},
		{"Heap.HandlePayload", "a strong GC handle (GCHandle.Alloc, or a runtime handle)"},
	} {
		p, err := gcdump.FindPaths(g, c.typ, 0)
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
	if row := rows["Heap.Leak[]"]; row.CountDelta != 0 || row.SizeDelta != 37*8 {
		t.Errorf("Leak[]: %+v", row)
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
