package profile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/nettrace"
)

// ErrNoTimeline is returned by WriteChromium for a profile built without
// Config.Timeline.
var ErrNoTimeline = errors.New("profile has no timeline (build it with Config.Timeline)")

// noFrames names the pseudo-frame that stands for an empty stack (a sample
// of a thread with no managed frames) in the exporters.
const noFrames = "[no managed frames]"

// unknownModule is the Chromium category of a frame without a module.
const unknownModule = "unknown"

// title is what a profile is called in the viewers: its Name, or the
// process id.
func (w *Weighted) title() string {
	switch {
	case w.Name != "":
		return w.Name
	case w.ProcessID != 0:
		return "process " + strconv.Itoa(w.ProcessID)
	}
	return "profile"
}

// WriteFolded writes the profile as folded stacks: one line per distinct
// stack over all groups, "root;caller;...;leaf value", frames as
// Module!Namespace.Type.Method, the value of the default sample type (for a
// CPU profile, nanoseconds). Lines are sorted; stacks whose value is 0 are
// left out. Flame graph tools (flamegraph.pl, inferno, speedscope) read this
// format.
func WriteFolded(w io.Writer, wp *Weighted) error {
	return writeFolded(w, wp, -1)
}

// writeFolded is WriteFolded with at most splits splits on one path of
// foldedSort (-1: its default; the tests try the ranges it then sorts by
// whole comparisons).
func writeFolded(w io.Writer, wp *Weighted, splits int) error {
	// The lines are sorted in the order of their text without writing
	// them out (foldedSort): as their frames from the root, compared by
	// name, and lines that come out the same (frames whose names differ
	// only by the characters replaced) are merged. Each used frame's name
	// is written once; the lines are then written straight into the
	// output.
	merged := wp.merged()
	// The empty stack's name, noFrames, is frame len(wp.Frames).
	empty := len(wp.Frames)
	if empty >= math.MaxInt32/2 {
		return fmt.Errorf("profile: folded: %d frames, more than it can sort", empty)
	}
	// The lines are counted first, then each one's stack index and tokens
	// are stored (see foldedSort) and each used frame's name length noted
	// (a span {0, -1-length} until written), to size the names' buffer
	// (growing it would allocate about twice its size) and the output.
	n, nTok, maxTok := 0, 0, 1
	var vMin, vMax int64
	for st, v := range merged {
		if v != 0 {
			n++
			vMin, vMax = min(vMin, v), max(vMax, v)
			l := max(len(wp.Stacks[st].Frames), 1)
			nTok += 1 + l
			maxTok = max(maxTok, l)
		}
	}
	if nTok > math.MaxInt32 || len(merged) > math.MaxInt32 {
		return fmt.Errorf("profile: folded: %d frames in stacks, more than it can sort", nTok)
	}
	names := foldedNames{frames: wp.Frames, span: make([][2]int32, empty+1)}
	fs := foldedSort{names: &names, tok: make([]int32, nTok), lines: make([]int32, 0, n), prefix: make([]int32, n)}
	tok, span := fs.tok, names.span
	size, maxLine, nameSize, k := 0, 0, 0, 0
	for st, v := range merged {
		if v == 0 {
			continue
		}
		tok[k] = int32(st)
		k++
		fs.lines = append(fs.lines, int32(k))
		frames := wp.Stacks[st].Frames
		if len(frames) == 0 {
			frames = []int{empty}
		}
		lineStart := size
		for i := len(frames) - 1; i >= 0; i-- {
			f := frames[i]
			tok[k] = int32(f)<<1 | 1
			k++
			sp := span[f][1]
			if sp == 0 {
				l := len(noFrames)
				if f < empty {
					fr := &wp.Frames[f]
					l = len(fr.Name)
					if fr.Module != "" {
						l += len(fr.Module) + 1
					}
				}
				sp = int32(-1 - l)
				span[f][1] = sp
				nameSize += l + 1
			}
			size += int(-sp) // the name and ';' or ' '
		}
		tok[k-1] &^= 1 // the leaf
		maxLine = max(maxLine, size-lineStart)
	}
	names.enc = make([]byte, 0, nameSize)
	for f, sp := range span {
		if sp[1] < 0 {
			names.encode(f)
		}
	}
	if splits < 0 {
		splits = 2*bits.Len(uint(n)) + 8
	}
	fs.sort(0, n, 0, splits)
	// Each line ends with a space, its value and a newline: at most the
	// widest of the values' texts (merged lines' sums may grow it).
	var digits [24]byte
	size += n * (1 + max(len(appendInt(digits[:0], vMin)), len(appendInt(digits[:0], vMax))))
	// The output goes to w in chunks of foldedChunk bytes, from a buffer
	// that holds a chunk and a longest line (its value at most 20 digits
	// and a sign, and the newline), so that it never grows.
	out := make([]byte, 0, min(size, foldedChunk+maxLine+22))
	enc := names.enc
	// A line begins with the tokens it shares with the line before (as
	// sorted, most of them): they are copied from that line's text when it
	// is still in out, from prev, ends[k] the length of its first k+1
	// tokens.
	ends := make([]int, maxTok)
	prev := -1
	for i := 0; i < n; {
		line, shared := int(fs.lines[i]), int(fs.prefix[i])
		v := merged[tok[line-1]]
		for i++; i < n && fs.prefix[i] < 0; i++ {
			v += merged[tok[fs.lines[i]-1]]
		}
		start := len(out)
		if prev < 0 {
			shared = 0
		}
		if shared > 0 {
			out = append(out, out[prev:prev+ends[shared-1]]...)
		}
		// Every name is followed by ';' in enc: the leaf's becomes the
		// space before the value.
		for k := shared; ; k++ {
			t := tok[line+k]
			sp := span[t>>1]
			out = append(out, enc[sp[0]:sp[1]]...)
			ends[k] = len(out) - start
			if t&1 == 0 {
				break
			}
		}
		prev = start
		out[len(out)-1] = ' '
		out = append(appendInt(out, v), '\n')
		if len(out) >= foldedChunk {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out, prev = out[:0], -1
		}
	}
	if len(out) == 0 {
		return nil
	}
	_, err := w.Write(out)
	return err
}

// foldedChunk is the size at which WriteFolded hands its output to the
// writer: a quarter of the other exporters' flushAt, as the conversion's
// allocation drives the collector's work, and a chunk of folded text holds
// several hundred lines (a writer of the CLI buffers it anyway).
const foldedChunk = 16 << 10

// foldedNames writes frames as folded stacks name them, Module!Name with
// the characters that would break a line (';', '\n', '\r') replaced by ','
// and spaces, each frame once, followed by ';'; frame len(frames) is the
// empty stack's noFrames.
type foldedNames struct {
	frames []Frame
	enc    []byte
	span   [][2]int32 // enc[lo:hi] of each frame, name and ';'; hi 0 or below until written
}

