package gcdump

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
)

// benchSize is the synthetic heap of the benchmarks: 10 million objects
// and 30 million references (GCDUMP_BENCH_NODES changes the object count;
// -short uses 100,000).
func benchSize(b *testing.B) (nodes, edges int) {
	nodes = 10_000_000
	if s := os.Getenv("GCDUMP_BENCH_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10 {
			b.Fatalf("GCDUMP_BENCH_NODES=%q", s)
		}
		nodes = n
	} else if testing.Short() {
		nodes = 100_000
	}
	return nodes, 3 * nodes
}

// synthHeap builds a heap with the shape of a real one, generated on the
// fly (no generator arrays, so that a benchmark's memory is the package's):
// 2000 types, objects of 24 to 280 bytes, a binary tree of references
// (object i refers to 2i+1 and 2i+2) plus random references for 3
// references an object on average (cycles, sharing, long-range
// references), and 1000 roots in two kinds.
func synthHeap(tb testing.TB, nodes, edges int) *Graph {
	return synthHeapLocal(tb, nodes, edges, false)
}

// synthHeapLocal is synthHeap; with local set, 9 in 10 random references
// point within 4096 objects of their source, as in a compacted heap where
// objects allocated together stay together.
func synthHeapLocal(tb testing.TB, nodes, edges int, local bool) *Graph {
	if local {
		return synthHeapShape(tb, nodes, edges, shapeLocal)
	}
	return synthHeapShape(tb, nodes, edges, shapeUniform)
}

// The shapes of synthetic heaps.
const (
	// shapeUniform: a binary tree laid out breadth first (object i
	// refers to 2i+1 and 2i+2) and uniformly random references.
	shapeUniform = iota
	// shapeLocal: the same tree, 9 in 10 random references within 4096
	// objects of their source.
	shapeLocal
	// shapeAlloc: the binary tree laid out depth first (an object's
	// first child right after it, its second after the first's
	// subtree), as objects allocated by the code that links them are,
	// and references as shapeLocal's. In the depth-first search of the
	// dominator tree, 45% of its steps go further than 256 objects; 95
	// to 97% on the other shapes, 4 to 20% on small real snapshots
	// (15,000 to 47,000 objects, from clrdiag and dotnet-gcdump).
	shapeAlloc
)

// preorderKids returns the children of object i in a complete binary tree
// of n objects laid out in preorder (-1 for none).
func preorderKids(i, n int) (l, r int) {
	pos, size := 0, n
	for pos != i {
		ls := (size - 1) / 2
		if i <= pos+ls {
			pos, size = pos+1, ls
		} else {
			pos, size = pos+1+ls, size-1-ls
		}
	}
	ls := (size - 1) / 2
	l, r = -1, -1
	if ls > 0 {
		l = pos + 1
	}
	if size-1-ls > 0 {
		r = pos + 1 + ls
	}
	return l, r
}

