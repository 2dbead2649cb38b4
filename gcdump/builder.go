package gcdump

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
)

// ErrTooLarge is wrapped by the errors of a graph that exceeds what this
// package can index: 2^32-1 nodes or references, or a node larger than
// 2 GiB (the .gcdump format stores sizes as 32-bit integers).
var ErrTooLarge = errors.New("gcdump: graph too large")

// Builder builds a Graph node by node, in any order: objects are named by
// their address, and a reference to an object that is described later (or
// never) is fine. It is what turns the runtime's heap-walk events into a
// graph, and what tests use to make graphs.
//
// Memory: a Builder keeps the arrays of the final graph (BytesPerNode per
// node, BytesPerEdge per reference) plus an address table of about 17
// bytes per node (up to twice that while it grows, when the number of
// nodes was not known) and 4 bytes per node, which Finish releases.
type Builder struct {
	types   []Type
	typeIdx map[Type]int

	ids      addrTable
	next     uint32   // next provisional id
	nullID   NodeID   // provisional id of address 0, NoNode until used
	toFinal  []uint32 // provisional id -> final index, NoNode until defined
	typ      []uint32 // by final index
	size     []uint32
	addr     []uint64
	off      []uint32
	edges    []NodeID // provisional ids until Finish
	finished bool
}

// NewBuilder returns a Builder sized for about expectedNodes nodes (0 for
// no guess).
func NewBuilder(expectedNodes int) *Builder { return NewBuilderSize(expectedNodes, 0) }

// NewBuilderSize returns a Builder sized for about expectedNodes nodes and
// expectedRefs references (0 for no guess): arrays sized from the start
// are not copied as they grow, which leaves the collector nothing to free
// and keeps the peak down.
func NewBuilderSize(expectedNodes, expectedRefs int) *Builder {
	expectedNodes = max(0, min(expectedNodes, 1<<28))
	expectedRefs = max(0, min(expectedRefs, 1<<30))
	b := &Builder{
		types:   []Type{{Name: "UNDEFINED"}},
		typeIdx: map[Type]int{{Name: "UNDEFINED"}: 0},
		nullID:  NoNode,
		typ:     make([]uint32, 0, expectedNodes),
		size:    make([]uint32, 0, expectedNodes),
		addr:    make([]uint64, 0, expectedNodes),
		off:     make([]uint32, 1, expectedNodes+1),
		toFinal: make([]uint32, 0, expectedNodes),
		edges:   make([]NodeID, 0, expectedRefs),
	}
	adviseHuge(b.typ)
	adviseHuge(b.size)
	adviseHuge(b.addr)
	adviseHuge(b.off)
	adviseHuge(b.toFinal)
	adviseHuge(b.edges)
	b.ids.init(expectedNodes)
	return b
}

// Type returns the index of the type, adding it the first time.
func (b *Builder) Type(name, module string) int {
	t := Type{Name: name, Module: module}
	if i, ok := b.typeIdx[t]; ok {
		return i
	}
	b.types = append(b.types, t)
	b.typeIdx[t] = len(b.types) - 1
	return len(b.types) - 1
}

// NumTypes returns the number of types so far.
func (b *Builder) NumTypes() int { return len(b.types) }

// Ref returns the node of the object at addr, creating it (undefined) the
// first time the address is seen.
func (b *Builder) Ref(addr uint64) NodeID {
	if addr == 0 {
		if b.nullID == NoNode {
			b.nullID = b.newID()
		}
		return b.nullID
	}
	id, fresh := b.ids.lookup(addr, NodeID(b.next))
	if fresh {
		b.newID()
	}
	return id
}

// NewNode returns a new node that has no address: a pseudo-node.
func (b *Builder) NewNode() NodeID { return b.newID() }

func (b *Builder) newID() NodeID {
	id := NodeID(b.next)
	b.next++
	b.toFinal = append(b.toFinal, uint32(NoNode))
	return id
}

// SetObject describes the object at addr. Each object is described once.
func (b *Builder) SetObject(addr uint64, typ int, size uint64, refs []NodeID) (NodeID, error) {
	id := b.Ref(addr)
	return id, b.define(id, addr, typ, size, refs)
}

// SetNode describes a node made by NewNode.
func (b *Builder) SetNode(n NodeID, typ int, size uint64, refs []NodeID) error {
	return b.define(n, 0, typ, size, refs)
}

func (b *Builder) define(id NodeID, addr uint64, typ int, size uint64, refs []NodeID) error {
	switch {
	case b.finished:
		return errors.New("gcdump: Builder used after Finish")
	case uint32(id) >= b.next:
		return fmt.Errorf("gcdump: node %d was not made by this Builder", id)
	case b.toFinal[id] != uint32(NoNode):
		return fmt.Errorf("gcdump: node %d (address %#x) described twice", id, addr)
	case typ < 0 || uint64(typ) > math.MaxUint32:
		return fmt.Errorf("gcdump: bad type index %d", typ)
	case size > math.MaxInt32:
		return fmt.Errorf("%w: object at %#x has %d bytes (the format stores 31 bits)", ErrTooLarge, addr, size)
	case uint64(len(b.typ)) >= math.MaxUint32-1 || uint64(len(b.edges))+uint64(len(refs)) > math.MaxUint32:
		return fmt.Errorf("%w: more than 2^32 nodes or references", ErrTooLarge)
	}
	for _, r := range refs {
		if uint32(r) >= b.next {
			return fmt.Errorf("gcdump: reference to node %d that was not made by this Builder", r)
		}
	}
	b.toFinal[id] = uint32(len(b.typ))
	b.typ = append(b.typ, uint32(typ))
	b.size = append(b.size, uint32(size))
	b.addr = append(b.addr, addr)
	b.edges = append(b.edges, refs...)
	b.off = append(b.off, uint32(len(b.edges)))
	return nil
}

