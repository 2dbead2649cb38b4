package gcdump

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Flame is the heap as weighted stacks, for flame-graph viewers: each
// object weighs its size, on the stack of its dominator-tree path from the
// kind of root down to its own type. Runs of the same type (a linked list)
// are collapsed to one frame, and paths deeper than MaxDepth keep their
// top and the object's type around a "[...]" frame.
//
// This is a small weighted-stack model of its own; the exporters write the
// same formats as package profile (pprof, folded, speedscope).
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

func (f *Flame) frameName(i int) string {
	return strings.NewReplacer(";", ",", "\n", " ", "\r", " ").Replace(f.Frames[i].Name)
}

// WriteFolded writes "frame;frame;...;type bytes" lines, sorted, for
// flamegraph.pl, inferno and speedscope.
func (f *Flame) WriteFolded(w io.Writer) error {
	lines := make([]string, 0, len(f.Stacks))
	var sb strings.Builder
	for _, s := range f.Stacks {
		sb.Reset()
		for i, fr := range s.Frames {
			if i > 0 {
				sb.WriteByte(';')
			}
			sb.WriteString(f.frameName(fr))
		}
		sb.WriteByte(' ')
		sb.WriteString(strconv.FormatUint(s.Bytes, 10))
		lines = append(lines, sb.String())
	}
	slices.Sort(lines)
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Pprof converts the flame to a pprof profile with the sample types of a
// Go heap profile, inuse_objects (count) and inuse_space (bytes, the
// default); each frame is a function named by the type, its module as the
// file name.
func (f *Flame) Pprof() (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
		DefaultSampleType: "inuse_space",
	}
	locs := make([]*profile.Location, len(f.Frames))
	for i, t := range f.Frames {
		fn := &profile.Function{ID: uint64(i + 1), Name: t.Name, SystemName: t.Name, Filename: t.Module}
		p.Function = append(p.Function, fn)
		locs[i] = &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, locs[i])
	}
	for _, s := range f.Stacks {
		stack := make([]*profile.Location, len(s.Frames))
		for i, fr := range s.Frames {
			stack[len(s.Frames)-1-i] = locs[fr] // leaf first
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: []int64{s.Objects, int64(s.Bytes)}})
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("gcdump: pprof conversion: %w", err)
	}
	return p, nil
}

// WritePprof writes the gzipped pprof profile.
func (f *Flame) WritePprof(w io.Writer) error {
	p, err := f.Pprof()
	if err != nil {
		return err
	}
	return p.Write(w)
}

// WriteSpeedscope writes the flame as a speedscope file: one "sampled"
// profile whose samples are the stacks and whose weights are bytes.
func (f *Flame) WriteSpeedscope(w io.Writer, name string) error {
	type frame struct {
		Name string `json:"name"`
		File string `json:"file,omitempty"`
	}
	type prof struct {
		Type       string   `json:"type"`
		Name       string   `json:"name"`
		Unit       string   `json:"unit"`
		StartValue uint64   `json:"startValue"`
		EndValue   uint64   `json:"endValue"`
		Samples    [][]int  `json:"samples"`
		Weights    []uint64 `json:"weights"`
	}
	doc := struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []frame `json:"frames"`
		} `json:"shared"`
		Profiles           []prof `json:"profiles"`
		Name               string `json:"name"`
		ActiveProfileIndex int    `json:"activeProfileIndex"`
		Exporter           string `json:"exporter"`
	}{Schema: "https://www.speedscope.app/file-format-schema.json", Name: name, Exporter: "clrdiag gcdump"}
	for _, t := range f.Frames {
		doc.Shared.Frames = append(doc.Shared.Frames, frame{Name: t.Name, File: t.Module})
	}
	p := prof{Type: "sampled", Name: name + " (retained bytes by dominator path)", Unit: "bytes", EndValue: f.Bytes,
		Samples: make([][]int, 0, len(f.Stacks)), Weights: make([]uint64, 0, len(f.Stacks))}
	for _, s := range f.Stacks {
		p.Samples = append(p.Samples, s.Frames)
		p.Weights = append(p.Weights, s.Bytes)
	}
	doc.Profiles = []prof{p}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}
