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

// TypeDiff is the change of one type between two snapshots.
type TypeDiff struct {
	Name        string `json:"name"`
	Module      string `json:"-"`
	CountBefore int64  `json:"countBefore"`
	CountAfter  int64  `json:"countAfter"`
	SizeBefore  uint64 `json:"sizeBefore"`
	SizeAfter   uint64 `json:"sizeAfter"`
	// RetainedBefore and RetainedAfter are the type's retained sizes (see
	// TypeStat): a type that holds a leak grows here even when its own
	// objects do not change.
	RetainedBefore uint64 `json:"retainedBefore"`
	RetainedAfter  uint64 `json:"retainedAfter"`
	CountDelta     int64  `json:"countDelta"`
	SizeDelta      int64  `json:"sizeDelta"`
	RetainedDelta  int64  `json:"retainedDelta"`
}

// Diff is the per-type growth between two snapshots of a process.
type Diff struct {
	Types         []TypeDiff `json:"types"`
	SizeBefore    uint64     `json:"sizeBefore"`
	SizeAfter     uint64     `json:"sizeAfter"`
	ObjectsBefore int64      `json:"objectsBefore"`
	ObjectsAfter  int64      `json:"objectsAfter"`
	// Warnings say why the two snapshots may not compare: different
	// processes, runtimes or pointer sizes, or the second taken first.
	Warnings []string `json:"warnings,omitempty"`
}

// DiffGraphs compares two snapshots type by type, with their retained
// sizes (it computes both dominator trees), and warns when they do not
// look like two snapshots of one process (see SnapshotWarnings). Types
// are matched by name and module file (System.String of
// System.Private.CoreLib matches across runtime versions). The types
// whose count, size or retained size changed are listed, the largest
// growth in bytes first.
func DiffGraphs(before, after *Graph) *Diff {
	rb, _ := BuildReport(before, nil, ReportConfig{})
	ra, _ := BuildReport(after, nil, ReportConfig{})
	d := DiffReports(rb, ra, "")
	d.Warnings = SnapshotWarnings(before, after)
	return d
}

// DiffReports compares two per-type reports of BuildReport (made with
// Top 0: every type). sort is SortSize (the default: change in bytes),
// SortCount or SortRetained (change in retained bytes); ties go to the
// other changes, then the name.
func DiffReports(before, after *Report, sort string) *Diff {
	d := &Diff{SizeBefore: before.TotalSize, SizeAfter: after.TotalSize, ObjectsBefore: before.Objects, ObjectsAfter: after.Objects}
	rows := map[string]*TypeDiff{}
	var keys []string
	row := func(t TypeStat) *TypeDiff {
		name := canonicalTypeName(t.Name)
		k := name + "\x00" + moduleBase(t.Module)
		r := rows[k]
		if r == nil {
			r = &TypeDiff{Name: name, Module: t.Module}
			rows[k] = r
			keys = append(keys, k)
		}
		return r
	}
	for _, t := range before.Types {
		r := row(t)
		r.CountBefore += t.Count
		r.SizeBefore += t.Size
		r.RetainedBefore += t.RetainedSize
	}
	for _, t := range after.Types {
		r := row(t)
		r.CountAfter += t.Count
		r.SizeAfter += t.Size
		r.RetainedAfter += t.RetainedSize
		r.Module = t.Module
	}
	for _, k := range keys {
		r := rows[k]
		r.CountDelta = r.CountAfter - r.CountBefore
		r.SizeDelta = int64(r.SizeAfter) - int64(r.SizeBefore)
		r.RetainedDelta = int64(r.RetainedAfter) - int64(r.RetainedBefore)
		if r.CountDelta != 0 || r.SizeDelta != 0 || r.RetainedDelta != 0 {
			d.Types = append(d.Types, *r)
		}
	}
	slices.SortFunc(d.Types, func(x, y TypeDiff) int {
		var c int
		switch sort {
		case SortCount:
			c = cmp.Compare(y.CountDelta, x.CountDelta)
		case SortRetained:
			c = cmp.Compare(y.RetainedDelta, x.RetainedDelta)
		}
		return cmp.Or(c, cmp.Compare(y.SizeDelta, x.SizeDelta), cmp.Compare(y.CountDelta, x.CountDelta),
			cmp.Compare(y.RetainedDelta, x.RetainedDelta), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Module, y.Module))
	})
	return d
}

