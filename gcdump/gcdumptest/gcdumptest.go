// Package gcdumptest writes the events of a heap-snapshot session for a
// heap described in a few lines, so that tests can exercise package gcdump
// (and the commands built on it) without a .NET runtime: as a nettrace
// file, or as the sessions of an ipctest fake diagnostic server.
package gcdumptest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Type is a .NET type of the fake heap.
type Type struct {
	ID     uint64 // the MethodTable address
	Name   string // in the runtime's syntax, e.g. List`1[App.Item]
	Module uint64 // module id, named by Heap.Modules
}

// Object is an object of the fake heap.
type Object struct {
	Addr uint64
	Type uint64 // a Type.ID
	Size uint64
	Refs []uint64 // addresses
}

// Root is a GC root: Kind and Flags as in GCBulkRootEdge (0 stack, 1
// finalizer, 2 handle; flag 1 pinning, 2 weak).
type Root struct {
	Object uint64
	Kind   uint8
	Flags  uint32
}

// Static is a static field holding an object.
type Static struct {
	Object uint64
	Field  string
}

// Heap is a fake managed heap.
type Heap struct {
	Types   []Type
	Modules map[uint64]string
	Objects []Object
	Roots   []Root
	Statics []Static
	// GCCount is the number of the induced collection (default 7).
	GCCount uint32
}

// Options change how the events are written.
type Options struct {
	// NodesPerEvent and EdgesPerEvent split the objects and references
	// over several events (default: 3 and 4, so that references of an
	// object often arrive in a later event).
	NodesPerEvent, EdgesPerEvent int
	// SkipNodeEvent drops the GCBulkNode event with that index (1-based;
	// 0 drops none), as a runtime whose buffer overflowed does.
	SkipNodeEvent int
	// NoGCEnd leaves out the end of the collection.
	NoGCEnd bool
	// EndFirst writes the collection's GCStart and GCEnd before the heap
	// walk's events, as a stream does when the thread that logs them
	// (server GC) has its buffer written first.
	EndFirst bool
	// Twice writes a second heap walk (another snapshot in the same trace)
	// after the first, of an empty heap.
	Twice bool
	// ProcessID is the trace header's process id (default 4242).
	ProcessID int

	// The options below change how Session's heap session behaves.

	// NoWalk sends no event in the heap session (a runtime that does not
	// walk the heap): only the trace header, then the wait for the stop.
	NoWalk bool
	// Damaged follows the heap session's events with bytes that are not
	// nettrace, then waits for the stop.
	Damaged bool
	// Exit ends the heap session's stream right after its events, before
	// any stop, as a process that exits does.
	Exit bool
	// RundownHangs holds the heap session's stream open after the stop,
	// without the rundown, until the server closes.
	RundownHangs bool
}

// Well-known addresses of Leaky, the heap most tests use.
const (
	TypeHolder = 0x7f0000001000
	TypeList   = 0x7f0000002000
	TypeArray  = 0x7f0000003000
	TypeItem   = 0x7f0000004000
	TypeString = 0x7f0000005000

	AddrList  = 0x1000 // List<Item> held by the static field Holder.s_items
	AddrArray = 0x1100 // its Item[]
	AddrLocal = 0x2000 // an Item held by a local, shared with the list
	AddrStr   = 0x3000 // a string held by a strong handle

	AddrItems   = 0x100000 // item i is at AddrItems+0x40*i
	AddrStrings = 0x800000 // its string at AddrStrings+0x40*i
)

