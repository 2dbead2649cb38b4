package gcdump

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// Versions written in the type objects, as dotnet-gcdump writes them.
const (
	heapDumpVersion   = 10 // GCHeapDump
	heapDumpMinReader = 8
	graphVersion      = 1 // Graphs.MemoryGraph (minimum reader 0: no deferred types)
	segmentVersion    = 1 // GCHeapDumpSegment (with Gen4End)
	segmentMinReader  = 1
)

// Type names of the serialized objects.
const (
	typeHeapDump    = "GCHeapDump"
	typeMemoryGraph = "Graphs.MemoryGraph"
	typeDotNetInfo  = "DotNetHeapInfo"
	typeSegment     = "GCHeapDumpSegment"
	typeModule      = "Graphs.Module"
	typeInterop     = "InteropInfo"
	typeJSHeapInfo  = "JSHeapInfo"
)

// ticksUnixEpoch is 1970-01-01 in .NET DateTime ticks (100 ns since
// 0001-01-01).
const ticksUnixEpoch = 621355968000000000

// Write writes the graph as a .gcdump file, the format PerfView, Visual
// Studio and dotnet-gcdump read. Info.CreationTool defaults to "clrdiag".
// Write streams: it keeps no copy of the graph's encoding in memory.
func Write(w io.Writer, g *Graph) error {
	if err := g.check(); err != nil {
		return err
	}
	n := g.NumNodes()
	if n > math.MaxInt32 || len(g.Types) > 1<<30 {
		return fmt.Errorf("%w: %d nodes and %d types do not fit the format's 31-bit indexes", ErrTooLarge, n, len(g.Types))
	}
	fw := newFSWriter(w)
	fw.i32(int32(len(fsSignature)))
	fw.write([]byte(fsSignature))
	fw.begin(typeHeapDump, heapDumpVersion, heapDumpMinReader)

	// Graphs.MemoryGraph
	fw.begin(typeMemoryGraph, graphVersion, 0)
	fw.i64(int64(g.TotalSize()))
	fw.i32(int32(g.Root))
	// A type's size is the size of its first node; nodes of another size
	// carry their own.
	typeSize := make([]int32, len(g.Types))
	for i := range typeSize {
		typeSize[i] = -1
	}
	typeSize[0] = 0
	for i := range n {
		if t := g.typ[i]; typeSize[t] < 0 {
			typeSize[t] = int32(g.size[i])
		}
	}
	fw.i32(int32(len(g.Types)))
	for i, t := range g.Types {
		fw.str(t.Name)
		fw.i32(typeSize[i])
		fw.optStr(t.Module)
	}
	// Node labels: offsets of each node's record in the blob. Undefined
	// nodes share the record at offset 0.
	fw.i32(int32(n))
	var scratch [5]byte
	blobLen := int64(2) // the UNDEFINED record
	for i := range n {
		if g.undefined(NodeID(i)) {
			fw.i32(0)
			continue
		}
		if blobLen > math.MaxInt32 {
			return fmt.Errorf("%w: the node records pass 2 GiB", ErrTooLarge)
		}
		fw.i32(int32(blobLen))
		blobLen += int64(g.recordLen(NodeID(i), typeSize, &scratch))
	}
	if blobLen > math.MaxInt32 {
		return fmt.Errorf("%w: the node records pass 2 GiB", ErrTooLarge)
	}
	fw.i32(int32(blobLen))
	fw.write([]byte{0, 0})
	rec := make([]byte, 0, 256)
	for i := range n {
		if g.undefined(NodeID(i)) {
			continue
		}
		rec = g.appendRecord(rec[:0], NodeID(i), typeSize)
		fw.write(rec)
		if fw.err != nil {
			return fw.err
		}
	}
	fw.i32(int32(n))
	for _, a := range g.addr {
		fw.i64(int64(a))
	}
	fw.u8(tagByte) // WriteTagged(Is64Bit)
	fw.u8(b2u(g.Is64Bit))
	fw.end()

	in := g.Info
	fw.u8(b2u(g.Is64Bit))
	cm, sm := in.AverageCountMultiplier, in.AverageSizeMultiplier
	if cm == 0 {
		cm = 1
	}
	if sm == 0 {
		sm = 1
	}
	fw.f32(cm)
	fw.f32(sm)
	fw.u8(tagNull) // JSHeapInfo
	if in.Segments != nil || in.SizeOfAllSegments != 0 {
		fw.begin(typeDotNetInfo, 0, 0)
		fw.i64(in.SizeOfAllSegments)
		fw.i32(int32(len(in.Segments)))
		for _, s := range in.Segments {
			fw.begin(typeSegment, segmentVersion, segmentMinReader)
			for _, v := range []uint64{s.Start, s.End, s.Gen0End, s.Gen1End, s.Gen2End, s.Gen3End, s.Gen4End} {
				fw.i64(int64(v))
			}
			fw.end()
		}
		fw.end()
	} else {
		fw.u8(tagNull)
	}
	fw.optStr(in.CollectionLog)
	var ticks int64
	if !in.Time.IsZero() {
		ticks = in.Time.UTC().UnixNano()/100 + ticksUnixEpoch
	}
	fw.i64(ticks)
	fw.optStr(in.MachineName)
	fw.optStr(in.ProcessName)
	fw.i32(int32(in.ProcessID))
	fw.i64(in.TotalProcessCommit)
	fw.i64(in.TotalProcessWorkingSet)
	fw.i32(int32(len(in.CountMultipliersByType)))
	for _, m := range in.CountMultipliersByType {
		fw.f32(m)
	}
	// Tagged fields of version 9 and 10: the interop information (none)
	// and the creation tool.
	fw.u8(tagSkipRegion)
	end := fw.forward()
	fw.i32(end)
	fw.u8(tagNull)
	fw.define(end)
	tool := in.CreationTool
	if tool == "" {
		tool = "clrdiag"
	}
	fw.u8(tagString)
	fw.str(tool)
	fw.end()
	return fw.trailer()
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// undefined reports whether node i is an undefined node (type 0, nothing
// else), which the file stores as a reference to the shared record.
func (g *Graph) undefined(i NodeID) bool {
	return g.typ[i] == 0 && g.size[i] == 0 && g.off[i] == g.off[i+1]
}

// recordLen returns the length of node i's record in the blob.
func (g *Graph) recordLen(i NodeID, typeSize []int32, scratch *[5]byte) int {
	t := g.typ[i]
	n := compressedLen(int32(t) << 1)
	if int32(g.size[i]) != typeSize[t] {
		n += compressedLen(int32(g.size[i]))
	}
	refs := g.Refs(i)
	n += compressedLen(int32(len(refs)))
	for _, c := range refs {
		n += compressedLen(int32(c) - int32(i))
	}
	return n
}

// appendRecord appends node i's record: type index and size flag, the size
// when it differs from the type's, the reference count and the references
// as deltas from i.
func (g *Graph) appendRecord(b []byte, i NodeID, typeSize []int32) []byte {
	t := g.typ[i]
	if int32(g.size[i]) != typeSize[t] {
		b = appendCompressed(b, int32(t)<<1|1)
		b = appendCompressed(b, int32(g.size[i]))
	} else {
		b = appendCompressed(b, int32(t)<<1)
	}
	refs := g.Refs(i)
	b = appendCompressed(b, int32(len(refs)))
	for _, c := range refs {
		b = appendCompressed(b, int32(c)-int32(i))
	}
	return b
}

// The node records use a signed variable-length integer: 7 bits a byte,
// most significant group first, the high bit set on every byte but the
// last, and the first group sign-extended.
func compressedLen(v int32) int {
	switch {
	case v<<25>>25 == v:
		return 1
	case v<<18>>18 == v:
		return 2
	case v<<11>>11 == v:
		return 3
	case v<<4>>4 == v:
		return 4
	}
	return 5
}

func appendCompressed(b []byte, v int32) []byte {
	n := compressedLen(v)
	for k := n - 1; k > 0; k-- {
		b = append(b, byte(v>>(7*k))|0x80)
	}
	return append(b, byte(v)&0x7F)
}

// readCompressed decodes one integer at b[i:]; ok is false when b ends
// first or the integer is longer than 5 bytes.
func readCompressed(b []byte, i int) (v int32, next int, ok bool) {
	if i >= len(b) {
		return 0, i, false
	}
	c := b[i]
	v = int32(c) << 25 >> 25
	i++
	for k := 1; c&0x80 != 0; k++ {
		if k == 5 || i >= len(b) {
			return 0, i, false
		}
		c = b[i]
		v = v<<7 | int32(c&0x7F)
		i++
	}
	return v, i, true
}

// ReadFile reads a .gcdump file.
func ReadFile(path string) (*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Read(f, st.Size())
}

// ReadAll reads a .gcdump from a stream (stdin, an HTTP body), buffering it
// in memory because the format needs random access.
func ReadAll(r io.Reader) (*Graph, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Read(bytes.NewReader(b), int64(len(b)))
}

// Read reads a .gcdump of the given size: GCHeapDump version 9 and later
// (PerfView since 2016, Visual Studio, dotnet-gcdump, clrdiag). Damaged
// input gives a *FormatError with the offset, never a panic; every count
// is checked against the bytes left before anything is allocated.
func Read(r io.ReaderAt, size int64) (*Graph, error) {
	fr := newFSReader(r, size)
	if err := fr.readSignature(); err != nil {
		return nil, err
	}
	ty := fr.beginObject("the GCHeapDump entry object")
	if fr.err != nil {
		return nil, fr.err
	}
	if ty == nil || ty.name != typeHeapDump {
		name := "null"
		if ty != nil {
			name = ty.name
		}
		return nil, &FormatError{Offset: fr.pos(), What: "entry object", Err: fmt.Errorf("%w: a %s, not a GCHeapDump", ErrNotGCDump, name)}
	}
	if ty.version < 9 {
		return nil, &FormatError{Offset: fr.pos(), What: "GCHeapDump", Err: fmt.Errorf("%w: GCHeapDump version %d (before 2016); open it in PerfView and save it again", ErrUnsupported, ty.version)}
	}
	g := readMemoryGraph(fr)
	if fr.err != nil {
		return nil, fr.err
	}
	fr.what = "GCHeapDump fields"
	fr.u8() // Is64Bit again
	in := &g.Info
	in.AverageCountMultiplier = fr.f32()
	in.AverageSizeMultiplier = fr.f32()
	if t := fr.beginObject("JSHeapInfo"); t != nil {
		fr.endObject(t)
	}
	if t := fr.beginObject("DotNetHeapInfo"); t != nil {
		readDotNetHeapInfo(fr, t, in)
	}
	in.CollectionLog, _ = fr.str()
	if ticks := fr.i64(); ticks > 0 {
		// Only the tick count is stored (the writer's local time for
		// PerfView); it is returned as UTC.
		const maxTicks = 3155378975999999999 // DateTime.MaxValue
		if ticks <= maxTicks {
			d := ticks - ticksUnixEpoch
			in.Time = time.Unix(d/1e7, d%1e7*100).UTC()
		}
	}
	in.MachineName, _ = fr.str()
	in.ProcessName, _ = fr.str()
	in.ProcessID = int(fr.i32())
	in.TotalProcessCommit = fr.i64()
	in.TotalProcessWorkingSet = fr.i64()
	if n := fr.count(4, "count multiplier"); n > 0 {
		in.CountMultipliersByType = make([]float32, n)
		for i := range n {
			in.CountMultipliersByType[i] = fr.f32()
		}
	}
	// Version 9+: tagged InteropInfo, version 10: tagged creation tool.
	if fr.err == nil && fr.tag() == tagSkipRegion {
		at := fr.pos()
		end := fr.i32()
		if fr.err == nil && fr.tag() != tagNull {
			// COM interop data of a Windows heap dump: skipped.
			if to := fr.resolve(end); fr.err == nil && to <= at {
				fr.fail(ErrCorrupt, "skip region ends at %d, before it starts", to)
			} else {
				fr.seek(to)
			}
		}
	} else {
		fr.unread()
	}
	if fr.err == nil && fr.tag() == tagString {
		in.CreationTool, _ = fr.str()
	} else {
		fr.unread()
	}
	fr.endObject(ty)
	fr.checkTrailer()
	if fr.err != nil {
		return nil, fr.err
	}
	return g, nil
}

func readDotNetHeapInfo(fr *fsReader, t *fsType, in *Info) {
	fr.what = "DotNetHeapInfo"
	in.SizeOfAllSegments = fr.i64()
	n := fr.count(9, "segment")
	in.Segments = make([]Segment, 0, n)
	for range n {
		st := fr.beginObject("GCHeapDumpSegment")
		if fr.err != nil {
			return
		}
		if st == nil {
			continue
		}
		var s Segment
		for _, p := range []*uint64{&s.Start, &s.End, &s.Gen0End, &s.Gen1End, &s.Gen2End, &s.Gen3End} {
			*p = uint64(fr.i64())
		}
		if st.version >= 1 {
			s.Gen4End = uint64(fr.i64())
		}
		fr.endObject(st)
		in.Segments = append(in.Segments, s)
	}
	fr.endObject(t)
}

// readMemoryGraph reads the Graphs.MemoryGraph object into a Graph.
func readMemoryGraph(fr *fsReader) *Graph {
	ty := fr.beginObject("the MemoryGraph")
	if fr.err != nil {
		return nil
	}
	if ty == nil || ty.name != typeMemoryGraph {
		fr.fail(ErrCorrupt, "expected a %s", typeMemoryGraph)
		return nil
	}
	fr.what = "MemoryGraph header"
	fr.i64() // total size: recomputed from the nodes
	root := fr.i32()
	nt := fr.count(9, "type")
	g := &Graph{Types: make([]Type, nt)}
	typeSize := make([]int32, nt)
	fr.what = "node types"
	for i := range nt {
		g.Types[i].Name, _ = fr.str()
		typeSize[i] = fr.i32()
		g.Types[i].Module, _ = fr.str()
	}
	if fr.err != nil {
		return nil
	}
	if nt == 0 {
		fr.fail(ErrCorrupt, "no node types")
		return nil
	}
	n := fr.count(4, "node")
	if fr.err == nil && (root < 0 || int(root) >= n) {
		fr.fail(ErrCorrupt, "root node %d of %d", root, n)
	}
	g.Root = NodeID(root)
	fr.what = "node labels"
	labels := make([]uint32, n)
	fr.u32s(labels)
	blobLen := fr.count(1, "node record byte")
	if fr.err != nil {
		return nil
	}
	blobAt := fr.pos()
	blob := make([]byte, blobLen)
	if got, err := fr.r.ReadAt(blob, blobAt); got < blobLen {
		if err == nil || err == io.EOF {
			err = ErrTruncated
		}
		fr.fail(err, "reading %d bytes of node records", blobLen)
		return nil
	}
	fr.seek(blobAt + int64(blobLen))
	decodeNodes(fr, g, labels, blob, typeSize, blobAt)
	labels, blob = nil, nil
	if fr.err != nil {
		return nil
	}
	if ty.minReader >= 1 {
		readDeferredTypes(fr, g)
	}
	fr.what = "node addresses"
	na := fr.count(8, "address")
	if fr.err == nil && na != n {
		fr.fail(ErrCorrupt, "%d addresses for %d nodes", na, n)
	}
	g.addr = make([]uint64, n)
	adviseHuge(g.addr)
	fr.u64s(g.addr)
	if fr.err == nil && fr.tag() == tagByte {
		g.Is64Bit = fr.u8() != 0
	} else {
		fr.unread()
	}
	fr.endObject(ty)
	if fr.err != nil {
		return nil
	}
	if err := g.check(); err != nil {
		fr.fail(ErrCorrupt, "%v", err)
		return nil
	}
	return g
}

// decodeNodes decodes every node's record into the graph's arrays.
func decodeNodes(fr *fsReader, g *Graph, labels []uint32, blob []byte, typeSize []int32, blobAt int64) {
	n := len(labels)
	g.typ = make([]uint32, n)
	g.size = make([]uint32, n)
	g.off = make([]uint32, n+1)
	adviseHuge(g.typ)
	adviseHuge(g.size)
	adviseHuge(g.off)
	// First pass: count references so that the edge array is allocated
	// once; the blob bounds it (at least a byte a reference).
	total := 0
	bad := func(i int, at int, what string) {
		fr.setErr(&FormatError{Offset: blobAt + int64(at), What: fmt.Sprintf("record of node %d", i), Err: fmt.Errorf("%w: %s", ErrCorrupt, what)})
	}
	for i, l := range labels {
		at := int(l)
		if l > uint32(len(blob)) {
			bad(i, 0, fmt.Sprintf("label %d outside the %d bytes of records", l, len(blob)))
			return
		}
		ts, p, ok := readCompressed(blob, at)
		if ok && ts&1 != 0 {
			_, p, ok = readCompressed(blob, p)
		}
		var c int32
		if ok {
			c, _, ok = readCompressed(blob, p)
		}
		if !ok || c < 0 || int(c) > len(blob) {
			bad(i, at, "truncated or bad header")
			return
		}
		total += int(c)
		if total > len(blob) {
			bad(i, at, "more references than bytes")
			return
		}
	}
	g.edges = make([]NodeID, 0, total)
	adviseHuge(g.edges)
	for i, l := range labels {
		p := int(l)
		ts, p, _ := readCompressed(blob, p)
		t := ts >> 1
		if t < 0 || int(t) >= len(g.Types) {
			bad(i, int(l), fmt.Sprintf("type %d of %d", t, len(g.Types)))
			return
		}
		size := typeSize[t]
		if ts&1 != 0 {
			size, p, _ = readCompressed(blob, p)
		}
		if size < 0 {
			if ts&1 == 0 && t == 0 {
				size = 0
			} else {
				bad(i, int(l), fmt.Sprintf("size %d", size))
				return
			}
		}
		c, p, _ := readCompressed(blob, p)
		g.typ[i], g.size[i] = uint32(t), uint32(size)
		for range c {
			d, q, ok := readCompressed(blob, p)
			if !ok {
				bad(i, p, "truncated reference")
				return
			}
			p = q
			child := int64(i) + int64(d)
			if child < 0 || child >= int64(n) {
				bad(i, p, fmt.Sprintf("reference to node %d of %d", child, n))
				return
			}
			g.edges = append(g.edges, NodeID(child))
		}
		g.off[i+1] = uint32(len(g.edges))
	}
}

// readDeferredTypes reads the region a MemoryGraph with minimum reader
// version 1 adds: types named by an id and a module (ProjectN heaps).
func readDeferredTypes(fr *fsReader, g *Graph) {
	fr.what = "deferred types"
	fr.i32() // forward reference to the region's end
	n := fr.count(9, "deferred type")
	modules := map[int64]string{} // module objects by label
	for i := range n {
		id := fr.i32()
		var module string
		at := fr.pos()
		switch fr.tag() {
		case tagObjectRef:
			module = modules[int64(fr.i32())]
		default:
			fr.unread()
			if t := fr.beginObject("Graphs.Module"); t != nil {
				module, _ = fr.str() // Path
				fr.i64()             // ImageBase
				fr.i32()             // Size
				fr.i64()             // BuildTime
				fr.str()             // PdbName
				fr.bytes(16)         // PdbGuid
				fr.i32()             // PdbAge
				fr.endObject(t)
				modules[at] = module
			}
		}
		suffix, _ := fr.str()
		if i < len(g.Types) && g.Types[i].Name == "" {
			g.Types[i].Name = fmt.Sprintf("TypeID(0x%x)%s", id, suffix)
			g.Types[i].Module = module
		}
	}
	if fr.err == nil && fr.tag() != tagEndObject {
		fr.unread()
		fr.fail(ErrCorrupt, "no end of the deferred-type region")
	}
}

// IsFormatError reports whether err is a damaged or unsupported file (as
// opposed to an I/O error).
func IsFormatError(err error) bool {
	var fe *FormatError
	return errors.As(err, &fe)
}