// encode writes a frame's name and ';'.
func (n *foldedNames) encode(frame int) {
	lo := len(n.enc)
	if frame == len(n.frames) {
		n.enc = append(n.enc, noFrames...)
	} else {
		f := &n.frames[frame]
		if f.Module != "" {
			n.enc = append(append(n.enc, f.Module...), '!')
		}
		n.enc = append(n.enc, f.Name...)
		// Most names hold none of the three: IndexByte looks for each
		// several bytes at a time.
		name := n.enc[lo:]
		if bytes.IndexByte(name, ';') >= 0 || bytes.IndexByte(name, '\n') >= 0 || bytes.IndexByte(name, '\r') >= 0 {
			for i, c := range name {
				switch c {
				case ';':
					name[i] = ','
				case '\n', '\r':
					name[i] = ' '
				}
			}
		}
	}
	n.enc = append(n.enc, ';')
	n.span[frame] = [2]int32{int32(lo), int32(len(n.enc))}
}

// name is a written frame's name.
func (n *foldedNames) name(frame int32) []byte {
	sp := n.span[frame]
	return n.enc[sp[0] : sp[1]-1]
}

// foldedSort sorts the lines of WriteFolded in the order of their text,
// "root;...;leaf", without writing it: a line is the sequence of its
// frames' names from the root (its tokens), each followed by ';' or, for
// the leaf, by the line's end, which sorts below every byte. No name holds
// a ';', so no such token begins another, and two lines compare as their
// first differing tokens do (compareFoldedToken). Stacks share most of
// their frames from the root, so the lines are sorted a token at a time
// (multikey quicksort: Bentley and Sedgewick, "Fast algorithms for sorting
// and searching strings", 1997): a range is split by its lines' token at
// one depth into those before, equal to and after a pivot's, and only the
// equal ones go on to the next token, so a common root is looked at once
// per split rather than once per comparison.
type foldedSort struct {
	names *foldedNames
	// tok holds each line's stack index and then its tokens, frame<<1
	// |1 where more follow; lines are the indexes of lines' first tokens.
	tok   []int32
	lines []int32
	// prefix[i] is, once sorted, how many tokens line i has in common with
	// line i-1 (0 for the first), or -1 if its text is line i-1's.
	prefix []int32
}

// compareToken compares two tokens as their text does.
func (fs *foldedSort) compareToken(a, b int32) int {
	switch {
	case a == b:
		return 0
	case a>>1 == b>>1:
		return int(a&1) - int(b&1) // the line's end before ';'
	}
	return compareFoldedToken(fs.names.name(a>>1), a&1 != 0, fs.names.name(b>>1), b&1 != 0)
}

// sort sorts lines[lo:hi], whose lines have the same d tokens first and at
// least one more. Past budget splits on one path (a pivot that split
// badly again and again), a range is sorted by whole comparisons.
func (fs *foldedSort) sort(lo, hi, d, budget int) {
	tok := fs.tok
	for hi-lo > 1 {
		s := fs.lines[lo:hi]
		if len(s) == 2 {
			c, k := fs.compare(s[0]+int32(d), s[1]+int32(d))
			if c > 0 {
				s[0], s[1] = s[1], s[0]
			}
			fs.prefix[lo+1] = fs.common(c, d+k)
			return
		}
		if budget == 0 {
			fs.sortFrom(lo, hi, d)
			return
		}
		budget--
		pivot := tok[int(s[len(s)/2])+d]
		// s[:lt] before the pivot's token, s[lt:i] equal, s[gt:] after.
		// Lines from a common root often all have the pivot's token.
		lt, i, gt := 0, 0, len(s)
		for i < gt && tok[int(s[i])+d] == pivot {
			i++
		}
		// Lines of a caller often have the same next token: the last
		// comparison is kept.
		last, lastC := pivot, 0
		for i < gt {
			t := tok[int(s[i])+d]
			if t != last {
				last, lastC = t, fs.compareToken(t, pivot)
			}
			c := lastC
			switch {
			case c < 0:
				s[lt], s[i] = s[i], s[lt]
				lt, i = lt+1, i+1
			case c > 0:
				gt--
				s[gt], s[i] = s[i], s[gt]
			default:
				i++
			}
		}
		// The blocks' first lines differ from the lines before at d.
		if lt > 0 && lt < len(s) {
			fs.prefix[lo+lt] = int32(d)
		}
		if gt > 0 && gt < len(s) {
			fs.prefix[lo+gt] = int32(d)
		}
		fs.sort(lo, lo+lt, d, budget)
		fs.sort(lo+gt, hi, d, budget)
		if pivot&1 == 0 {
			// The equal lines end here: their texts are the same.
			for k := lo + lt + 1; k < lo+gt; k++ {
				fs.prefix[k] = -1
			}
			return
		}
		lo, hi, d = lo+lt, lo+gt, d+1
	}
}

// sortFrom sorts lines[lo:hi], whose lines have the same d tokens first,
// by comparing them whole from depth d, and marks equal neighbours.
func (fs *foldedSort) sortFrom(lo, hi, d int) {
	s := fs.lines[lo:hi]
	slices.SortFunc(s, func(a, b int32) int {
		c, _ := fs.compare(a+int32(d), b+int32(d))
		return c
	})
	for k := 1; k < len(s); k++ {
		c, n := fs.compare(s[k-1]+int32(d), s[k]+int32(d))
		fs.prefix[lo+k] = fs.common(c, d+n)
	}
}

// common is prefix's value for a line that compares to the line before as
// c after n tokens in common.
func (fs *foldedSort) common(c, n int) int32 {
	if c == 0 {
		return -1
	}
	return int32(n)
}

// compare compares the lines whose tokens from a and from b are left, and
// returns how many of them are the same before the one that decides.
func (fs *foldedSort) compare(a, b int32) (c, n int) {
	tok := fs.tok
	for {
		ta, tb := tok[int(a)+n], tok[int(b)+n]
		if ta != tb {
			if c := fs.compareToken(ta, tb); c != 0 {
				return c, n
			}
		}
		if ta&1 == 0 {
			return 0, n // both end here
		}
		n++
	}
}

// compareFoldedToken compares two names of lines as their text does: each
// followed by ';' if more frames follow in its line (more), or by the
// line's end. Where one name begins the other, what follows the shorter
// decides against the longer's next byte (never ';'): the line's end is
// below it, ';' is above or below ("a" then ";x" sorts after "a.b").
func compareFoldedToken(a []byte, moreA bool, b []byte, moreB bool) int {
	m := min(len(a), len(b))
	if c := bytes.Compare(a[:m], b[:m]); c != 0 {
		return c
	}
	switch {
	case len(a) == len(b):
		switch {
		case moreA == moreB:
			return 0
		case moreA:
			return 1
		}
		return -1
	case len(a) < len(b):
		if !moreA {
			return -1
		}
		return cmp.Compare(';', b[m])
	}
	if !moreB {
		return 1
	}
	return cmp.Compare(a[m], ';')
}