// Leaky returns a small heap with a leak: a static List<App.Item> (held
// through the field s_items) whose array holds n items of 40 bytes, each
// with its own 30-byte string; a local variable on a thread's stack holds
// one more item; a strong GC handle holds a string. Item i is at
// AddrItems+0x40*i, its string at AddrStrings+0x40*i (n up to 100,000).
func Leaky(n int) Heap {
	h := Heap{
		Types: []Type{
			{TypeHolder, "App.Holder", 1},
			{TypeList, "System.Collections.Generic.List`1[App.Item]", 2},
			{TypeArray, "App.Item[]", 1},
			{TypeItem, "App.Item", 1},
			{TypeString, "System.String", 2},
		},
		Modules: map[uint64]string{1: "/app/App.dll", 2: "/dotnet/shared/Microsoft.NETCore.App/3.1.2/System.Private.CoreLib.dll"},
	}
	arr := Object{Addr: AddrArray, Type: TypeArray, Size: uint64(32 + 8*n)}
	h.Objects = append(h.Objects, Object{Addr: AddrList, Type: TypeList, Size: 32, Refs: []uint64{AddrArray}})
	for i := range n {
		item := uint64(AddrItems + 0x40*i)
		arr.Refs = append(arr.Refs, item)
	}
	h.Objects = append(h.Objects, arr)
	for i := range n {
		item, str := uint64(AddrItems+0x40*i), uint64(AddrStrings+0x40*i)
		h.Objects = append(h.Objects, Object{Addr: item, Type: TypeItem, Size: 40, Refs: []uint64{str}},
			Object{Addr: str, Type: TypeString, Size: 30})
	}
	h.Objects = append(h.Objects,
		Object{Addr: AddrLocal, Type: TypeItem, Size: 40, Refs: []uint64{AddrStr}},
		Object{Addr: AddrStr, Type: TypeString, Size: 30})
	h.Roots = []Root{{Object: AddrLocal, Kind: 0}, {Object: AddrStr, Kind: 2}, {Object: AddrLocal, Kind: 2, Flags: 2 /* weak: ignored */}}
	h.Statics = []Static{{Object: AddrList, Field: "s_items"}}
	return h
}

// Trace writes the events of a heap-snapshot session for h, as a whole
// nettrace stream: the induced collection with the heap walk, then the
// rundown's module names.
func Trace(w io.Writer, h Heap, opt Options) error {
	tw, err := newTraceWriter(w, opt)
	if err != nil {
		return err
	}
	tw.heap(h, opt)
	tw.rundown(h)
	return tw.close()
}

// Session serves the sessions of a gcdump collection for an ipctest
// server (use it as ipctest.Config.Tracing): a session without the GC
// heap-dump keyword (the type-table flush) gets one SampleProfiler event;
// the heap session gets the heap walk of h at once and the rundown when
// it is stopped.
func Session(h Heap, opt Options) func(ctx context.Context, s *ipctest.TracingSession) error {
	return func(ctx context.Context, s *ipctest.TracingSession) error {
		tw, err := newTraceWriter(s.Stream, opt)
		if err != nil {
			return err
		}
		heap := false
		for _, p := range s.Request.Providers {
			if strings.EqualFold(p.Name, clrevents.ProviderRuntime) && p.Keywords&0x100000 != 0 {
				heap = true
			}
		}
		if heap {
			if !opt.NoWalk {
				tw.heap(h, opt)
			}
		} else {
			tw.event(tw.md(clrevents.ProviderSampleProfiler, 0, 0), binary.LittleEndian.AppendUint32(nil, 1))
		}
		if tw.err == nil {
			tw.err = tw.w.Flush()
		}
		if tw.err != nil {
			return tw.err
		}
		if heap && opt.Damaged {
			if _, err := s.Stream.Write(bytes.Repeat([]byte{0xee}, 64)); err != nil {
				return err
			}
		}
		if heap && opt.Exit {
			return tw.close()
		}
		select {
		case <-s.Stopped:
		case <-ctx.Done():
			return ctx.Err()
		}
		if heap && opt.RundownHangs {
			<-ctx.Done()
			return ctx.Err()
		}
		if heap && (s.Request.RequestRundown || s.Request.Version >= 4 && s.Request.RundownKeyword != 0) {
			tw.rundown(h)
		}
		return tw.close()
	}
}

type traceWriter struct {
	w   *nettrace.Writer
	mds map[string]*nettrace.Metadata
	seq uint32
	ts  int64
	err error
}

