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
	frameShared      = "[held by several roots]"
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
	f.Frames = append(f.Frames, Type{Name: frameElided}, Type{Name: frameUnreachable}, Type{Name: frameShared})
	unreachable, shared := elided+1, elided+2

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
	under := make([]uint32, g.NumNodes()) // trie node below which v's dominees go
	for _, v := range d.order {
		var p uint32
		switch id := d.idom[v]; {
		case v == g.Root:
			under[v] = 0
			continue
		case id == NoNode:
			p = child(0, unreachable)
		case id == g.Root && g.IsObject(v):
			// Dominated by no single root: several kinds of roots hold it.
			p = child(0, shared)
		default:
			p = under[id]
		}
		frame := int(keys[g.typ[v]])
		var self uint32
		switch {
		case p != 0 && trie[p].frame == int32(frame):
			self, under[v] = p, p
		case trie[p].depth < int32(maxDepth-1):
			self = child(p, frame)
			under[v] = self
		default:
			e := p
			if trie[p].frame != int32(elided) {
				e = child(p, elided)
			}
			self, under[v] = child(e, frame), e
		}
		if g.IsObject(v) {
			weigh(self, v)
			f.Bytes += uint64(g.size[v])
			f.Objects++
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
