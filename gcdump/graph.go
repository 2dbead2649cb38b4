package gcdump

import (
	"fmt"
	"strings"
	"time"
)

// NodeID is the index of a node in a Graph.
type NodeID uint32

// NoNode stands for "no node" (an object without a dominator, a path that
// does not exist).
const NoNode NodeID = 1<<32 - 1

// Type is a node type: a .NET type, or the name of a pseudo-node.
type Type struct {
	// Name is the type name as PerfView shows it: generic arguments in
	// angle brackets, arity markers removed (List<System.String>).
	Name string
	// Module is the path or name of the module that defines the type; ""
	// when unknown.
	Module string
}

// Segment is a range of the GC heap and where each generation ends in it
// (DotNetHeapInfo in the file format; dotnet-gcdump does not write them).
type Segment struct {
	Start, End                                  uint64
	Gen0End, Gen1End, Gen2End, Gen3End, Gen4End uint64
}

// Info is what a .gcdump file says about the snapshot besides the graph.
// Zero fields were not recorded.
type Info struct {
	// CreationTool names the tool that wrote the file ("dotnet-gcdump",
	// "clrdiag"); empty in files from older tools.
	CreationTool  string
	ProcessName   string
	ProcessID     int
	MachineName   string
	Time          time.Time
	CollectionLog string
	// TotalProcessCommit and TotalProcessWorkingSet are in bytes.
	TotalProcessCommit     int64
	TotalProcessWorkingSet int64
	// AverageCountMultiplier and AverageSizeMultiplier are 1 for a full
	// snapshot; PerfView sets them when it kept only a sample of a huge
	// heap. CountMultipliersByType scales the count of each type index.
	AverageCountMultiplier float32
	AverageSizeMultiplier  float32
	CountMultipliersByType []float32
	// SizeOfAllSegments and Segments come from DotNetHeapInfo.
	SizeOfAllSegments int64
	Segments          []Segment
}

// Graph is a heap snapshot as a graph: every object of the GC heap is a
// node with a type, a size in bytes and references to other nodes, and
// pseudo-nodes (types named in brackets, size 0) stand for the roots:
// Root ("[.NET Roots]") refers to "[local vars]", "[other roots]",
// "[static vars]" and so on, which refer to the objects the roots hold.
// This is the model of PerfView's MemoryGraph, which .gcdump files store.
//
// A node referenced but never described (the runtime's walk did not report
// it) has type 0, "UNDEFINED", size 0 and no references.
//
// A Graph is immutable once built and safe for concurrent readers.
type Graph struct {
	// Types are the node types; Types[0] is "UNDEFINED".
	Types []Type
	// Root is the node from which every root is reached.
	Root NodeID
	// Is64Bit is set for a snapshot of a 64-bit process.
	Is64Bit bool
	Info    Info

	typ   []uint32 // per node: index into Types
	size  []uint32 // per node: bytes (a .gcdump stores sizes as int32)
	addr  []uint64 // per node: address, 0 for pseudo-nodes
	off   []uint32 // CSR: references of n are edges[off[n]:off[n+1]]
	edges []NodeID
}

// BytesPerNode and BytesPerEdge are what a Graph keeps in memory per node
// and per reference (type index, size, address and edge offset; target).
const (
	BytesPerNode = 4 + 4 + 8 + 4
	BytesPerEdge = 4
)

// NumNodes returns the number of nodes, pseudo-nodes included.
func (g *Graph) NumNodes() int { return len(g.typ) }

// NumEdges returns the number of references.
func (g *Graph) NumEdges() int { return len(g.edges) }

// TypeOf returns the index in Types of the node's type.
func (g *Graph) TypeOf(n NodeID) int { return int(g.typ[n]) }

// TypeName returns the name of the node's type.
func (g *Graph) TypeName(n NodeID) string { return g.Types[g.typ[n]].Name }

// Size returns the node's size in bytes.
func (g *Graph) Size(n NodeID) uint64 { return uint64(g.size[n]) }

// Address returns the object's address (0 for pseudo-nodes).
func (g *Graph) Address(n NodeID) uint64 { return g.addr[n] }

// Refs returns the nodes that n refers to. The slice aliases the graph:
// do not modify it.
func (g *Graph) Refs(n NodeID) []NodeID { return g.edges[g.off[n]:g.off[n+1]:g.off[n+1]] }

// TotalSize returns the sum of the sizes of all nodes.
func (g *Graph) TotalSize() uint64 {
	var t uint64
	for _, s := range g.size {
		t += uint64(s)
	}
	return t
}

// IsPseudo reports whether the type is a pseudo-node type: a bracketed
// name such as "[.NET Roots]" or "[static var X.f]" (but not the RCW and
// CCW wrappers, which stand for real memory).
func (t Type) IsPseudo() bool {
	n := t.Name
	return len(n) >= 2 && n[0] == '[' && n[len(n)-1] == ']' &&
		!strings.HasPrefix(n, "[RCW ") && !strings.HasPrefix(n, "[CCW ")
}

// IsObject reports whether node n is an object of the heap: defined, not a
// pseudo-node.
func (g *Graph) IsObject(n NodeID) bool {
	t := g.typ[n]
	return t != 0 && !g.Types[t].IsPseudo()
}

// String formats a type as Module!Name (Name alone without a module).
func (t Type) String() string {
	if t.Module == "" {
		return t.Name
	}
	return t.Module + "!" + t.Name
}

// check verifies the invariants the analyses rely on; it is run on every
// graph that is read or built.
func (g *Graph) check() error {
	n := len(g.typ)
	if len(g.size) != n || len(g.addr) != n || len(g.off) != n+1 {
		return fmt.Errorf("gcdump: inconsistent node arrays")
	}
	if n == 0 {
		return fmt.Errorf("gcdump: graph has no nodes")
	}
	if len(g.Types) == 0 {
		return fmt.Errorf("gcdump: graph has no types")
	}
	if int(g.Root) >= n {
		return fmt.Errorf("gcdump: root node %d out of range (%d nodes)", g.Root, n)
	}
	if int(g.off[n]) != len(g.edges) || g.off[0] != 0 {
		return fmt.Errorf("gcdump: inconsistent edge offsets")
	}
	for i := range n {
		if g.off[i] > g.off[i+1] {
			return fmt.Errorf("gcdump: edge offsets of node %d decrease", i)
		}
		if int(g.typ[i]) >= len(g.Types) {
			return fmt.Errorf("gcdump: node %d has type %d of %d", i, g.typ[i], len(g.Types))
		}
	}
	for i, e := range g.edges {
		if int(e) >= n {
			return fmt.Errorf("gcdump: reference %d to node %d of %d", i, e, n)
		}
	}
	return nil
}