func newTraceWriter(w io.Writer, opt Options) (*traceWriter, error) {
	pid := opt.ProcessID
	if pid == 0 {
		pid = 4242
	}
	nw, err := nettrace.NewWriter(w, nettrace.WriterConfig{PointerSize: 8, ProcessID: pid, ExpectedCPUSamplingRate: 1000000})
	if err != nil {
		return nil, fmt.Errorf("gcdumptest: %w", err)
	}
	return &traceWriter{w: nw, mds: map[string]*nettrace.Metadata{}}, nil
}

func (tw *traceWriter) md(provider string, id, version uint32) *nettrace.Metadata {
	k := fmt.Sprintf("%s/%d/%d", provider, id, version)
	if m := tw.mds[k]; m != nil {
		return m
	}
	m := &nettrace.Metadata{ID: uint32(len(tw.mds) + 1), ProviderName: provider, EventID: id, Version: version}
	if err := tw.w.AddMetadata(m); err != nil && tw.err == nil {
		tw.err = err
	}
	tw.mds[k] = m
	return m
}

func (tw *traceWriter) event(m *nettrace.Metadata, payload []byte) {
	if tw.err != nil {
		return
	}
	tw.seq++
	tw.ts += 1000
	tw.err = tw.w.WriteEvent(&nettrace.Event{Metadata: m, ThreadID: 0x77, CaptureThreadID: 0x77,
		SequenceNumber: tw.seq, Timestamp: tw.ts, Payload: payload})
}

func (tw *traceWriter) close() error {
	if tw.err == nil {
		tw.err = tw.w.Close()
	}
	if tw.err != nil {
		return fmt.Errorf("gcdumptest: %w", tw.err)
	}
	return nil
}

var le = binary.LittleEndian