// WritePprof writes the profile as a gzipped pprof protocol buffer, the
// profile Weighted.Pprof builds, encoded directly (see pprofenc.go): one
// stored block up to 64 KB, compressed without state beyond (writeGzip).
func WritePprof(w io.Writer, wp *Weighted) error {
	raw, err := wp.appendPprof(make([]byte, gzipHeadRoom))
	if err != nil {
		return err
	}
	return writeGzipAfter(w, raw)
}

// pprofDefault is the sample type pprof shows first: PprofDefault when it
// names one of Types, else Types[Default] ("" without one).
func (w *Weighted) pprofDefault() string {
	for _, t := range w.Types {
		if w.PprofDefault != "" && t.Type == w.PprofDefault {
			return t.Type
		}
	}
	if w.Default >= 0 && w.Default < len(w.Types) {
		return w.Types[w.Default].Type
	}
	return ""
}

// Pprof converts the profile to a github.com/google/pprof/profile value:
// one sample type per Types (pprofDefault first in pprof's views), one
// sample per group and distinct stack with the numeric label "thread", one
// function and location per frame (the module as file name, the signature
// in the system name), and one mapping named after the profile with
// HasFunctions set, so pprof neither looks for a binary nor complains that
// it has none. WritePprof writes this profile, encoded directly without
// building it (pprofenc.go); the tests hold the two to the same content.
func (w *Weighted) Pprof() (*profile.Profile, error) {
	pp := &profile.Profile{
		PeriodType:    &profile.ValueType{Type: w.PeriodType.Type, Unit: w.PeriodType.Unit},
		Period:        w.Period,
		TimeNanos:     w.Start.UnixNano(),
		DurationNanos: int64(w.Duration),
		Comments:      w.Comments,
	}
	if w.Start.IsZero() {
		pp.TimeNanos = 0
	}
	for _, t := range w.Types {
		pp.SampleType = append(pp.SampleType, &profile.ValueType{Type: t.Type, Unit: t.Unit})
	}
	pp.DefaultSampleType = w.pprofDefault()
	m := &profile.Mapping{ID: 1, File: w.title(), HasFunctions: true}
	pp.Mapping = []*profile.Mapping{m}
	// The functions, locations, lines and samples are allocated in one
	// array each (the empty stack's pseudo-frame included), and the
	// samples of a group share their "thread" label: the encoder only
	// reads them.
	nFrames := len(w.Frames)
	fns := make([]profile.Function, nFrames+1)
	locArr := make([]profile.Location, nFrames+1)
	lines := make([]profile.Line, nFrames+1)
	locs := make([]*profile.Location, nFrames)
	pp.Function = make([]*profile.Function, 0, nFrames+1)
	pp.Location = make([]*profile.Location, 0, nFrames+1)
	for i, f := range w.Frames {
		fn := &fns[i]
		*fn = profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: systemName(f), Filename: f.Module}
		pp.Function = append(pp.Function, fn)
		lines[i] = profile.Line{Function: fn}
		locArr[i] = profile.Location{ID: uint64(i + 1), Mapping: m, Address: f.Address, Line: lines[i : i+1 : i+1]}
		locs[i] = &locArr[i]
		pp.Location = append(pp.Location, locs[i])
		m.Limit = max(m.Limit, f.Address+1)
	}
	// Indices out of range are errors (those of WritePprof), not panics.
	n, nLocs := 0, 0
	for _, g := range w.Groups {
		n += len(g.Samples)
		for _, s := range g.Samples {
			if s.Stack < 0 || s.Stack >= len(w.Stacks) {
				return nil, fmt.Errorf("profile: pprof conversion: sample of thread %d has stack %d of %d", g.ThreadID, s.Stack, len(w.Stacks))
			}
			for _, f := range w.Stacks[s.Stack].Frames {
				if f < 0 || f >= nFrames {
					return nil, fmt.Errorf("profile: pprof conversion: stack %d has frame %d of %d", s.Stack, f, nFrames)
				}
			}
			nLocs += max(len(w.Stacks[s.Stack].Frames), 1)
		}
	}
	samples := make([]profile.Sample, n)
	stacks := make([]*profile.Location, 0, nLocs)
	pp.Sample = make([]*profile.Sample, 0, n)
	var empty *profile.Location
	for _, g := range w.Groups {
		var label map[string][]int64
		if g.ThreadID != 0 {
			label = map[string][]int64{"thread": {int64(g.ThreadID)}}
		}
		for _, s := range g.Samples {
			frames := w.Stacks[s.Stack].Frames
			lo := len(stacks)
			for _, f := range frames {
				stacks = append(stacks, locs[f])
			}
			if len(frames) == 0 {
				if empty == nil {
					id := uint64(len(pp.Function) + 1)
					fn := &fns[nFrames]
					*fn = profile.Function{ID: id, Name: noFrames, SystemName: noFrames}
					pp.Function = append(pp.Function, fn)
					lines[nFrames] = profile.Line{Function: fn}
					empty = &locArr[nFrames]
					*empty = profile.Location{ID: id, Mapping: m, Line: lines[nFrames:]}
					pp.Location = append(pp.Location, empty)
				}
				stacks = append(stacks, empty)
			}
			ps := &samples[len(pp.Sample)]
			*ps = profile.Sample{Location: stacks[lo:len(stacks):len(stacks)], Value: s.Values, NumLabel: label}
			pp.Sample = append(pp.Sample, ps)
		}
	}
	if err := pp.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: pprof conversion: %w", err)
	}
	return pp, nil
}

// systemName is a frame's name with its signature, as a declaration: the
// runtime writes signatures without the method name ("instance void
// (int32)"), so the name goes where the runtime left two spaces:
// "instance void App.Type.Method(int32)". Other signatures follow the name
// after a space.
func systemName(f Frame) string {
	if f.Signature == "" {
		return f.Name
	}
	if i := strings.Index(f.Signature, "  ("); i >= 0 {
		return f.Signature[:i+1] + f.Name + f.Signature[i+2:]
	}
	return f.Name + " " + f.Signature
}

// writeSystemName writes systemName(f) of a frame with a signature.
func writeSystemName(b *strings.Builder, f *Frame) {
	if i := strings.Index(f.Signature, "  ("); i >= 0 {
		b.WriteString(f.Signature[:i+1])
		b.WriteString(f.Name)
		b.WriteString(f.Signature[i+2:])
		return
	}
	b.WriteString(f.Name)
	b.WriteByte(' ')
	b.WriteString(f.Signature)
}

// SpeedscopeSchema is the $schema value of speedscope files.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// flushAt is the size at which the exporters hand their buffer to the
// writer.
const flushAt = 64 << 10

