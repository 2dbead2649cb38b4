package gcdump

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
)

var (
	// ErrNoHeapDump: the events hold no heap walk (no induced, blocking
	// gen-2 collection with GCBulkNode events).
	ErrNoHeapDump = errors.New("the trace holds no heap snapshot (no induced blocking gen 2 GC with heap-walk events)")
	// ErrIncomplete: the heap walk started but its GC did not end in the
	// events, or the runtime dropped some of them.
	ErrIncomplete = errors.New("the heap snapshot is incomplete")
)

// HeapBuilder turns the events of a heap-snapshot session into a Graph. It
// follows dotnet-gcdump: the snapshot is the heap walk of the first
// induced, blocking (non-background) gen-2 collection that reports
// objects; its objects come in GCBulkNode events and their references, in
// the same order, in GCBulkEdge events; roots, static fields and types
// come in their own events, and module names in the rundown at the end.
//
// Nodes are added to the graph as soon as their references have arrived,
// so memory grows with the heap, not with the number of events.
type HeapBuilder struct {
	b        *Builder
	ptrSize  int
	kinds    map[*nettrace.Metadata]int
	induced  bool                 // the snapshot's GCStart was seen
	ended    map[uint32]time.Time // GCEnds seen before it, by count
	second   bool                 // a second heap walk began: ignore it
	gcCount  uint32
	gcStart  time.Time
	gcEnd    time.Time
	lastNode int64 // Index of the last GCBulkNode event, -1 before the first
	lastEdge int64

	pending  []pendingNode // nodes waiting for their references
	pendHead int
	refs     []NodeID // references not yet given to a node
	refHead  int

	types   map[uint64]uint32 // TypeID -> local type index
	local   []localType
	modules map[uint64]string
	roots   rootTree
	statics []StaticVar
	ccws    []CCW
	rcws    int
	nodes   int64
	edges   int64
	dropped bool
}

// pendingNode is an object waiting for its references (20 bytes, with its
// type already interned).
type pendingNode struct {
	addr             uint64
	size, typ, edges uint32
}

type localType struct {
	id    uint64
	named bool
	t     BulkType
}

// Kinds of the events the builder reads.
const (
	evOther = iota
	evGCStart
	evGCEnd
	evBulkType
	evRootEdge
	evCWT
	evNode
	evEdge
	evCCW
	evRCW
	evStatic
	evModule
)

// NewHeapBuilder returns a builder for a trace whose header says the
// pointer size (4 or 8).
func NewHeapBuilder(ptrSize int) *HeapBuilder {
	h := &HeapBuilder{
		b: NewBuilder(0), ptrSize: ptrSize, kinds: map[*nettrace.Metadata]int{},
		lastNode: -1, lastEdge: -1,
		types: map[uint64]uint32{}, modules: map[uint64]string{}, ended: map[uint32]time.Time{},
	}
	return h
}

func (h *HeapBuilder) kind(md *nettrace.Metadata) int {
	if k, ok := h.kinds[md]; ok {
		return k
	}
	k := evOther
	switch {
	case strings.EqualFold(md.ProviderName, clrevents.ProviderRuntime):
		switch md.EventID {
		case uint32(clrevents.IDGCStart):
			k = evGCStart
		case uint32(clrevents.IDGCEnd):
			k = evGCEnd
		case IDBulkType:
			k = evBulkType
		case IDGCBulkRootEdge:
			k = evRootEdge
		case IDGCBulkRootCWTElementEdge:
			k = evCWT
		case IDGCBulkNode:
			k = evNode
		case IDGCBulkEdge:
			k = evEdge
		case IDGCBulkRootCCW:
			k = evCCW
		case IDGCBulkRCW:
			k = evRCW
		case IDGCBulkRootStaticVar:
			k = evStatic
		case uint32(clrevents.IDModuleLoad):
			k = evModule
		}
	case strings.EqualFold(md.ProviderName, clrevents.ProviderRundown):
		switch md.EventID {
		case uint32(clrevents.IDModuleDCStart), uint32(clrevents.IDModuleDCEnd):
			k = evModule
		}
	}
	h.kinds[md] = k
	return k
}

// Progress returns how many objects and references have been seen.
func (h *HeapBuilder) Progress() (objects, references int64) { return h.nodes, h.edges }

// WalkDuration is the time from the start to the end of the snapshot's
// collection, by the runtime's clock: how long the process was paused.
func (h *HeapBuilder) WalkDuration() time.Duration {
	if !h.Done() {
		return 0
	}
	return h.gcEnd.Sub(h.gcStart)
}

