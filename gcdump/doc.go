// Package gcdump takes heap snapshots of live .NET processes and analyses
// them, in the .gcdump format that PerfView, Visual Studio and dotnet-gcdump
// read and write.
//
//	g, err := gcdump.Collect(ctx, client, gcdump.CollectConfig{})  // a live process (.NET Core 3.0+)
//	err = gcdump.Write(f, g)                                       // a .gcdump file
//	g, err = gcdump.ReadFile("app.gcdump")                         // back (or dotnet-gcdump's)
//	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})    // per type: count, size, retained
//	p, err := gcdump.FindPaths(g, "App.Item", 10)                  // what keeps them alive
//	d := gcdump.DiffGraphs(before, after)                          // what grew
//	f := gcdump.BuildFlame(g, nil, gcdump.FlameConfig{})           // pprof, folded, speedscope
//
// # Collection
//
// Collect does what dotnet-gcdump collect does. A first, very short
// SampleProfiler session resets the runtime's record of the types it has
// already named (a type is named in the events only the first time a
// session asks). Then a session enables Microsoft-Windows-DotNETRuntime at
// Verbose level with the keywords GC, Type, GCHeapDump, GCHeapCollect and
// GCHeapAndTypeNames (HeapKeywords, 0x1980001), a 1 GB buffer, Block
// buffering where the runtime has it (.NET 11; older runtimes get Drop,
// with a warning only when CollectConfig.Buffering asked for Block) and
// the default rundown. Enabling GCHeapCollect makes
// the runtime induce a blocking gen-2 collection, during which it reports:
//
//	GCStart (Depth 2, Reason Induced, Type blocking)   the snapshot begins
//	BulkType (15)            TypeID -> name, module, flags (whenever a type is first met)
//	GCBulkNode (18)          objects: address, size, TypeID, number of references
//	GCBulkEdge (19)          the references' targets, in the order of the objects
//	GCBulkRootEdge (16)      roots: stack, finalizer queue, handles (strong, pinning, weak)
//	GCBulkRootConditionalWeakTableElementEdge (17)  dependent handles
//	GCBulkRootStaticVar (38) static fields: field name, object, the object's type
//	GCBulkRootCCW (36), GCBulkRCW (37)  COM wrappers (Windows)
//	GCEnd (same Count)       the snapshot ends
//
// and, after the session is stopped, the rundown's ModuleDCEnd events name
// the modules. The stream keeps each thread's events in order but not the
// threads' relative order: with server GC the heap walk's events can come
// after the GCEnd. So the walk's events are recognised by their own
// numbering, the GCEnd only tells when to stop the session, and the graph
// is finished from everything the stream held up to its end. The session
// runs on eventpipe's Session.Drain: its stream goes through a pipe to the
// decoder, which sends StopEvent when the walk ends (StopDamaged when the
// stream does not decode); CollectConfig.Timeout is Drain's CollectTimeout,
// so that a walk that does not end is abandoned while the stop and the
// rundown keep StopTimeout and RundownTimeout. A stream cut after the walk
// (rundown timed out, target gone) still gives the whole graph. HeapBuilder turns these into a Graph while they stream in:
// an object is added as soon as its references have arrived, object
// addresses are interned in an open-addressing table, and nothing is
// buffered per event. GCBulkNode and GCBulkEdge events are numbered; a gap
// means the runtime dropped events and the snapshot is refused
// (ErrIncomplete) rather than silently wrong.
//
// The roots become pseudo-nodes under "[.NET Roots]", named as
// dotnet-gcdump names them: "[local vars]", "[static vars]" / "[static var
// T.f]", "[other roots]" / "[strong Handles]", "[pinning Handles]",
// "[finalizer Handles]", "[other Handles]", "[Dependent Handles]",
// "[COM/WinRT Objects]". Weak references are not roots. The runtime's
// static-field event carries the field's name and the type of the object
// it holds, not the type that declares the field, so a static root reads
// "[static var <type of the value>.<field>]". Type names are PerfView's
// spelling of the runtime's: List`1[System.String] becomes
// List<System.String>. Unlike dotnet-gcdump, objects over 1000 bytes keep
// their type (dotnet-gcdump splits "System.Byte[] (Bytes > 10K)" off as
// separate types); RCW objects are not linked to their COM objects (a note
// in Info.CollectionLog counts them).
//
// # The .gcdump format
//
// A .gcdump is a FastSerialization stream ("!FastSerialization.1", see
// fastser.go) whose entry object is a GCHeapDump (version 10, minimum
// reader 8) holding a Graphs.MemoryGraph (version 1, minimum reader 0). The
// layouts, from TraceEvent's GCHeapDump.cs, Graph.cs and MemoryGraph.cs:
//
//	GCHeapDump:  MemoryGraph object, bool Is64Bit, float AverageCountMultiplier,
//	             float AverageSizeMultiplier, JSHeapInfo object (null),
//	             DotNetHeapInfo object (or null), string CollectionLog,
//	             int64 TimeCollected (DateTime ticks), string MachineName,
//	             string ProcessName, int32 ProcessID, int64 TotalProcessCommit,
//	             int64 TotalProcessWorkingSet, int32 n + n float
//	             CountMultipliersByType, then tagged: SkipRegion InteropInfo
//	             (null), String CreationTool
//	MemoryGraph: int64 TotalSize, int32 RootIndex, int32 n + n types
//	             (string Name, int32 Size, string Module), int32 n + n node
//	             labels (int32 offsets into the records), int32 n + n bytes of
//	             node records, [deferred-type region if minimum reader >= 1],
//	             int32 n + n int64 addresses, tagged Byte Is64Bit
//	node record: compressed (type<<1 | size differs from the type's size),
//	             [compressed size], compressed reference count, compressed
//	             (reference - node) per reference
//
// Compressed integers are signed, 7 bits a byte, most significant group
// first, with the high bit set on every byte but the last. Type 0 is
// "UNDEFINED"; the record at offset 0 is the shared record of undefined
// nodes (referenced, never described).
//
// Two real files check this: PerfView's own 2015 test heap dump, read in
// the tests node by node against PerfView's XML rendering of it, and a
// dotnet-gcdump file of a .NET 9 application (from
// jonathanpeppers/gcdump-analyze, MIT), whose type counts and sizes match
// what TraceEvent's reader gives. Rewriting that file with Write gives the
// same bytes except the per-type default sizes and the offsets after them.
// What Write had to choose:
//   - A type's Size is the size of its first node in index order; nodes of
//     another size carry their own (PerfView takes the first node
//     described; for a snapshot built from events the two orders are the
//     same). Readers get the same sizes either way.
//   - TimeCollected is written in UTC ticks; PerfView writes local time and
//     dotnet-gcdump leaves it 0. The reader returns the ticks as UTC.
//   - DotNetHeapInfo is written only when Info has segments (Collect leaves
//     them out, as dotnet-gcdump does).
//   - CreationTool is "clrdiag" unless Info says otherwise; MachineName is
//     not recorded (it would name the diagnosing machine, not the target).
//
// The reader accepts GCHeapDump versions 9 and later (PerfView since 2016,
// Visual Studio, dotnet-gcdump), skips tagged fields it does not know, the
// COM interop region and ProjectN's deferred type names (kept as
// "TypeID(0x...)"), and checks the trailer. Every count is checked against
// the bytes left before anything is allocated, and damaged input gives a
// *FormatError with its offset.
//
// # Analyses
//
// ComputeDominators builds the dominator tree with the semi-NCA algorithm
// over flat arrays of 32-bit DFS numbers: Lengauer and Tarjan's
// semidominators with their balanced link-eval forest, then each
// immediate dominator as the nearest common ancestor of the DFS parent and
// the semidominator. It is iterative throughout (a linked list of
// millions of objects is fine), fills the predecessor lists during the
// depth-first search, and asks ahead for the memory its loops will read
// (see ComputeDominatorsContext). Nodes the Root does not reach hang from
// a virtual root. Retained sizes sum each subtree. BuildReport gives, per
// type, the count, the shallow size and the retained size: the sum of the
// retained sizes of the type's objects that no other object of the same
// type dominates.
//
// FindPaths runs one breadth-first search from the objects the roots
// hold, kinds of root in PerfView's order (static fields, local
// variables, COM wrappers, GC handles), keeping a predecessor per node,
// and groups the objects of a type by the shape of their shortest paths:
// the kind of root and the types along the path, a run of one type (a
// linked list) counting as one. It is linear in the heap whatever its
// shape; only the groups shown have their paths spelled out.
//
// DiffGraphs compares two snapshots per type (name and module file):
// counts, sizes and retained sizes before and after, with warnings when
// the snapshots are of different processes or runtimes. BuildFlame weighs
// each object by its size on its dominator-tree path: the root kind, the
// dominating objects' types (runs of one type collapsed), its own type.
// An object that several kinds of root hold is shown under the one
// PerfView would choose, below an "[also held by other roots]" frame.
//
// Type names are PerfView's spelling of the runtime's, with array
// suffixes of every rank kept in brackets: List`1[System.String][,]
// becomes List<System.String>[,]. TraceEvent's spelling of
// multi-dimensional arrays in files of other tools (System.String<,>) is
// read as System.String[,] where names are matched.
//
// # Memory and speed
//
// A Graph keeps BytesPerNode (20) bytes per node and BytesPerEdge (4) per
// reference: 32 bytes an object at three references an object. Building
// from events adds the address table (12 bytes a slot, at most 70% full:
// 17 bytes a node when the size is known) and 4 bytes a node until the
// graph is finished, when they are collected at once. ComputeDominators
// keeps BytesPerNodeDominators (28) more per node, and needs 4 per
// reference more while it runs. FindPaths needs 4 bytes a node and its
// frontier (12 bytes an entry). A .gcdump takes about 28 bytes an object
// on disk. The large arrays are backed by transparent huge pages where
// Linux leaves that to the program: their random reads then miss the TLB
// less often (not measurably on a virtual machine whose host backs its
// memory with small pages).
//
// BenchmarkPipeline measures the chain behind 'gcdump report' on 10
// million objects and 30 million references (go test -run '^$' -bench
// 'Pipeline' -benchtime 1x ./gcdump; GCDUMP_BENCH_NODES changes the size).
// On a 2-vCPU EPYC virtual machine the peak heap is 655 MB, 68.7 bytes an
// object (53.5 while building; it was 1,085 MB, 113.7). The dominator tree
// takes 5.5 to 9 CPU seconds there (a median of 7.4 over 8 runs, at load
// 1); the former Lengauer-Tarjan took 33 to 40, at load 10 to 20
// (uniformly random references are the worst case for caches;
// BenchmarkPipelineLocal has mostly local references, as a compacted heap
// does). BenchmarkPaths and BenchmarkPathsChain measure FindPaths.
//
// BenchmarkDominators, BenchmarkDominatorsLocal and
// BenchmarkDominatorsAlloc measure the dominator tree alone on 10 million
// objects (GCDUMP_BENCH_NODES=10000000; 2 million by default) in three
// layouts: uniformly random references, mostly local ones, and the
// layout allocation gives (an object's children right after it), the
// closest to real snapshots. The uniform layout is the slowest: the
// depth-first search takes about two thirds of the time there, each of its
// steps into new territory a cache miss that no other work overlaps (a
// node's first two references, kept side by side for the search, with its
// offsets asked for at the same time), or two when both lead to nodes
// already seen and the node has more.
//
// # Concurrency
//
// A Graph and a Dominators are immutable and safe for concurrent readers.
// Builders are used by one goroutine. The package has no package-level
// mutable state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package gcdump
