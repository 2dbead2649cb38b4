package gcdump

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"text/tabwriter"
)

// TypeStat is what a snapshot holds of one type.
type TypeStat struct {
	Name   string `json:"name"`
	Module string `json:"-"`
	// Count is the number of objects and Size their total size in bytes.
	Count int64  `json:"count"`
	Size  uint64 `json:"size"`
	// RetainedSize is the size of the objects of this type and of
	// everything they dominate: what a collection would free if no object
	// of the type were reachable any more, counting only memory that
	// nothing else keeps alive. Objects dominated by another object of
	// the same type are counted once, through the outer one.
	RetainedSize uint64 `json:"retainedSize"`
}

// Report is a per-type summary of a snapshot, as dotnet-gcdump report
// gives, with retained sizes.
type Report struct {
	Types []TypeStat `json:"types"`
	// TotalSize and Objects cover every object (pseudo-nodes excluded).
	TotalSize uint64 `json:"totalSize"`
	Objects   int64  `json:"objects"`
	// Roots counts the references from roots to objects (a local
	// variable, a handle, a static field...); References those between
	// objects.
	Roots      int64 `json:"roots"`
	References int64 `json:"references"`
	// Unreachable counts the objects no root leads to.
	Unreachable int `json:"unreachable,omitempty"`
	// More is how many types Top cut off.
	More int `json:"more,omitempty"`
}

// Sort orders of ReportConfig.
const (
	SortSize     = "size"
	SortCount    = "count"
	SortRetained = "retained"
)

// ReportConfig selects what BuildReport keeps. The zero value lists every
// type by size.
type ReportConfig struct {
	// Sort is SortSize (default), SortCount or SortRetained.
	Sort string
	// Top keeps the first Top types; 0 keeps all.
	Top int
}

// typeKeys maps each type index to a key shared by the types with the same
// name and module (files may repeat them).
func typeKeys(g *Graph) (keys []int32, names []Type) {
	idx := map[Type]int32{}
	keys = make([]int32, len(g.Types))
	for i, t := range g.Types {
		k, ok := idx[t]
		if !ok {
			k = int32(len(names))
			idx[t] = k
			names = append(names, t)
		}
		keys[i] = k
	}
	return keys, names
}

// BuildReport summarises the snapshot per type. d may be nil; it is then
// computed.
func BuildReport(g *Graph, d *Dominators, cfg ReportConfig) (*Report, error) {
	switch cfg.Sort {
	case "", SortSize, SortCount, SortRetained:
	default:
		return nil, fmt.Errorf("gcdump: unknown sort %q (size, count or retained)", cfg.Sort)
	}
	if d == nil {
		d = ComputeDominators(g)
	}
	keys, types := typeKeys(g)
	pseudo := make([]bool, len(g.Types))
	for i, t := range g.Types {
		pseudo[i] = i == 0 || t.IsPseudo()
	}
	stats := make([]TypeStat, len(types))
	r := &Report{}
	for v := range g.NumNodes() {
		t := g.typ[v]
		if pseudo[t] {
			for _, c := range g.Refs(NodeID(v)) {
				if !pseudo[g.typ[c]] {
					r.Roots++
				}
			}
			continue
		}
		r.References += int64(len(g.Refs(NodeID(v))))
		s := &stats[keys[t]]
		s.Count++
		s.Size += uint64(g.size[v])
		r.Objects++
		r.TotalSize += uint64(g.size[v])
	}
	// Retained size per type: walk the dominator tree keeping, per type,
	// how many objects of that type are on the current path; an object
	// with none of its type above it adds its retained size. The walk
	// follows the tree's child, sibling and dominator links: no stack,
	// whatever the depth.
	onPath := make([]int32, len(types))
	step := func(w uint32, by int32) {
		if t := g.typ[d.order[w]]; !pseudo[t] {
			k := keys[t]
			if by > 0 && onPath[k] == 0 {
				stats[k].RetainedSize += d.retained[w]
			}
			onPath[k] += by
		}
	}
	for w := uint32(d.links[0] >> 32); w != 0; {
		step(w, 1)
		if c := uint32(d.links[w] >> 32); c != 0 {
			w = c
			continue
		}
		for w != 0 {
			step(w, -1)
			if s := uint32(d.links[w]); s != 0 {
				w = s
				break
			}
			w = d.idom[w]
		}
	}
	for i, t := range types {
		if stats[i].Count > 0 {
			stats[i].Name, stats[i].Module = t.Name, t.Module
			r.Types = append(r.Types, stats[i])
		}
	}
	for _, v := range d.Unreached() {
		if g.IsObject(v) {
			r.Unreachable++
		}
	}
	slices.SortFunc(r.Types, func(a, b TypeStat) int {
		var c int
		switch cfg.Sort {
		case SortCount:
			c = cmp.Compare(b.Count, a.Count)
		case SortRetained:
			c = cmp.Compare(b.RetainedSize, a.RetainedSize)
		}
		return cmp.Or(c, cmp.Compare(b.Size, a.Size), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	if cfg.Top > 0 && len(r.Types) > cfg.Top {
		r.More = len(r.Types) - cfg.Top
		r.Types = r.Types[:cfg.Top]
	}
	return r, nil
}

// WriteText prints the report as dotnet-gcdump report does, with a
// retained-size column.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%15s  GC Heap bytes\n", group(int64(r.TotalSize)))
	fmt.Fprintf(w, "%15s  GC Heap objects\n", group(r.Objects))
	fmt.Fprintf(w, "%15s  Total references\n", group(r.References))
	fmt.Fprintf(w, "%15s  Root references\n", group(r.Roots))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Object Bytes\tCount\tRetained Bytes\t\tType\n")
	for _, t := range r.Types {
		name := t.Name
		if t.Module != "" {
			name += "  [" + path.Base(strings.ReplaceAll(t.Module, `\`, "/")) + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t%s\n", group(int64(t.Size)), group(t.Count), group(int64(t.RetainedSize)), name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.More > 0 {
		fmt.Fprintf(w, "(%d more types; --top 0 lists them all)\n", r.More)
	}
	if r.Unreachable > 0 {
		fmt.Fprintf(w, "%s objects are not reachable from any root (reported by the heap walk, garbage by the next collection)\n", group(int64(r.Unreachable)))
	}
	return nil
}

// group formats n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