// Started reports whether the snapshot's collection has begun.
func (h *HeapBuilder) Started() bool { return h.induced || h.nodes > 0 }

// Done reports whether the snapshot's collection has ended (its GCStart
// and GCEnd have both been seen). Events of the heap walk may still be on
// their way: the runtime writes each thread's events in order, but the
// threads' buffers in any order, so that with server GC the walking
// thread's events can come after the GCEnd. Stop the session then and
// feed every event up to the end of the stream before Finish.
func (h *HeapBuilder) Done() bool { return h.induced && !h.gcEnd.IsZero() }

// Event feeds one event of the trace. Events that do not matter are
// ignored. An error means the snapshot cannot be built (damaged payloads,
// lost events).
//
// Events are accepted in stream order, which is not time order across
// threads: the heap walk's events are recognised by their own numbering,
// not by their position relative to GCStart and GCEnd. A session with the
// heap keywords walks the heap only for the collection it induces; a trace
// with several snapshots gives the first.
func (h *HeapBuilder) Event(ev *nettrace.Event) error {
	if ev.Metadata == nil {
		return nil
	}
	k := h.kind(ev.Metadata)
	if k == evOther {
		return nil
	}
	p, v := ev.Payload, uint8(ev.Metadata.Version)
	switch k {
	case evGCStart:
		s, err := clrevents.DecodeGCStart(p, v)
		if err != nil {
			return err
		}
		// The first blocking (Type 0) gen-2 collection that was induced.
		if !h.induced && s.Depth == 2 && s.Type == 0 && s.Reason == 1 {
			h.induced, h.gcCount, h.gcStart = true, s.Count, ev.Time()
			if t, ok := h.ended[s.Count]; ok { // its GCEnd came first
				h.gcEnd = t
			}
		}
		return nil
	case evGCEnd:
		e, err := clrevents.DecodeGCEnd(p, v)
		if err != nil {
			return err
		}
		switch {
		case h.induced && e.Count == h.gcCount:
			h.gcEnd = ev.Time()
		case !h.induced && len(h.ended) < 1024:
			h.ended[e.Count] = ev.Time()
		}
		return nil
	case evBulkType:
		// Types are logged whenever the runtime first meets them, not only
		// during the walk.
		ts, err := DecodeBulkType(p)
		for _, t := range ts {
			i := h.localType(t.TypeID)
			h.local[i].t, h.local[i].named = t, true
		}
		return err
	case evModule:
		m, err := clrevents.DecodeModuleLoad(p, v)
		if err == nil && m.ModuleILPath != "" {
			h.modules[m.ModuleID] = m.ModuleILPath
		}
		return nil
	}
	if h.second {
		return nil // a later snapshot in the same trace
	}
	switch k {
	case evNode:
		bn, err := DecodeBulkNodes(p, h.ptrSize)
		if err != nil {
			return err
		}
		if bn.Index == 0 && h.lastNode >= 0 {
			h.second = true // the next heap walk starts
			return nil
		}
		if int64(bn.Index) != h.lastNode+1 {
			h.dropped = true
			return fmt.Errorf("%w: the runtime dropped heap-walk events (GCBulkNode block %d came after %d)", ErrIncomplete, bn.Index, h.lastNode)
		}
		h.lastNode = int64(bn.Index)
		for i := range int(bn.Count) {
			n := bn.At(i)
			if n.Size > math.MaxInt32 || n.EdgeCount > math.MaxUint32 {
				return fmt.Errorf("%w: object at %#x has %d bytes and %d references (the format stores 31 bits)", ErrTooLarge, n.Address, n.Size, n.EdgeCount)
			}
			h.pending = append(h.pending, pendingNode{n.Address, uint32(n.Size), h.localType(n.TypeID), uint32(n.EdgeCount)})
		}
		h.nodes += int64(bn.Count)
		return h.flush(false)
	case evEdge:
		be, err := DecodeBulkEdges(p, h.ptrSize)
		if err != nil {
			return err
		}
		if be.Index == 0 && h.lastEdge >= 0 {
			h.second = true
			return nil
		}
		if int64(be.Index) != h.lastEdge+1 {
			h.dropped = true
			return fmt.Errorf("%w: the runtime dropped heap-walk events (GCBulkEdge block %d came after %d)", ErrIncomplete, be.Index, h.lastEdge)
		}
		h.lastEdge = int64(be.Index)
		for i := range int(be.Count) {
			h.refs = append(h.refs, h.b.Ref(be.Target(i)))
		}
		h.edges += int64(be.Count)
		return h.flush(false)
	case evRootEdge:
		re, err := DecodeRootEdges(p, h.ptrSize)
		if err != nil {
			return err
		}
		for i := range int(re.Count) {
			h.addRoot(re.At(i))
		}
	case evCWT:
		ce, err := DecodeCWTEdges(p, h.ptrSize)
		if err != nil {
			return err
		}
		for i := range int(ce.Count) {
			if e := ce.At(i); e.Key != 0 {
				h.roots.child("[other roots]").child("[Dependent Handles]").add(h.b.Ref(e.Value))
			}
		}
	case evStatic:
		ss, err := DecodeStaticVars(p)
		for _, s := range ss {
			h.localType(s.TypeID)
			h.b.Ref(s.ObjectID)
		}
		h.statics = append(h.statics, ss...)
		return err
	case evCCW:
		cs, err := DecodeCCWs(p)
		for _, c := range cs {
			h.localType(c.TypeID)
			h.b.Ref(c.ObjectID)
		}
		h.ccws = append(h.ccws, cs...)
		return err
	case evRCW:
		rs, err := DecodeRCWs(p)
		h.rcws += len(rs)
		return err
	}
	return nil
}