func synthHeapShape(tb testing.TB, nodes, edges int, shape int) *Graph {
	local := shape != shapeUniform
	r := rand.New(rand.NewPCG(7, 11))
	b := NewBuilderSize(nodes+4, edges+edges/100+2048) // the random draws vary, and 1000 roots
	types := make([]int, 2000)
	for i := range types {
		types[i] = b.Type("App.Type"+strconv.Itoa(i), "/app/App.dll")
	}
	addr := func(i int) uint64 { return 0x7f0000000000 + uint64(i)*64 }
	random := edges - (nodes - 1) // beyond the tree
	refs := make([]NodeID, 0, 16)
	for i := range nodes {
		refs = refs[:0]
		kids := [2]int{2*i + 1, 2*i + 2}
		if shape == shapeAlloc {
			kids[0], kids[1] = preorderKids(i, nodes)
		}
		for _, c := range kids {
			if c >= 0 && c < nodes {
				refs = append(refs, b.Ref(addr(c)))
			}
		}
		// Spread the random references evenly over the objects.
		k := random/nodes + b2i(r.IntN(nodes) < random%nodes)
		for range k {
			t := r.IntN(nodes)
			if local && r.IntN(10) != 0 {
				t = min(max(i+r.IntN(8192)-4096, 0), nodes-1)
			}
			refs = append(refs, b.Ref(addr(t)))
		}
		size := uint64(24 + 8*r.IntN(33))
		if _, err := b.SetObject(addr(i), types[i%len(types)], size, refs); err != nil {
			tb.Fatal(err)
		}
	}
	root, locals, statics := b.NewNode(), b.NewNode(), b.NewNode()
	var lr, sr []NodeID
	for k := range 1000 {
		i := r.IntN(nodes)
		if k == 0 {
			i = 0
		}
		if k%2 == 0 {
			lr = append(lr, b.Ref(addr(i)))
		} else {
			sr = append(sr, b.Ref(addr(i)))
		}
	}
	must(tb, b.SetNode(locals, b.Type("[local vars]", ""), 0, lr))
	must(tb, b.SetNode(statics, b.Type("[static vars]", ""), 0, sr))
	must(tb, b.SetNode(root, b.Type("[.NET Roots]", ""), 0, []NodeID{locals, statics}))
	g, err := b.Finish(root)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func must(tb testing.TB, err error) {
	if err != nil {
		tb.Fatal(err)
	}
}

// peakHeap samples the heap's object bytes every few milliseconds until
// stopped, and returns the largest value seen.
func peakHeap() (stop func() uint64) {
	const name = "/memory/classes/heap/objects:bytes"
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: name}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// BenchmarkPipeline measures what 'gcdump report' does to a snapshot of 10
// million objects and 30 million references: building the graph (Builder,
// address interning), the dominator tree and the per-type report. It
// reports each phase's seconds, the peak heap and the bytes per object at
// that peak. Its references are uniformly random beyond a binary tree: the
// worst case for caches.
func BenchmarkPipeline(b *testing.B) { benchPipeline(b, false) }

// BenchmarkPipelineLocal is BenchmarkPipeline on a heap whose references
// are mostly local (see synthHeapLocal), closer to a real heap's shape.
func BenchmarkPipelineLocal(b *testing.B) { benchPipeline(b, true) }

func benchPipeline(b *testing.B, local bool) {
	nodes, edges := benchSize(b)
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		stop := peakHeap()
		t0, c0 := time.Now(), cpuTime()
		g := synthHeapLocal(b, nodes, edges, local)
		t1, c1 := time.Now(), cpuTime()
		buildPeak := stop()
		stop = peakHeap()
		d := ComputeDominators(g)
		t2, c2 := time.Now(), cpuTime()
		r, err := BuildReport(g, d, ReportConfig{Top: 20})
		if err != nil {
			b.Fatal(err)
		}
		t3, c3 := time.Now(), cpuTime()
		peak := max(stop(), buildPeak)
		b.ReportMetric(float64(buildPeak)/float64(nodes), "build-peak-B/object")
		if r.Objects != int64(nodes) {
			b.Fatalf("%d objects", r.Objects)
		}
		b.ReportMetric(t1.Sub(t0).Seconds(), "build-s")
		b.ReportMetric(t2.Sub(t1).Seconds(), "dominators-s")
		b.ReportMetric(t3.Sub(t2).Seconds(), "report-s")
		// CPU seconds (all threads, the GC's included): less sensitive
		// to other load on the machine than the wall-clock figures.
		b.ReportMetric((c1 - c0).Seconds(), "build-cpu-s")
		b.ReportMetric((c2 - c1).Seconds(), "dominators-cpu-s")
		b.ReportMetric((c3 - c2).Seconds(), "report-cpu-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(peak)/float64(nodes), "peak-B/object")
		runtime.KeepAlive(g)
	}
}

// BenchmarkFileRoundTrip measures writing and reading the .gcdump of the
// same synthetic heap.
func BenchmarkFileRoundTrip(b *testing.B) {
	nodes, edges := benchSize(b)
	g := synthHeap(b, nodes, edges)
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		t0 := time.Now()
		if err := Write(&buf, g); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(t1.Sub(t0).Seconds(), "write-s")
		b.ReportMetric(time.Since(t1).Seconds(), "read-s")
		b.ReportMetric(float64(buf.Len())/float64(nodes), "file-B/object")
	}
}