func (tw *traceWriter) heap(h Heap, opt Options) {
	rt := clrevents.ProviderRuntime
	count := h.GCCount
	if count == 0 {
		count = 7
	}
	// A gen-0 collection first, which a snapshot must skip.
	gcStart := func(n, depth, reason uint32) []byte {
		b := le.AppendUint32(nil, n)
		b = le.AppendUint32(b, depth)
		b = le.AppendUint32(b, reason)
		b = le.AppendUint32(b, 0) // Type: blocking
		b = le.AppendUint16(b, 9)
		return le.AppendUint64(b, 0)
	}
	gcEnd := func(n, depth uint32) []byte {
		b := le.AppendUint32(nil, n)
		b = le.AppendUint32(b, depth)
		return le.AppendUint16(b, 9)
	}
	tw.event(tw.md(rt, 1, 2), gcStart(count-1, 0, 0))
	tw.event(tw.md(rt, 2, 1), gcEnd(count-1, 0))
	if opt.EndFirst {
		tw.event(tw.md(rt, 2, 1), gcEnd(count, 2))
	}
	tw.event(tw.md(rt, 1, 2), gcStart(count, 2, 1))

	// Types first (the runtime logs them as it meets them).
	types := le.AppendUint32(nil, uint32(len(h.Types)))
	types = le.AppendUint16(types, 9)
	for _, t := range h.Types {
		types = le.AppendUint64(types, t.ID)
		types = le.AppendUint64(types, t.Module)
		types = le.AppendUint32(types, 0x02000000)
		flags := uint32(0)
		if strings.HasSuffix(t.Name, "]") && !strings.Contains(t.Name, "`") {
			flags |= 0x8
		}
		types = le.AppendUint32(types, flags)
		types = append(types, 0x12)
		types = appendUTF16(types, t.Name)
		types = le.AppendUint32(types, 0)
	}
	tw.event(tw.md(rt, 15, 0), types)

	npe, epe := opt.NodesPerEvent, opt.EdgesPerEvent
	if npe <= 0 {
		npe = 3
	}
	if epe <= 0 {
		epe = 4
	}
	var edges []uint64
	nodeEvents, edgeEvents := 0, 0
	flushEdges := func(all bool) {
		for len(edges) >= epe || (all && len(edges) > 0) {
			k := min(epe, len(edges))
			b := le.AppendUint32(nil, uint32(edgeEvents))
			b = le.AppendUint32(b, uint32(k))
			b = le.AppendUint16(b, 9)
			for _, e := range edges[:k] {
				b = le.AppendUint64(b, e)
				b = le.AppendUint32(b, 0)
			}
			tw.event(tw.md(rt, 19, 0), b)
			edges = edges[k:]
			edgeEvents++
		}
	}
	for i := 0; i < len(h.Objects); i += npe {
		objs := h.Objects[i:min(i+npe, len(h.Objects))]
		b := le.AppendUint32(nil, uint32(nodeEvents))
		b = le.AppendUint32(b, uint32(len(objs)))
		b = le.AppendUint16(b, 9)
		for _, o := range objs {
			b = le.AppendUint64(b, o.Addr)
			b = le.AppendUint64(b, o.Size)
			b = le.AppendUint64(b, o.Type)
			b = le.AppendUint64(b, uint64(len(o.Refs)))
			edges = append(edges, o.Refs...)
		}
		nodeEvents++
		if nodeEvents != opt.SkipNodeEvent {
			tw.event(tw.md(rt, 18, 0), b)
		}
		flushEdges(false)
	}
	flushEdges(true)

	roots := le.AppendUint32(nil, 0)
	roots = le.AppendUint32(roots, uint32(len(h.Roots)))
	roots = le.AppendUint16(roots, 9)
	for _, r := range h.Roots {
		roots = le.AppendUint64(roots, r.Object)
		roots = append(roots, r.Kind)
		roots = le.AppendUint32(roots, r.Flags)
		roots = le.AppendUint64(roots, 0)
	}
	tw.event(tw.md(rt, 16, 0), roots)

	if len(h.Statics) > 0 {
		st := le.AppendUint32(nil, uint32(len(h.Statics)))
		st = le.AppendUint64(st, 0x5000) // AppDomain
		st = le.AppendUint16(st, 9)
		for i, s := range h.Statics {
			var typ uint64
			for _, o := range h.Objects {
				if o.Addr == s.Object {
					typ = o.Type
				}
			}
			st = le.AppendUint64(st, 0x9000+8*uint64(i))
			st = le.AppendUint64(st, s.Object)
			st = le.AppendUint64(st, typ)
			st = le.AppendUint32(st, 0)
			st = appendUTF16(st, s.Field)
		}
		tw.event(tw.md(rt, 38, 0), st)
	}
	if !opt.NoGCEnd && !opt.EndFirst {
		tw.event(tw.md(rt, 2, 1), gcEnd(count, 2))
	}
	if opt.Twice {
		tw.event(tw.md(rt, 1, 2), gcStart(count+1, 2, 1))
		b := le.AppendUint32(nil, 0) // node block 0 again
		b = le.AppendUint32(b, 1)
		b = le.AppendUint16(b, 9)
		b = le.AppendUint64(b, 0xdead0)
		b = le.AppendUint64(b, 24)
		b = le.AppendUint64(b, h.Types[0].ID)
		b = le.AppendUint64(b, 0)
		tw.event(tw.md(rt, 18, 0), b)
		tw.event(tw.md(rt, 2, 1), gcEnd(count+1, 2))
	}
}

// rundown writes ModuleDCEnd events naming the modules.
func (tw *traceWriter) rundown(h Heap) {
	for _, id := range slices.Sorted(maps.Keys(h.Modules)) {
		path := h.Modules[id]
		b := le.AppendUint64(nil, id)
		b = le.AppendUint64(b, 0)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, 0)
		b = appendUTF16(b, path)
		b = appendUTF16(b, "")
		b = le.AppendUint16(b, 9)
		tw.event(tw.md(clrevents.ProviderRundown, 154, 1), b)
	}
}

func appendUTF16(b []byte, s string) []byte {
	for _, r := range s {
		b = le.AppendUint16(b, uint16(r))
	}
	return append(b, 0, 0)
}