func (h *HeapBuilder) localType(id uint64) uint32 {
	if i, ok := h.types[id]; ok {
		return i
	}
	i := uint32(len(h.local))
	h.local = append(h.local, localType{id: id})
	h.types[id] = i
	return i
}

// addRoot files a root under its pseudo-node, as dotnet-gcdump does.
func (h *HeapBuilder) addRoot(r RootEdge) {
	if r.Flags&RootWeakRef != 0 {
		return // weak references keep nothing alive
	}
	var n *rootNode
	switch {
	case r.Kind == RootStack:
		n = h.roots.child("[local vars]")
	case r.Flags&RootRefCounted != 0:
		n = h.roots.child("[other roots]").child("[COM/WinRT Objects]")
	case r.Kind == RootFinalizer:
		n = h.roots.child("[other roots]").child("[finalizer Handles]")
	case r.Kind == RootHandle && r.Flags == RootPinning:
		n = h.roots.child("[other roots]").child("[pinning Handles]")
	case r.Kind == RootHandle:
		n = h.roots.child("[other roots]").child("[strong Handles]")
	default:
		n = h.roots.child("[other roots]").child("[other Handles]")
	}
	n.add(h.b.Ref(r.Object))
}

// flush defines the pending nodes whose references have all arrived. At
// the end of the walk (final) every node must be complete.
func (h *HeapBuilder) flush(final bool) error {
	for h.pendHead < len(h.pending) {
		n := h.pending[h.pendHead]
		if int(n.edges) > len(h.refs)-h.refHead {
			break
		}
		refs := h.refs[h.refHead : h.refHead+int(n.edges)]
		if _, err := h.b.SetObject(n.addr, int(n.typ), uint64(n.size), refs); err != nil {
			return err
		}
		h.refHead += int(n.edges)
		h.pendHead++
	}
	if final && (h.pendHead < len(h.pending) || h.refHead < len(h.refs)) {
		return fmt.Errorf("%w: %d objects wait for references that never came, %d references are left over",
			ErrIncomplete, len(h.pending)-h.pendHead, len(h.refs)-h.refHead)
	}
	// Compact the queues once their consumed part dominates.
	if h.pendHead > 4096 && h.pendHead*2 > len(h.pending) {
		h.pending = h.pending[:copy(h.pending, h.pending[h.pendHead:])]
		h.pendHead = 0
	}
	if h.refHead > 4096 && h.refHead*2 > len(h.refs) {
		h.refs = h.refs[:copy(h.refs, h.refs[h.refHead:])]
		h.refHead = 0
	}
	return nil
}

// typeName names a type of the runtime's events in PerfView's spelling
// (see displayTypeName).
func typeName(t BulkType, named bool) string {
	if !named {
		return fmt.Sprintf("UNKNOWN 0x%x", t.TypeID)
	}
	n := t.Name
	if n == "" {
		if t.Flags&TypeArray != 0 {
			return fmt.Sprintf("ArrayType(0x%x)", t.TypeNameID)
		}
		return fmt.Sprintf("Type(0x%x)", t.TypeNameID)
	}
	n = displayTypeName(n)
	if t.Flags&TypeExternalCOMObject != 0 {
		n = "[RCW " + n + "]"
	}
	return n
}