// exportBuf returns the exporters' buffer for an estimated output of
// size bytes: flushAt and some, or less for an output too small to fill it
// (a small profile does not pay for clearing a large buffer, a large one
// does not grow it piecemeal).
func exportBuf(size int) []byte {
	return make([]byte, 0, min(size, flushAt+4096))
}

// flushFull hands b to w once it holds flushAt bytes, and returns it
// emptied.
func flushFull(w io.Writer, b []byte) ([]byte, error) {
	if len(b) < flushAt {
		return b, nil
	}
	_, err := w.Write(b)
	return b[:0], err
}

// speedscopeUnit maps a ValueType unit to one of speedscope's.
func speedscopeUnit(unit string) string {
	switch unit {
	case "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes":
		return unit
	}
	return "none"
}

// WriteSpeedscope writes the profile in speedscope's JSON format
// (https://www.speedscope.app/file-format-schema.json), weighed by the
// default sample type, stacks root first: first an "All threads" profile
// merging every group by stack, then one "sampled" profile per group with
// weight (for a CPU profile, per thread). With Runs (complete ones: not
// RunsPartial) a group's samples are in time order (speedscope's Time Order
// view is then a timeline); without them each distinct stack appears once. activeProfileIndex points at the
// busiest group, so speedscope opens on the thread that did the most work.
func WriteSpeedscope(w io.Writer, wp *Weighted) error {
	unit := "none"
	if wp.Default >= 0 && wp.Default < len(wp.Types) {
		unit = speedscopeUnit(wp.Types[wp.Default].Unit)
	}
	merged := wp.merged()
	// The groups with weight get a profile, after "All threads".
	var shown []int
	active := 0
	size := 512
	for i, g := range wp.Groups {
		size += 24 * len(g.Samples)
		if g.Runs != nil {
			size += flushAt // a timeline: a stack and a weight per run
		}
		for _, s := range g.Samples {
			if s.Values[wp.Default] != 0 {
				if i == wp.Active {
					active = len(shown) + 1
				}
				shown = append(shown, i)
				break
			}
		}
	}
	for i := range wp.Frames {
		size += 24 + len(wp.Frames[i].Name) + len(wp.Frames[i].Module)
	}
	b := exportBuf(size)
	b = append(b, `{"$schema":`...)
	b = appendJSONString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"clrdiag","name":`...)
	b = appendJSONString(b, wp.title())
	b = append(b, `,"activeProfileIndex":`...)
	b = appendInt(b, int64(active))
	b = append(b, `,"shared":{"frames":[`...)
	var err error
	for i := range wp.Frames {
		fr := &wp.Frames[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, fr.Name)
		if fr.Module != "" {
			b = append(b, `,"file":`...)
			b = appendJSONString(b, fr.Module)
		}
		b = append(b, '}')
		if b, err = flushFull(w, b); err != nil {
			return err
		}
	}
	if len(wp.Frames) > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"name":`...)
	b = appendJSONString(b, noFrames)
	b = append(b, `}]},"profiles":[`...)
	// Each stack's JSON array is encoded once, when first needed.
	stacks := newStackArrays(len(wp.Frames), wp.Stacks, merged)
	var scratch []Run // the runs of a group without a timeline

	// All threads: the distinct stacks with weight.
	var total int64
	for _, v := range merged {
		total += v
	}
	b = appendSampledHeader(b, "All threads", unit, 0, total)
	if b, err = appendSampledBody(w, b, &stacks, len(merged), func(i int) (int, int64) { return i, merged[i] }); err != nil {
		return err
	}

	for _, gi := range shown {
		g := &wp.Groups[gi]
		b = append(b, ',')
		if g.Runs != nil && !wp.RunsPartial {
			if b, err = appendSpeedscopeRuns(w, b, g, unit, wp.Period, &stacks, &scratch); err != nil {
				return err
			}
			continue
		}
		var end int64
		for _, s := range g.Samples {
			end += s.Values[wp.Default]
		}
		b = appendSampledHeader(b, g.Name, unit, 0, end)
		if b, err = appendSampledBody(w, b, &stacks, len(g.Samples), func(i int) (int, int64) {
			return g.Samples[i].Stack, g.Samples[i].Values[wp.Default]
		}); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	_, err = w.Write(b)
	return err
}

// appendSampledBody appends the samples (stacks' arrays) and weights of a
// sampled profile of n stacks, at(i) giving the i-th stack and its weight
// (those of weight 0 are left out), and closes the profile.
func appendSampledBody(w io.Writer, b []byte, stacks *stackArrays, n int, at func(int) (int, int64)) ([]byte, error) {
	var err error
	sep := false
	for i := range n {
		st, v := at(i)
		if v == 0 {
			continue
		}
		b = append(b, stacks.get(st, sep)...)
		sep = true
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	b = append(b, `],"weights":[`...)
	sep = false
	for i := range n {
		_, v := at(i)
		if v == 0 {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = appendInt(b, v)
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return append(b, "]}"...), nil
}

// appendSampledHeader appends the start of a speedscope "sampled" profile,
// up to its samples.
func appendSampledHeader(b []byte, name, unit string, start, end int64) []byte {
	b = append(b, `{"type":"sampled","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"unit":"`...)
	b = append(b, unit...)
	b = append(b, `","startValue":`...)
	b = appendInt(b, start)
	b = append(b, `,"endValue":`...)
	b = appendInt(b, end)
	return append(b, `,"samples":[`...)
}

// appendSpeedscopeRuns appends the speedscope profile of a group's Runs,
// each run a sample weighing Count × period.
func appendSpeedscopeRuns(w io.Writer, b []byte, g *Group, unit string, period int64, stacks *stackArrays, scratch *[]Run) ([]byte, error) {
	runs := g.runList(scratch)
	first := true
	var start, count, at int64
	if runs.samples >= 0 {
		// Every run of a timeline: its count, and the first's start.
		count = runs.samples
		if len(runs.chunks) > 0 {
			_, _, ticks, _ := runAt(runs.chunks[0], 0)
			start, first = int64(runs.tl.startOf(ticks)), false
		}
	} else {
		for _, chunk := range runs.chunks {
			for i := 0; i < len(chunk); i++ {
				sk, n, delta, last := runAt(chunk, i)
				i = last
				at += delta
				if runs.skip(sk) {
					continue
				}
				if first {
					start, first = int64(runs.tl.startOf(at)), false
				}
				count += int64(n)
			}
		}
	}
	for _, r := range runs.runs {
		if first {
			start, first = int64(r.Start), false
		}
		count += r.Count
	}
	b = appendSampledHeader(b, g.Name, unit, start, start+count*period)
	var err error
	sep := false
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, _, _, last := runAt(chunk, i)
			i = last
			if runs.skip(sk) {
				continue
			}
			// stacks.get, inline
			stack := runs.stacks[sk>>1]
			sp := stacks.span[stack]
			if sp == 0 {
				sp = stacks.encode(stack)
			}
			lo := int(sp>>32) - 1
			if !sep {
				lo++
			}
			sep = true
			b = append(b, stacks.enc[lo:uint32(sp)]...)
			if b, err = flushFull(w, b); err != nil {
				return b, err
			}
		}
	}
	for _, r := range runs.runs {
		b = append(b, stacks.get(r.Stack, sep)...)
		sep = true
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	b = append(b, `],"weights":[`...)
	// Most runs weigh the same (one sample), so the last weight's digits
	// are kept, after a comma for every weight but the first.
	wt := newWeightText(period)
	// Consecutive runs of the same count (most weigh one sample) are
	// counted, then written at once (appendN).
	pend := 0
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, n, _, last := runAt(chunk, i)
			i = last
			if runs.skip(sk) {
				continue
			}
			if c := int64(n); c != wt.count {
				if pend != 1 {
					if b, err = wt.appendN(w, b, pend); err != nil {
						return b, err
					}
				} else {
					// One run (the counts alternate): as appendN
					// would, inline. After the first element, the
					// whole of wt.buf is copied (a few moves, where
					// append calls memmove) and b cut after it.
					if n := len(b); wt.lo == 0 && cap(b)-n >= len(wt.buf) {
						*(*[len(wt.buf)]byte)(b[n : n+len(wt.buf)]) = wt.buf
						b = b[:n+wt.n]
					} else {
						b = append(b, wt.buf[wt.lo:wt.n]...)
					}
					wt.lo = 0
					if b, err = flushFull(w, b); err != nil {
						return b, err
					}
				}
				wt.set(c)
				pend = 0
			}
			pend++
		}
	}
	if b, err = wt.appendN(w, b, pend); err != nil {
		return b, err
	}
	for _, r := range runs.runs {
		b = append(b, wt.text(r.Count)...)
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return append(b, "]}"...), nil
}

// weightText writes the weights of runs, count × period, as the elements
// of a JSON list, keeping the text of the last one and of the small
// counts (a thread whose runs alternate between one and two samples would
// otherwise have every weight formatted).
type weightText struct {
	period, count int64
	// buf[lo:n] is the next element: a comma (lo 0; 1 for the first
	// element), then count × period.
	lo, n int
	buf   [24]byte
	// small[c] is buf for count c, smallN[c] its n (0 until written).
	small  [8][24]byte
	smallN [8]uint8
}

// newWeightText returns a weightText whose next element is the first,
// holding the text of count 0 ("0" for any period).
func newWeightText(period int64) weightText {
	return weightText{period: period, lo: 1, n: 2, buf: [24]byte{',', '0'}}
}

// text returns the next element: count × period, after a comma unless it
// is the first.
func (t *weightText) text(count int64) []byte {
	if count != t.count {
		t.set(count)
	}
	s := t.buf[t.lo:t.n]
	t.lo = 0
	return s
}

// appendN appends the next k elements, all of the current count, and
// hands b to w (flushFull) as it fills. After the first, the elements are
// copies of one text, written by doubling what is written of them: a copy
// per doubling rather than one per element.
func (t *weightText) appendN(w io.Writer, b []byte, k int) ([]byte, error) {
	var err error
	if k > 0 && t.lo != 0 { // the first element of the list: no comma
		b = append(b, t.buf[t.lo:t.n]...)
		t.lo = 0
		k--
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	el := t.buf[:t.n]
	for k > 0 {
		// As many as fit below flushAt (at least one): b grows no more
		// than element by element.
		m := min(k, max((flushAt-len(b))/len(el), 1))
		n := len(b)
		b = append(b, el...)
		for done := 1; done < m; {
			c := min(done, m-done)
			b = append(b, b[n:n+c*len(el)]...)
			done += c
		}
		k -= m
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// set makes count × period the text of the next elements.
func (t *weightText) set(count int64) {
	t.count = count
	if uint64(count) < uint64(len(t.small)) && t.smallN[count] != 0 {
		t.buf, t.n = t.small[count], int(t.smallN[count])
		return
	}
	t.n = len(appendInt(t.buf[:1], count*t.period))
	if uint64(count) < uint64(len(t.small)) {
		t.small[count], t.smallN[count] = t.buf, uint8(t.n)
	}
}

// stackArrays encodes stacks as speedscope sample arrays (frame indexes,
// root first; the pseudo-frame after the last frame for an empty stack),
// each once, after a comma (the separator before the array in a list).
type stackArrays struct {
	frames int
	stacks []Stack
	enc    []byte
	// span[i] is enc[lo:hi] of stack i as lo<<32 | hi, 0 until encoded;
	// one entry per stack from the start, so that get, called for every
	// sample, inlines to a load and a test.
	span []uint64 // lo<<32 | hi
	// text[f] is the element of frame f, a comma and its index in decimal
	// (up to 7 bytes, little-endian), with its length in the top byte; 0
	// until made (frameText). Stacks share most frames: each index is
	// formatted once, and stored by one 8-byte write.
	text []uint64
}

// newStackArrays returns the arrays of stacks, with room for those whose
// weight is not 0 (the stacks of the All threads profile).
func newStackArrays(frames int, stacks []Stack, weights []int64) stackArrays {
	// Each frame index takes at most as many digits as the largest.
	digits := len(appendInt(nil, int64(frames)))
	size := 0
	for st, v := range weights {
		if v != 0 {
			size += 3 + max(len(stacks[st].Frames), 1)*(digits+1)
		}
	}
	return stackArrays{frames: frames, stacks: stacks, enc: make([]byte, 0, size), span: make([]uint64, len(stacks)),
		text: make([]uint64, frames)}
}

// get returns the array of a stack, after a comma with sep.
func (s *stackArrays) get(stack int, sep bool) []byte {
	sp := s.span[stack]
	if sp == 0 {
		sp = s.encode(stack)
	}
	lo := int(sp >> 32)
	if sep {
		lo--
	}
	return s.enc[lo:uint32(sp)]
}

// frameText makes text[f]: a comma and f in decimal, packed, with its
// length in the top byte. An index of more than six digits (a profile of
// a million frames) is formatted each time instead.
func (s *stackArrays) frameText(f int) uint64 {
	var b [8]byte
	e := appendInt(append(b[:0], ','), int64(f))
	if len(e) > 7 {
		return 0 // not cached; never stored into b (appendInt grew e)
	}
	t := binary.LittleEndian.Uint64(b[:]) | uint64(len(e))<<56
	s.text[f] = t
	return t
}

// encode writes the array of a stack and returns its span.
func (s *stackArrays) encode(stack int) uint64 {
	s.enc = append(s.enc, ',')
	lo := len(s.enc)
	frames := s.stacks[stack].Frames
	if len(frames) == 0 {
		s.enc = appendInt(append(s.enc, '['), int64(s.frames))
	}
	// Every frame's element after a comma (frameText), the first one's
	// comma then made the opening bracket.
	enc := s.enc
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		t := s.text[f]
		if t == 0 {
			if t = s.frameText(f); t == 0 {
				enc = appendInt(append(enc, ','), int64(f))
				continue
			}
		}
		n, l := len(enc), int(t>>56)
		if cap(enc)-n >= 8 {
			// All 8 bytes are written, the length byte past the
			// element into spare capacity (written over next).
			enc = enc[:n+8]
			binary.LittleEndian.PutUint64(enc[n:], t)
			enc = enc[:n+l]
		} else {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], t)
			enc = append(enc, b[:l]...)
		}
	}
	if len(frames) > 0 {
		enc[lo] = '['
	}
	s.enc = append(enc, ']')
	s.span[stack] = uint64(lo)<<32 | uint64(len(s.enc))
	return s.span[stack]
}

// WriteChromium writes the groups' Runs as Chromium trace-event JSON, which
// Perfetto (https://ui.perfetto.dev) and Chrome DevTools' Performance panel
// open: per thread, a "B" event when a frame appears on the sampled stack
// and an "E" event with the same name and category (the frame's module)
// when it leaves it, timestamps in microseconds from the start of the trace
// and never going back on a thread. Gaps longer than four periods without
// samples close every frame, and so does the end of each run when
// wp.RunsApart. "M" events name the process and the threads
// and sort the busiest thread first. It needs Runs (a profile built with
// Config.Timeline) and returns ErrNoTimeline without them.
func WriteChromium(w io.Writer, wp *Weighted) error {
	hasRuns := false
	size := 512
	for _, g := range wp.Groups {
		if g.Runs != nil {
			hasRuns = true
			size += chromiumChunk // B and E events per run
		}
	}
	if !hasRuns && len(wp.Groups) > 0 {
		return ErrNoTimeline
	}
	b := make([]byte, 0, min(size, chromiumChunk+4096))
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	pid := strconv.Itoa(wp.ProcessID)
	b = append(b, `{"ph":"M","name":"process_name","pid":`...)
	b = append(b, pid...)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = appendJSONString(b, wp.title())
	b = append(b, `}}`...)
	if !hasRuns {
		b = append(b, "]}\n"...)
		_, err := w.Write(b)
		return err
	}
	// Threads sort by work, the busiest first.
	rank := make([]int, len(wp.Groups))
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(i, j int) int { return cmp.Compare(wp.Groups[j].Work, wp.Groups[i].Work) })
	sortIndex := make([]int, len(wp.Groups))
	for r, gi := range rank {
		sortIndex[gi] = r
	}
	cw := chromiumWriter{w: w, wp: wp, period: time.Duration(wp.Period),
		events: newChromiumEvents(wp.Frames)}
	var err error
	for gi := range wp.Groups {
		g := &wp.Groups[gi]
		if g.Runs == nil {
			continue
		}
		tid := strconv.FormatUint(g.ThreadID, 10)
		b = append(b, ",\n"...)
		b = append(b, `{"ph":"M","name":"thread_name","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"name":`...)
		b = appendJSONString(b, g.Name)
		b = append(b, `}},`...)
		b = append(b, "\n"...)
		b = append(b, `{"ph":"M","name":"thread_sort_index","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"sort_index":`...)
		b = appendInt(b, int64(sortIndex[gi]))
		b = append(b, `}}`...)
		cw.setSuffix(pid, tid)
		if b, err = cw.appendRuns(b, g); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	_, err = w.Write(b)
	return err
}

// chromiumChunk is the size at which WriteChromium hands its output to the
// writer: an eighth of the other exporters' flushAt, as the conversion's
// allocation drives the collector's work (as foldedChunk), and a chunk
// holds about 85 events (the CLI's writer buffers 64 KB). The buffer
// keeps 4 KB more, for the events of a run that starts below it.
const chromiumChunk = 8 << 10

// chromiumEvents holds each frame's B event up to its timestamp. Its E
// event is the same text with another phase, at phaseAt (the writers patch
// that byte after copying the B event).
type chromiumEvents struct {
	frames []Frame
	enc    []byte
	// span[i]: enc[span[i].lo:span[i].hi] opens frame i.
	span []eventSpan
	// copied is how many bytes of an event run copies (eventBlock): two
	// blocks, or more for a longer event, in steps of 32 bytes (copy32).
	copied int
	// cat is the category of the frame encoded last, and
	// enc[catAt[0]:catAt[1]] its text from ,"cat": to the timestamp: most
	// frames share it with the frame before, and copy it.
	cat   string
	catAt [2]int
}

// eventSpan is where an event is in chromiumEvents.enc (a struct, as the
// compiler keeps its fields in registers, those of an array in memory).
type eventSpan struct{ lo, hi int32 }

// phaseAt is the index of the phase ("B" or "E") in an encoded event.
const phaseAt = len(",\n{\"ph\":\"")

func newChromiumEvents(frames []Frame) chromiumEvents {
	// Room for the events of every frame, unless a name needs escaping
	// (appending frame by frame would allocate about as much again), and
	// to read the bytes run copies (copied) from the last.
	const quoted = len(",\n{\"ph\":\"B\",\"name\":\"\",\"cat\":\"\",\"ts\":")
	size, longest := 0, 0
	for i := range frames {
		n := len(frames[i].Name) + max(len(frames[i].Module), len(unknownModule))
		size, longest = size+n, max(longest, n)
	}
	size += len(frames)*quoted + max(2*eventBlock, longest+quoted+31)
	e := chromiumEvents{frames: frames, enc: make([]byte, 0, size), span: make([]eventSpan, len(frames))}
	// Every frame, at once: the loops that write the events call nothing
	// (a call spills their values, and reloads them after it), and the
	// frames of a time profile are those of its samples, which its runs
	// hold.
	e.copied = 2 * eventBlock
	for f := range frames {
		e.encode(f)
		e.copied = max(e.copied, (int(e.span[f].hi-e.span[f].lo)+31)&^31)
	}
	e.enc = slices.Grow(e.enc, e.copied) // when a name needed escaping
	return e
}

// encode appends frame f's B event and records its span.
func (e *chromiumEvents) encode(f int) {
	fr := &e.frames[f]
	cat := fr.Module
	if cat == "" {
		cat = unknownModule
	}
	begin := len(e.enc)
	e.enc = append(e.enc, ",\n{\"ph\":\"B\",\"name\":"...)
	e.enc = appendJSONString(e.enc, fr.Name)
	if cat == e.cat { // never "" (unknownModule)
		e.enc = append(e.enc, e.enc[e.catAt[0]:e.catAt[1]]...)
	} else {
		lo := len(e.enc)
		e.enc = append(e.enc, `,"cat":`...)
		e.enc = appendJSONString(e.enc, cat)
		e.enc = append(e.enc, `,"ts":`...)
		e.cat, e.catAt = cat, [2]int{lo, len(e.enc)}
	}
	e.span[f] = eventSpan{int32(begin), int32(len(e.enc))}
}

// eventBlock is how many bytes of an event (chromiumEvents.enc) the
// writers copy at once (copy32): most events are one or two blocks. An
// event is read past its end (into the next event or enc's spare
// capacity) and written past it (what follows it overwrites the rest). An
// append calls memmove, and the values of the loop around it are reloaded
// after the call, which cost more than the copy.
const eventBlock = 64

// copy32 copies s to d, 8 bytes at a time: a load and a store each,
// addressed from the slices' pointers and indexes (a copy of an array of
// more than 16 bytes is a call to memmove, as the arrays could overlap,
// and one of [16]byte computes each address first). Two copy32 are a
// block (eventBlock).
func copy32(d, s *[32]byte) {
	*(*[8]byte)(d[0:8]) = *(*[8]byte)(s[0:8])
	*(*[8]byte)(d[8:16]) = *(*[8]byte)(s[8:16])
	*(*[8]byte)(d[16:24]) = *(*[8]byte)(s[16:24])
	*(*[8]byte)(d[24:32]) = *(*[8]byte)(s[24:32])
}

// sixDigits is chromiumWriter.stampHigh for a timestamp of 100 ms to 1 s:
// one of six digits of microseconds and none above.
const sixDigits = ^uint64(0)

// chromiumWriter writes the B and E events of groups' Runs.
type chromiumWriter struct {
	w      io.Writer
	wp     *Weighted
	period time.Duration
	events chromiumEvents
	// stampBuf holds the current timestamp right-aligned in its first
	// microsLen bytes, then the group's suffix (,"pid":..,"tid":..}); ts
	// is the timestamp and the suffix, what ends every event at that time.
	stampBuf []byte
	ts       []byte
	// tsPad is ts and what follows it in stampBuf, tsCopy bytes.
	tsPad *[tsCopy]byte
	// stampHigh is the current timestamp's whole seconds (its digits
	// above the last six of microseconds); sixDigits when it has none but
	// six digits, 0 when it has fewer (or is negative).
	stampHigh uint64
	// The state of the group being written: open is the stack whose
	// frames are open (leaf first; nil for none; all of a stack's frames
	// are open once its run is written), openStack its index (-1 for
	// none), at the end of the last run.
	open      []int
	openStack int
	at        time.Duration
	// scratch holds the runs of a group without a timeline.
	scratch []Run
	// commons remembers commonRoot of pairs of stacks, by a hash of the
	// pair.
	commons [256]commonMemo
}

// setSuffix sets the end of every event of the next group.
func (c *chromiumWriter) setSuffix(pid, tid string) {
	c.stampBuf = append(append(append(append(append(c.stampBuf[:0], make([]byte, microsLen)...),
		`,"pid":`...), pid...), `,"tid":`...), tid...)
	c.stampBuf = append(c.stampBuf, '}')
	// Room for tsPad after any timestamp.
	c.stampBuf = slices.Grow(c.stampBuf, microsLen+tsCopy-len(c.stampBuf))
	c.stampHigh = 0
}

// appendRuns appends the events of a group's Runs: a frame opens when it
// appears on the sampled stack and closes when it leaves it, after a gap
// of more than four periods, or (RunsApart) at the end of its run.
func (c *chromiumWriter) appendRuns(b []byte, g *Group) ([]byte, error) {
	c.open, c.openStack, c.at = nil, -1, 0
	var err error
	runs := g.runList(&c.scratch)
	apart := c.wp.RunsApart
	var at int64 // the start of the run, in ticks
	var clock *nettrace.Header
	var base int64
	if runs.tl != nil {
		clock, base = runs.tl.clock, runs.tl.base // startOf, inline
	}
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, n, delta, last := runAt(chunk, i)
			i = last
			at += delta
			if runs.skip(sk) {
				continue
			}
			// run's most frequent case, inline: the stack of the run
			// before (of the other kind), with no gap, writes nothing.
			stack, start := runs.stacks[sk>>1], clock.DurationOf(at-base)
			if stack == c.openStack && start <= c.at+4*c.period && !apart {
				c.at = max(start, c.at) + time.Duration(n)*c.period
				continue
			}
			if b, err = c.run(b, stack, start, int64(n)); err != nil {
				return b, err
			}
		}
	}
	for _, r := range runs.runs {
		if b, err = c.run(b, r.Stack, r.Start, r.Count); err != nil {
			return b, err
		}
	}
	if len(c.open) > 0 {
		c.stamp(c.at)
		b = c.closeTo(b, 0)
	}
	return b, nil
}

// run appends the events of one run of count samples of stack from start.
func (c *chromiumWriter) run(b []byte, stack int, start time.Duration, count int64) ([]byte, error) {
	if len(b) >= chromiumChunk {
		if _, err := c.w.Write(b); err != nil {
			return b, err
		}
		b = b[:0]
	}
	rs := max(start, c.at) // keep each thread's timestamps monotonic
	if rs > c.at+4*c.period || (c.wp.RunsApart && len(c.open) > 0) {
		if len(c.open) > 0 {
			c.stamp(c.at)
			b = c.closeTo(b, 0)
		}
		c.openStack = -1
	}
	c.at = rs + time.Duration(count)*c.period
	if stack == c.openStack {
		return b, nil // no frame starts or ends
	}
	prev := c.openStack // the stack of open, or -1 for none
	c.openStack = stack
	// The timestamp first, though a run may write no event (a stack of
	// the frames open, rare): values loaded before a call are spilled
	// and loaded again after it.
	c.stamp(rs)
	frames := c.wp.Stacks[stack].Frames
	open := c.open
	// The frames both stacks start with (from the root) stay open: how
	// many is remembered per pair of stacks, as a thread's runs go back
	// and forth between a few.
	common := 0
	if prev >= 0 {
		m := &c.commons[(uint(prev)*0x9e3779b1^uint(stack))%uint(len(c.commons))]
		if m.from == prev && m.to == stack {
			common = m.common
		} else {
			common = commonRoot(open, frames)
			*m = commonMemo{from: prev, to: stack, common: common}
		}
	}
	j := len(frames) - 1 - common
	if len(open) == common && len(frames) == common {
		c.open = frames
		return b, nil
	}
	closing, opening := open[:len(open)-common], frames[:j+1]
	// An event is copied in blocks (eventBlock) and ends with pad (see
	// tsCopy) when its end is at most tsCopy bytes and b has room for
	// every event of the run copied so; otherwise the events are
	// appended. So the loops below call nothing: a call spills their
	// values, and reloads them after it.
	need := (len(closing) + len(opening)) * (c.events.copied + tsCopy)
	if cap(b)-len(b) < need && len(b) > 0 {
		if _, err := c.w.Write(b); err != nil {
			return b, err
		}
		b = b[:0]
	}
	if cap(b)-len(b) < need || len(c.ts) > tsCopy {
		b = c.appendEvents(b, closing, opening)
		c.open = frames
		return b, nil
	}
	ts, pad := c.ts, *c.tsPad
	span, enc := c.events.span, c.events.enc
	// closeTo(b, common), inline (a call per run is about as much as
	// an event).
	for _, f := range closing {
		sp := span[f]
		n, l := len(b), int(sp.hi-sp.lo)
		d := (*[2 * eventBlock]byte)(b[n : n+2*eventBlock])
		e := (*[2 * eventBlock]byte)(enc[sp.lo : int(sp.lo)+2*eventBlock])
		copy32((*[32]byte)(d[0:32]), (*[32]byte)(e[0:32]))
		copy32((*[32]byte)(d[32:64]), (*[32]byte)(e[32:64]))
		if l > eventBlock {
			copy32((*[32]byte)(d[64:96]), (*[32]byte)(e[64:96]))
			copy32((*[32]byte)(d[96:128]), (*[32]byte)(e[96:128]))
			for k := 2 * eventBlock; k < l; k += 32 { // rare
				copy32((*[32]byte)(b[n+k:n+k+32]), (*[32]byte)(enc[int(sp.lo)+k:int(sp.lo)+k+32]))
			}
		}
		*(*[tsCopy]byte)(b[n+l : n+l+tsCopy]) = pad
		d[phaseAt] = 'E'
		b = b[:n+l+len(ts)]
	}
	for j := len(opening) - 1; j >= 0; j-- {
		sp := span[opening[j]]
		n, l := len(b), int(sp.hi-sp.lo)
		d := (*[2 * eventBlock]byte)(b[n : n+2*eventBlock])
		e := (*[2 * eventBlock]byte)(enc[sp.lo : int(sp.lo)+2*eventBlock])
		copy32((*[32]byte)(d[0:32]), (*[32]byte)(e[0:32]))
		copy32((*[32]byte)(d[32:64]), (*[32]byte)(e[32:64]))
		if l > eventBlock {
			copy32((*[32]byte)(d[64:96]), (*[32]byte)(e[64:96]))
			copy32((*[32]byte)(d[96:128]), (*[32]byte)(e[96:128]))
			for k := 2 * eventBlock; k < l; k += 32 { // rare
				copy32((*[32]byte)(b[n+k:n+k+32]), (*[32]byte)(enc[int(sp.lo)+k:int(sp.lo)+k+32]))
			}
		}
		*(*[tsCopy]byte)(b[n+l : n+l+tsCopy]) = pad
		b = b[:n+l+len(ts)]
	}
	c.open = frames
	return b, nil
}

// appendEvents appends the E events of the frames closing, then the B
// events of the frames opening from the last (leaf first, both), ending
// each with ts (stamp).
func (c *chromiumWriter) appendEvents(b []byte, closing, opening []int) []byte {
	ts, ev := c.ts, &c.events
	for _, f := range closing {
		sp := ev.span[f]
		n := len(b)
		b = append(append(b, ev.enc[sp.lo:sp.hi]...), ts...)
		b[n+phaseAt] = 'E'
	}
	for j := len(opening) - 1; j >= 0; j-- {
		sp := ev.span[opening[j]]
		b = append(append(b, ev.enc[sp.lo:sp.hi]...), ts...)
	}
	return b
}

// commonRoot returns how many frames stacks a and b (leaf first) start
// with from the root.
func commonRoot(a, b []int) int {
	// k frames of each, aligned at the root (their last), then the index
	// d of the last that differ.
	k := min(len(a), len(b))
	ra, rb := a[len(a)-k:], b[len(b)-k:]
	rb = rb[:len(ra)]
	d := k - 1
	// Deep stacks share many frames: four compared at a time first.
	for d >= 3 && *(*[4]int)(ra[d-3 : d+1]) == *(*[4]int)(rb[d-3 : d+1]) {
		d -= 4
	}
	for d >= 0 && ra[d] == rb[d] {
		d--
	}
	return k - 1 - d
}

// commonMemo is chromiumWriter's memo of commonRoot for the stacks from
// and to (a zero value, from and to 0, is never looked up: a run of the
// stack open writes nothing).
type commonMemo struct{ from, to, common int }

// stamp sets ts to the end of an event at t: its timestamp then the
// group's suffix.
//
// A thread's timestamps grow, and most share their seconds (the digits
// above the last six of microseconds) with the one before: those digits
// are left in place and only the last six and the decimals are written
// (putMicros writes every digit, two at a time, with a division by 100
// for each pair). So are those of the first second that have six digits
// (from 100 ms), after one that had.
func (c *chromiumWriter) stamp(t time.Duration) {
	buf := (*[microsLen]byte)(c.stampBuf)
	if t >= 0 {
		us := uint64(t) / 1000
		high := us / 1e6
		if high == 0 && us >= 1e5 {
			high = sixDigits
		}
		if high != 0 && high == c.stampHigh {
			low, frac := us%1e6, uint64(t)%1000
			p, q := low/1e4, low/100%100
			r, f := low%100, frac%100
			buf[microsLen-10], buf[microsLen-9] = digitPairs[2*p], digitPairs[2*p+1]
			buf[microsLen-8], buf[microsLen-7] = digitPairs[2*q], digitPairs[2*q+1]
			buf[microsLen-6], buf[microsLen-5] = digitPairs[2*r], digitPairs[2*r+1]
			buf[microsLen-3] = byte('0' + frac/100)
			buf[microsLen-2], buf[microsLen-1] = digitPairs[2*f], digitPairs[2*f+1]
			return
		}
		c.stampHigh = high
	} else {
		c.stampHigh = 0
	}
	lo := putMicros(buf, int64(t))
	c.ts = c.stampBuf[lo:]
	c.tsPad = (*[tsCopy]byte)(c.stampBuf[lo : lo+tsCopy])
}

// closeTo appends the E events of the open frames beyond the first n from
// the root, leaf first, ending each with ts (stamp), and leaves none open.
func (c *chromiumWriter) closeTo(b []byte, n int) []byte {
	b = c.appendEvents(b, c.open[:len(c.open)-n], nil)
	c.open = nil
	return b
}

// tsCopy is how many bytes of the end of an event (chromiumWriter.stamp:
// ts and what follows it in its buffer, tsPad) run copies: more than the
// end of most events (a timestamp of 10-13 characters, pid and tid of up
// to 10 digits each). The copy of a local array of a fixed size compiles
// to a few moves where append calls memmove (so would a copy from a
// pointer, which could overlap b): with room in b, the tsCopy bytes are
// copied whole and b is cut after ts (the rest is in b's spare capacity,
// overwritten next).
const tsCopy = 48