// BenchmarkRead measures reading the .gcdump of the synthetic heap,
// written once.
func BenchmarkRead(b *testing.B) {
	nodes, edges := benchSize(b)
	var buf bytes.Buffer
	if err := Write(&buf, synthHeap(b, nodes, edges)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromTrace measures building a graph from heap-walk events.
func BenchmarkFromTrace(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	var trace bytes.Buffer
	if err := gcdumptest.Trace(&trace, gcdumptest.Leaky(n), gcdumptest.Options{NodesPerEvent: 1000, EdgesPerEvent: 2000}); err != nil {
		b.Fatal(err)
	}
	data := trace.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromTrace(io.NopCloser(bytes.NewReader(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDominators measures ComputeDominators alone on the synthetic
// heap (uniform references: the worst case for caches), built once. It
// reports the CPU seconds of one computation, and its peak heap beyond the
// graph's (sampled), per object.
func BenchmarkDominators(b *testing.B) { benchDominators(b, shapeUniform) }

// BenchmarkDominatorsLocal is BenchmarkDominators on the heap whose
// references are mostly local (see synthHeapLocal).
func BenchmarkDominatorsLocal(b *testing.B) { benchDominators(b, shapeLocal) }

// BenchmarkDominatorsAlloc is BenchmarkDominators on a heap laid out as
// allocation lays it out (see shapeAlloc), the closest to real snapshots.
func BenchmarkDominatorsAlloc(b *testing.B) { benchDominators(b, shapeAlloc) }

func benchDominators(b *testing.B, shape int) {
	nodes, edges := benchSize(b)
	if os.Getenv("GCDUMP_BENCH_NODES") == "" && !testing.Short() {
		nodes, edges = 2_000_000, 6_000_000
	}
	g := synthHeapShape(b, nodes, edges, shape)
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := peakHeap()
		c0 := cpuTime()
		d := ComputeDominators(g)
		c1 := cpuTime()
		peak := stop()
		if d.Unreachable != 0 {
			b.Fatalf("%d unreachable", d.Unreachable)
		}
		b.ReportMetric((c1 - c0).Seconds(), "cpu-s")
		b.ReportMetric(float64(peak-base.HeapAlloc)/float64(nodes), "peak-extra-B/object")
		runtime.KeepAlive(d)
	}
}

// BenchmarkPathsChain measures FindPaths on the shape of every leak: a
// static field holding a linked list of 2 million nodes (each with a
// payload), asked for the payloads' paths. It reports the search's
// seconds and its peak heap beyond the graph's, per node of the graph.
func BenchmarkPathsChain(b *testing.B) {
	n := 2_000_000
	if testing.Short() {
		n = 100_000
	}
	g := chainGraph(b, n, 0)
	benchPaths(b, g, "App.Payload")
}

// BenchmarkPaths measures FindPaths on the synthetic heap of 10 million
// objects and 30 million references (GCDUMP_BENCH_NODES changes the
// size), asked for one type of 2,000 (5,000 objects at random depths).
func BenchmarkPaths(b *testing.B) {
	nodes, edges := benchSize(b)
	g := synthHeap(b, nodes, edges)
	benchPaths(b, g, "App.Type7")
}

func benchPaths(b *testing.B, g *Graph, typ string) {
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := peakHeap()
		t0, c0 := time.Now(), cpuTime()
		p, err := FindPaths(context.Background(), g, typ, 10)
		t1, c1 := time.Now(), cpuTime()
		peak := stop()
		if err != nil || p.Objects == 0 {
			b.Fatal(p, err)
		}
		b.ReportMetric(t1.Sub(t0).Seconds(), "s")
		b.ReportMetric((c1 - c0).Seconds(), "cpu-s")
		b.ReportMetric(float64(peak-base.HeapAlloc)/(1<<20), "peak-extra-heap-MiB")
		b.ReportMetric(float64(peak-base.HeapAlloc)/float64(g.NumNodes()), "peak-extra-B/node")
		b.ReportMetric(float64(len(p.Paths)+p.MoreKinds), "kinds")
	}
}