// Finish builds the graph: it names the types (with the module names the
// rundown gave), makes the root pseudo-nodes and returns the graph. It
// fails with ErrNoHeapDump or ErrIncomplete when the events did not hold a
// whole snapshot.
func (h *HeapBuilder) Finish() (*Graph, error) {
	switch {
	case h.dropped:
		return nil, fmt.Errorf("%w: the runtime dropped heap-walk events", ErrIncomplete)
	case h.nodes == 0 && !h.induced:
		return nil, ErrNoHeapDump
	case h.nodes == 0:
		return nil, fmt.Errorf("%w: the events hold the induced collection (GC #%d) but no heap walk", ErrNoHeapDump, h.gcCount)
	case !h.Done():
		return nil, fmt.Errorf("%w: the events show the start of the heap walk but not its end (%d objects so far)", ErrIncomplete, h.nodes)
	}
	if err := h.flush(true); err != nil {
		return nil, err
	}
	b := h.b
	remap := make([]uint32, len(h.local))
	names := make([]string, len(h.local))
	for i, lt := range h.local {
		names[i] = typeName(lt.t, lt.named)
		remap[i] = uint32(b.Type(names[i], h.modules[lt.t.ModuleID]))
	}
	b.retype(func(t uint32) uint32 { return remap[t] })

	root := b.NewNode()
	// Static fields: "[static var <type of the object>.<field>]", grouped
	// under [static vars] (or [thread static vars]).
	for _, s := range h.statics {
		parent := h.roots.child("[static vars]")
		if s.Flags&1 != 0 {
			parent = h.roots.child("[thread static vars]")
		}
		parent.child("[static var " + names[h.types[s.TypeID]] + "." + s.FieldName + "]").add(b.Ref(s.ObjectID))
	}
	// COM callable wrappers: a node for the COM object referring to the
	// managed one.
	for _, c := range h.ccws {
		if c.IUnknown == 0 {
			continue
		}
		id, err := b.SetObject(c.IUnknown, b.Type(fmt.Sprintf("[CCW 0x%x for type %s]", c.IUnknown, names[h.types[c.TypeID]]), ""), 200, []NodeID{b.Ref(c.ObjectID)})
		if err != nil {
			return nil, err
		}
		h.roots.child("[COM/WinRT Objects]").add(id)
	}
	if err := h.roots.build(b, root, "[.NET Roots]"); err != nil {
		return nil, err
	}
	g, err := b.Finish(root)
	if err != nil {
		return nil, err
	}
	g.Is64Bit = h.ptrSize == 8
	g.Info.Time = h.gcStart.UTC()
	g.Info.CreationTool = "clrdiag"
	if h.rcws > 0 {
		g.Info.CollectionLog = fmt.Sprintf("%d runtime callable wrappers (RCWs) not linked to their COM objects\n", h.rcws)
	}
	return g, nil
}

// rootTree is the tree of root pseudo-nodes, built as roots arrive.
type rootTree struct{ rootNode }

type rootNode struct {
	name     string
	children []*rootNode
	refs     []NodeID
}

func (n *rootNode) child(name string) *rootNode {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	c := &rootNode{name: name}
	n.children = append(n.children, c)
	return c
}

func (n *rootNode) add(id NodeID) { n.refs = append(n.refs, id) }

// build defines the pseudo-node tree under id.
func (n *rootNode) build(b *Builder, id NodeID, name string) error {
	ids := make([]NodeID, len(n.children))
	for i := range n.children {
		ids[i] = b.NewNode()
	}
	if err := b.SetNode(id, b.Type(name, ""), 0, append(ids, n.refs...)); err != nil {
		return err
	}
	for i, c := range n.children {
		if err := c.build(b, ids[i], c.name); err != nil {
			return err
		}
	}
	return nil
}

// FromTrace builds the graph of the heap snapshot in a nettrace stream (a
// trace collected with the GC heap-dump keywords, such as the one Collect
// records, or one of dotnet-trace with --profile gc-heap-snapshot
// equivalents). The whole stream is read: module names come last.
func FromTrace(r io.Reader) (*Graph, error) {
	tr, err := nettrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	h := NewHeapBuilder(tr.Header().PointerSize)
	var ev nettrace.Event
	var readErr error
	for {
		err := tr.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if err := h.Event(&ev); err != nil {
			return nil, err
		}
	}
	g, err := h.Finish()
	if err != nil {
		if readErr != nil {
			return nil, fmt.Errorf("%w (the trace is damaged: %v)", err, readErr)
		}
		return nil, err
	}
	g.Info.ProcessID = tr.Header().ProcessID
	return g, readErr
}