// SnapshotWarnings says why two snapshots may not compare as "before" and
// "after" of one process: they record different processes (ids or
// names), different runtime versions (the directory of
// System.Private.CoreLib), different pointer sizes, or the second was
// taken first.
func SnapshotWarnings(before, after *Graph) []string {
	var w []string
	bi, ai := before.Info, after.Info
	switch {
	case bi.ProcessID != 0 && ai.ProcessID != 0 && bi.ProcessID != ai.ProcessID:
		w = append(w, fmt.Sprintf("the snapshots are of different processes (%s before, %s after): the diff compares what each held, not what one process piled up",
			processLabel(bi), processLabel(ai)))
	case bi.ProcessName != "" && ai.ProcessName != "" && !strings.EqualFold(bi.ProcessName, ai.ProcessName):
		w = append(w, fmt.Sprintf("the snapshots are of different programs (%s before, %s after)", processLabel(bi), processLabel(ai)))
	}
	if rb, ra := runtimeVersion(before), runtimeVersion(after); rb != "" && ra != "" && rb != ra {
		w = append(w, fmt.Sprintf("the snapshots are of different runtimes (.NET %s before, %s after): the runtime's own objects differ between versions", rb, ra))
	}
	if before.Is64Bit != after.Is64Bit {
		w = append(w, "one snapshot is of a 64-bit process, the other of a 32-bit one: object sizes differ")
	}
	if !bi.Time.IsZero() && !ai.Time.IsZero() && ai.Time.Before(bi.Time) {
		w = append(w, fmt.Sprintf("the second snapshot was taken first (%s, before %s): growth shows as shrinkage; swap BEFORE and AFTER",
			ai.Time.Format("2006-01-02 15:04:05"), bi.Time.Format("2006-01-02 15:04:05")))
	}
	return w
}

func processLabel(in Info) string {
	switch {
	case in.ProcessID != 0 && in.ProcessName != "":
		return fmt.Sprintf("pid %d %s", in.ProcessID, in.ProcessName)
	case in.ProcessID != 0:
		return fmt.Sprintf("pid %d", in.ProcessID)
	}
	return in.ProcessName
}

// runtimeVersion is the version directory of the runtime's core library
// (.../Microsoft.NETCore.App/8.0.34/System.Private.CoreLib.dll), or "".
func runtimeVersion(g *Graph) string {
	for _, t := range g.Types {
		if moduleBase(t.Module) != "System.Private.CoreLib" {
			continue
		}
		dir := path.Dir(strings.ReplaceAll(t.Module, `\`, "/"))
		if v := path.Base(dir); v != "." && v != "/" && strings.ContainsAny(v, "0123456789") {
			return v
		}
	}
	return ""
}

// WriteText prints the diff, a row per type with its before and after
// values: growth first, shrinkage last, top rows at most (0: all).
func (d *Diff) WriteText(w io.Writer, top int) error {
	fmt.Fprintf(w, "GC heap: %s -> %s bytes (%s), %s -> %s objects (%s)\n",
		group(int64(d.SizeBefore)), group(int64(d.SizeAfter)), signed(int64(d.SizeAfter)-int64(d.SizeBefore)),
		group(d.ObjectsBefore), group(d.ObjectsAfter), signed(d.ObjectsAfter-d.ObjectsBefore))
	for _, warn := range d.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	fmt.Fprintln(w)
	if len(d.Types) == 0 {
		_, err := fmt.Fprintln(w, "No type changed.")
		return err
	}
	rows := d.Types
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Bytes Before\tBytes After\tBytes Delta\tCount Before\tCount After\tCount Delta\tRetained Delta\t\tType\n")
	for _, t := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n", group(int64(t.SizeBefore)), group(int64(t.SizeAfter)), signed(t.SizeDelta),
			group(t.CountBefore), group(t.CountAfter), signed(t.CountDelta), signed(t.RetainedDelta), t.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) < len(d.Types) {
		fmt.Fprintf(w, "(%d more types changed; --top 0 lists them all)\n", len(d.Types)-len(rows))
	}
	return nil
}

func signed(n int64) string {
	if n > 0 {
		return "+" + group(n)
	}
	return group(n)
}
