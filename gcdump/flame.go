package gcdump

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/clrdiag/clrdiag/weighted"
	pprof "github.com/google/pprof/profile"
)

// Flame is the heap as weighted stacks, for flame-graph viewers: each
// object weighs its size, on the stack of its dominator-tree path from the
// kind of root down to its own type. Runs of the same type (a linked list)
// are collapsed to one frame, and paths deeper than MaxDepth keep their
// top and the object's type around a "[...]" frame.
//
// An object that several kinds of root hold (its immediate dominator is a
// root pseudo-node above them, such as [.NET Roots]) has no single root in
// the dominator tree. It is put under the kind of root that PerfView would
// choose: the first, in the order static fields, local variables, COM
// wrappers, GC handles (see rootRank), from which it is reachable at all;
// an "[also held by other roots]" frame between that root and the object
// says that a choice was made. On .NET Core 3.1 this is what names the
// static field of an object that the pinned array of statics also holds.
//
// Weighted turns it into package profile's weighted-stack model, which the
// export formats of package profile write.
type Flame struct {
	// Frames are type names (pseudo-nodes give the root kinds).
	Frames []Type
	// Stacks are the distinct stacks with their weight.
	Stacks []FlameStack
	// Bytes and Objects total the weights.
	Bytes   uint64
	Objects int64
	// ChosenObjects and ChosenBytes weigh what is under an "[also held
	// by other roots]" frame: objects held by several kinds of root,
	// shown under the one preferred, and what they dominate.
	ChosenObjects int64
	ChosenBytes   uint64
}

// FlameStack is one stack of a Flame: Frames indexes, root first.
type FlameStack struct {
	Frames  []int
	Objects int64
	Bytes   uint64
}

// FlameConfig shapes BuildFlame. The zero value keeps 64 frames.
type FlameConfig struct {
	MaxDepth int
}

// Frame names the flame graph adds.
const (
	frameElided      = "[...]"
	frameUnreachable = "[not reachable from roots]"
	frameChosen      = "[also held by other roots]"
)

// BuildFlame builds the flame stacks of the snapshot. d may be nil.
func BuildFlame(g *Graph, d *Dominators, cfg FlameConfig) *Flame {
	maxDepth := cfg.MaxDepth
	if maxDepth <= 0 {
		maxDepth = 64
	}
	maxDepth = max(maxDepth, 3)
	if d == nil {
		d = ComputeDominators(g)
	}
	keys, types := typeKeys(g)
	f := &Flame{Frames: types}
	elided := len(f.Frames)
	f.Frames = append(f.Frames, Type{Name: frameElided}, Type{Name: frameUnreachable}, Type{Name: frameChosen})
	unreachable, chosen := elided+1, elided+2
	owner := rootOwners(g)

	// A trie of stacks: node 0 is the empty stack.
	type tnode struct {
		parent uint32
		frame  int32
		depth  int32
	}
	trie := []tnode{{}}
	kids := map[uint64]uint32{}
	child := func(p uint32, frame int) uint32 {
		k := uint64(p)<<32 | uint64(frame)
		if c, ok := kids[k]; ok {
			return c
		}
		trie = append(trie, tnode{parent: p, frame: int32(frame), depth: trie[p].depth + 1})
		kids[k] = uint32(len(trie) - 1)
		return uint32(len(trie) - 1)
	}
	var objects []int64
	var bytes []uint64
	weigh := func(t uint32, v NodeID) {
		for int(t) >= len(bytes) {
			bytes = append(bytes, 0)
			objects = append(objects, 0)
		}
		bytes[t] += uint64(g.size[v])
		objects[t]++
	}
	under := make([]uint32, len(d.order))  // by DFS number: trie node below which the vertex's dominees go
	inChosen := make([]bool, len(d.order)) // by DFS number: under a choice of root
	done := make([]bool, len(d.order))
	place := func(w uint32) {
		v := d.order[w]
		var p uint32
		switch id := d.idom[w]; {
		case v == g.Root:
			under[w] = 0
			return
		case id == 0:
			p = child(0, unreachable)
		case g.isPseudo(d.order[id]) && !g.isPseudo(v) && owner[v] != d.order[id] && owner[v] != NoNode:
			// Held by several kinds of root: under the preferred one,
			// with a frame saying so.
			p = child(under[d.num[owner[v]]], chosen)
			inChosen[w] = true
		default:
			p = under[id]
			inChosen[w] = inChosen[id]
		}
		frame := int(keys[g.typ[v]])
		var self uint32
		switch {
		case p != 0 && trie[p].frame == int32(frame):
			self, under[w] = p, p
		case trie[p].depth < int32(maxDepth-1):
			self = child(p, frame)
			under[w] = self
		default:
			e := p
			if trie[p].frame != int32(elided) {
				e = child(p, elided)
			}
			self, under[w] = child(e, frame), e
		}
		if g.IsObject(v) {
			weigh(self, v)
			f.Bytes += uint64(g.size[v])
			f.Objects++
			if inChosen[w] {
				f.ChosenBytes += uint64(g.size[v])
				f.ChosenObjects++
			}
		}
	}
	// The root pseudo-nodes first (an object may be placed under one the
	// search found after it), then everything in DFS order, in which a
	// vertex comes after its immediate dominator.
	for w := uint32(1); w < uint32(len(d.order)); w++ {
		if id := d.idom[w]; g.isPseudo(d.order[w]) && (id == 0 || done[id]) {
			place(w)
			done[w] = true
		}
	}
	for w := uint32(1); w < uint32(len(d.order)); w++ {
		if !done[w] {
			place(w)
		}
	}
	for t := range bytes {
		if objects[t] == 0 {
			continue
		}
		var frames []int
		for x := uint32(t); x != 0; x = trie[x].parent {
			frames = append(frames, int(trie[x].frame))
		}
		slices.Reverse(frames)
		f.Stacks = append(f.Stacks, FlameStack{Frames: frames, Objects: objects[t], Bytes: bytes[t]})
	}
	return f
}

