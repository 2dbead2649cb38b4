package gcdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// randomGraph builds a graph with every feature the format has: undefined
// nodes, nodes whose size differs from their type's first, references to
// lower and higher indexes (negative and positive deltas of every width),
// self references, non-ASCII and astral type names, modules and none.
func randomGraph(t testing.TB, r *rand.Rand, n int) *Graph {
	b := NewBuilder(n)
	types := []int{
		b.Type("System.String", "/x/System.Private.CoreLib.dll"),
		b.Type("App.Ünïcode€", ""),
		b.Type("App.Astral\U0001F600", "/app/App.dll"),
		b.Type("[static var App.Item.s_x]", ""),
	}
	addr := func(i int) uint64 { return 0x100000 + 16*uint64(i) }
	var refs []NodeID
	for i := range n {
		if i%17 == 5 {
			continue // referenced (maybe), never described: undefined
		}
		refs = refs[:0]
		for range r.IntN(6) {
			refs = append(refs, b.Ref(addr(r.IntN(n))))
		}
		if i%11 == 0 {
			refs = append(refs, b.Ref(addr(i))) // self
		}
		size := uint64(24)
		if r.IntN(3) == 0 {
			size = uint64(r.IntN(1 << uint(r.IntN(31))))
		}
		if _, err := b.SetObject(addr(i), types[r.IntN(len(types))], size, refs); err != nil {
			t.Fatal(err)
		}
	}
	root := b.NewNode()
	must(t, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, []NodeID{b.Ref(addr(0)), b.Ref(0)}))
	g, err := b.Finish(root)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 10, 1000, 70_000} {
		g := randomGraph(t, r, n)
		g.Is64Bit = n%2 == 0
		g.Info = Info{CreationTool: "test", ProcessName: "app", ProcessID: 77, MachineName: "m",
			Time: time.Date(2026, 11, 23, 12, 0, 0, 100, time.UTC), CollectionLog: "a\nb",
			TotalProcessCommit: 1 << 40, TotalProcessWorkingSet: 12345, AverageCountMultiplier: 2.5,
			AverageSizeMultiplier: 3, CountMultipliersByType: []float32{1, 2},
			SizeOfAllSegments: 99, Segments: []Segment{{1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14}}}
		var buf bytes.Buffer
		if err := Write(&buf, g); err != nil {
			t.Fatal(err)
		}
		g2, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("%d nodes: %v", n, err)
		}
		assertSameGraph(t, g, g2)
	}
}

// TestCompressedInts checks the node-record integers at every width and
// sign, against the decoder.
func TestCompressedInts(t *testing.T) {
	vals := []int32{0, 1, -1, 63, 64, -64, -65, 8191, 8192, -8192, -8193, 1<<20 - 1, 1 << 20, -(1 << 20), 1<<27 - 1, 1 << 27, -(1 << 27) - 1, 1<<31 - 1, -1 << 31}
	for _, v := range vals {
		b := appendCompressed(nil, v)
		if len(b) != compressedLen(v) {
			t.Errorf("%d: %d bytes, compressedLen %d", v, len(b), compressedLen(v))
		}
		got, next, ok := readCompressed(b, 0)
		if !ok || got != v || next != len(b) {
			t.Errorf("%d: read %d, %d bytes, ok %v (% x)", v, got, next, ok, b)
		}
		if _, _, ok := readCompressed(b[:len(b)-1], 0); ok && len(b) > 1 {
			t.Errorf("%d: a cut integer decoded", v)
		}
	}
}

// A file whose counts announce more than it holds is refused before
// anything that size is allocated.
func TestReadHugeCounts(t *testing.T) {
	g := leakyGraphInternal(t)
	var buf bytes.Buffer
	if err := Write(&buf, g); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Find the type count (after the MemoryGraph's type object, total
	// size and root index) by looking for the known count in the file.
	count := uint32(len(g.Types))
	at := bytes.Index(good, binary.LittleEndian.AppendUint32(nil, count))
	if at < 0 {
		t.Fatal("type count not found")
	}
	for _, v := range []uint32{1 << 31, 1<<31 - 1, 1 << 30, 0xFFFFFFFF} {
		bad := bytes.Clone(good)
		binary.LittleEndian.PutUint32(bad[at:], v)
		_, err := Read(bytes.NewReader(bad), int64(len(bad)))
		if !IsFormatError(err) || !(errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt)) {
			t.Errorf("count %#x: %v", v, err)
		}
	}
}

func leakyGraphInternal(t testing.TB) *Graph {
	data := leakyFile(t, 5)
	g, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCyclicGraphs: a ring of objects that only a cycle keeps together, a
// clique, and a ring no root reaches.
func TestCyclicGraphs(t *testing.T) {
	const n = 1000
	b := NewBuilder(3 * n)
	ty := b.Type("Ring", "")
	root := b.NewNode()
	ring := func(base uint64) {
		for i := range n {
			next := base + uint64((i+1)%n)*16
			if _, err := b.SetObject(base+uint64(i)*16, ty, 10, []NodeID{b.Ref(next)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ring(0x10000)
	ring(0x90000) // unreachable
	clique := make([]NodeID, 50)
	for i := range clique {
		clique[i] = b.Ref(0x200000 + uint64(i)*16)
	}
	for i := range clique {
		if _, err := b.SetObject(0x200000+uint64(i)*16, ty, 1, clique); err != nil {
			t.Fatal(err)
		}
	}
	must(t, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, []NodeID{b.Ref(0x10000 + 500*16), clique[7]}))
	g, err := b.Finish(root)
	if err != nil {
		t.Fatal(err)
	}
	d := ComputeDominators(g)
	entry := NodeID(0)
	for v := range g.NumNodes() {
		if g.Address(NodeID(v)) == 0x10000+500*16 {
			entry = NodeID(v)
		}
	}
	if d.Retained(entry) != 10*n || d.Retained(g.Root) != 10*n+50 || d.Unreachable != n {
		t.Errorf("ring retained %d, root %d, unreachable %d", d.Retained(entry), d.Retained(g.Root), d.Unreachable)
	}
	r, err := BuildReport(g, d, ReportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The reachable ring counts once (its entry dominates the rest); the
	// unreachable ring hangs from the virtual root through its first
	// node; the clique's entry dominates the clique.
	if len(r.Types) != 1 || r.Types[0].Count != 2*n+50 || r.Types[0].RetainedSize != 2*10*n+50 || r.Unreachable != n {
		t.Errorf("report %+v", r)
	}
}