// retype maps every node's type index through f (used when type names are
// resolved after the nodes, as in the runtime's events).
func (b *Builder) retype(f func(uint32) uint32) {
	for i, t := range b.typ {
		b.typ[i] = f(t)
	}
}

// Finish returns the graph. Nodes that were referenced but never described
// become UNDEFINED nodes (type 0, size 0). The Builder cannot be used
// afterwards.
func (b *Builder) Finish(root NodeID) (*Graph, error) {
	if b.finished {
		return nil, errors.New("gcdump: Builder used after Finish")
	}
	if uint32(root) >= b.next {
		return nil, fmt.Errorf("gcdump: root %d was not made by this Builder", root)
	}
	b.finished = true
	undefined := func(id NodeID, addr uint64) {
		if b.toFinal[id] == uint32(NoNode) {
			b.toFinal[id] = uint32(len(b.typ))
			b.typ = append(b.typ, 0)
			b.size = append(b.size, 0)
			b.addr = append(b.addr, addr)
			b.off = append(b.off, uint32(len(b.edges)))
		}
	}
	b.ids.each(undefined)
	for id := range b.next {
		undefined(NodeID(id), 0) // pseudo-nodes and the null reference
	}
	tableBytes := 12*len(b.ids.keys) + 4*cap(b.toFinal)
	b.ids = addrTable{}
	for i, e := range b.edges {
		b.edges[i] = NodeID(b.toFinal[e])
	}
	for _, t := range b.typ {
		if int(t) >= len(b.types) {
			return nil, fmt.Errorf("gcdump: node type %d of %d", t, len(b.types))
		}
	}
	g := &Graph{Types: b.types, Root: NodeID(b.toFinal[root]), Is64Bit: true,
		typ: b.typ, size: b.size, addr: b.addr, off: b.off, edges: b.edges}
	b.toFinal = nil
	if err := g.check(); err != nil {
		return nil, err
	}
	if tableBytes >= bigGarbage {
		// The address table and the id map are garbage now, about 21
		// bytes a node. The collector would free them only when the
		// heap reaches twice what it was at its last cycle, which they
		// were part of: the next phase (the dominator tree, 36 bytes a
		// node while it runs) would be added on top of them. Collecting
		// them now lets it reuse their memory: on 10 million objects the
		// peak of building, the dominators and the report falls from 73
		// to 68 bytes an object.
		runtime.GC()
	}
	return g, nil
}

// bigGarbage is the size of a Builder's temporary tables from which
// Finish collects them at once.
const bigGarbage = 64 << 20

// addrTable maps addresses to node ids: open addressing with linear probing,
// keys and values in separate arrays (12 bytes a slot, at most 70% full).
// A key's home slot is its hash scaled to the table's size (the high half
// of hash*size), so that the size need not be a power of two: a table
// sized for the expected nodes is 17 bytes a node, not up to twice that.
// Address 0 is the empty slot; Builder handles it apart.
type addrTable struct {
	keys []uint64
	vals []NodeID
	n    int
}

// maxLoad is the table's largest load, in tenths.
const maxLoad = 7

func (t *addrTable) init(expected int) {
	t.alloc(max(1024, expected*10/maxLoad+1))
}

func (t *addrTable) alloc(size int) {
	t.keys = make([]uint64, size)
	t.vals = make([]NodeID, size)
	adviseHuge(t.keys)
	adviseHuge(t.vals)
}

func (t *addrTable) slot(key uint64) int {
	hi, _ := bits.Mul64(key*0x9E3779B97F4A7C15, uint64(len(t.keys)))
	return int(hi)
}

// lookup returns the id of key, inserting fresh when the key is new.
func (t *addrTable) lookup(key uint64, fresh NodeID) (NodeID, bool) {
	if t.keys == nil {
		t.init(0)
	}
	size := len(t.keys)
	for i := t.slot(key); ; {
		switch t.keys[i] {
		case key:
			return t.vals[i], false
		case 0:
			t.keys[i], t.vals[i] = key, fresh
			t.n++
			if t.n*10 > size*maxLoad {
				t.grow()
			}
			return fresh, true
		}
		if i++; i == size {
			i = 0
		}
	}
}

func (t *addrTable) grow() {
	keys, vals := t.keys, t.vals
	t.alloc(2 * len(keys))
	size := len(t.keys)
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := t.slot(k)
		for t.keys[i] != 0 {
			if i++; i == size {
				i = 0
			}
		}
		t.keys[i], t.vals[i] = k, vals[j]
	}
}

func (t *addrTable) each(f func(NodeID, uint64)) {
	for i, k := range t.keys {
		if k != 0 {
			f(t.vals[i], k)
		}
	}
}