// rootOwners returns, per node, the kind of root (a pseudo-node that holds
// objects) preferred among those that reach it, NoNode for nodes no kind
// of root reaches (and for the pseudo-nodes): one breadth-first search per
// kind, in the order of rootKinds, each claiming what the kinds before it
// did not reach. O(nodes + references).
func rootOwners(g *Graph) []NodeID {
	owner := make([]NodeID, g.NumNodes())
	for i := range owner {
		owner[i] = NoNode
	}
	kinds, _ := rootKinds(g)
	var queue []NodeID
	for _, k := range kinds {
		queue = queue[:0]
		for _, c := range g.Refs(k.node) {
			if owner[c] == NoNode && !g.isPseudo(c) {
				owner[c] = k.node
				queue = append(queue, c)
			}
		}
		for i := 0; i < len(queue); i++ {
			for _, c := range g.Refs(queue[i]) {
				if owner[c] == NoNode && !g.isPseudo(c) {
					owner[c] = k.node
					queue = append(queue, c)
				}
			}
		}
	}
	return owner
}

// Weighted converts the flame to package profile's weighted-stack model,
// which its export formats write (weighted.LookupFormat: pprof, folded,
// speedscope). The sample types are those of a Go heap profile,
// inuse_objects (count) and inuse_space (bytes, the default); frames are
// named by type, with the module's base name (App!App.Item, as the CPU
// profiles name methods); one group holds every stack.
func (f *Flame) Weighted(name string) *weighted.Profile {
	w := &weighted.Profile{
		Name:       name,
		Types:      []weighted.ValueType{{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		Default:    1,
		PeriodType: weighted.ValueType{Type: "space", Unit: "bytes"},
		Period:     1,
		Frames:     make([]weighted.Frame, len(f.Frames)),
		Stacks:     make([]weighted.Stack, len(f.Stacks)),
		Comments: []string{"heap snapshot: each object weighs its size, on its dominator-tree path from the kind of root that holds it",
			fmt.Sprintf("%d objects, %d bytes", f.Objects, f.Bytes)},
	}
	if f.ChosenObjects > 0 {
		w.Comments = append(w.Comments, f.ChosenNote())
	}
	for i, t := range f.Frames {
		w.Frames[i] = weighted.Frame{Name: t.Name, Module: moduleBase(t.Module), Resolved: true}
	}
	g := weighted.Group{Name: "heap", Samples: make([]weighted.Sample, len(f.Stacks)), Work: int64(f.Bytes)}
	for i, s := range f.Stacks {
		frames := make([]int, len(s.Frames))
		for k, fr := range s.Frames {
			frames[len(frames)-1-k] = fr // leaf first
		}
		w.Stacks[i] = weighted.Stack{Frames: frames}
		g.Samples[i] = weighted.Sample{Stack: i, Values: []int64{s.Objects, int64(s.Bytes)}}
	}
	w.Groups = []weighted.Group{g}
	return w
}

// ChosenNote says in a sentence what is under "[also held by other
// roots]" frames, or "" when nothing is.
func (f *Flame) ChosenNote() string {
	if f.ChosenObjects == 0 {
		return ""
	}
	return fmt.Sprintf("%s objects (%s bytes) are held by several kinds of roots: each is shown under the first of "+
		"static fields, local variables, COM wrappers and GC handles that reaches it (PerfView's order), below an %q frame",
		group(f.ChosenObjects), group(int64(f.ChosenBytes)), frameChosen)
}

// Pprof converts the flame to a pprof profile, through Weighted: sample
// types inuse_objects and inuse_space (the default).
func (f *Flame) Pprof() (*pprof.Profile, error) { return f.Weighted("heap").Pprof() }

// moduleBase is a module's file name without directory and extension, as
// the CPU profiles name modules.
func moduleBase(m string) string {
	if m == "" {
		return ""
	}
	m = path.Base(strings.ReplaceAll(m, `\`, "/"))
	return strings.TrimSuffix(strings.TrimSuffix(m, ".dll"), ".exe")
}
