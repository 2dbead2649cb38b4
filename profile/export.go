package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
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
	repl := strings.NewReplacer(";", ",", "\n", " ", "\r", " ")
	names := make([]string, len(wp.Frames))
	for i, f := range wp.Frames {
		names[i] = repl.Replace(f.String())
	}
	// The lines are built in one buffer (no string per line), sorted by
	// their bytes, and lines that came out the same (frames whose names
	// differ only by the characters replaced) are merged.
	type line struct {
		lo, hi int
		v      int64
	}
	merged := wp.merged()
	size, n := 0, 0
	for st, v := range merged {
		if v == 0 {
			continue
		}
		n++
		frames := wp.Stacks[st].Frames
		size += len(noFrames) + len(frames)
		for _, f := range frames {
			size += len(names[f])
		}
	}
	buf := make([]byte, 0, size)
	lines := make([]line, 0, n)
	for st, v := range merged {
		if v == 0 {
			continue
		}
		lo := len(buf)
		frames := wp.Stacks[st].Frames
		if len(frames) == 0 {
			buf = append(buf, noFrames...)
		}
		for i := len(frames) - 1; i >= 0; i-- {
			buf = append(buf, names[frames[i]]...)
			if i > 0 {
				buf = append(buf, ';')
			}
		}
		lines = append(lines, line{lo, len(buf), v})
	}
	slices.SortFunc(lines, func(a, b line) int { return bytes.Compare(buf[a.lo:a.hi], buf[b.lo:b.hi]) })
	bw := bufio.NewWriter(w)
	var num []byte
	for i := 0; i < len(lines); {
		l := lines[i]
		v := l.v
		for i++; i < len(lines) && bytes.Equal(buf[lines[i].lo:lines[i].hi], buf[l.lo:l.hi]); i++ {
			v += lines[i].v
		}
		bw.Write(buf[l.lo:l.hi])
		num = append(strconv.AppendInt(append(num[:0], ' '), v, 10), '\n')
		bw.Write(num)
	}
	return bw.Flush()
}

// WritePprof writes the profile as a gzipped pprof protocol buffer, the
// profile Weighted.Pprof builds, encoded directly (see pprofenc.go): stored
// up to 32 KB, compressed without state beyond (writeGzip).
func WritePprof(w io.Writer, wp *Weighted) error {
	raw, err := wp.appendPprof(nil)
	if err != nil {
		return err
	}
	return writeGzip(w, raw)
}

// Pprof converts the profile to a github.com/google/pprof/profile value:
// one sample type per Types (the default first in pprof's views), one
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
	if w.Default >= 0 && w.Default < len(w.Types) {
		pp.DefaultSampleType = w.Types[w.Default].Type
	}
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
	n, nLocs := 0, 0
	for _, g := range w.Groups {
		n += len(g.Samples)
		for _, s := range g.Samples {
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

// SpeedscopeSchema is the $schema value of speedscope files.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// flushAt is the size at which the exporters hand their buffer to the
// writer.
const flushAt = 64 << 10

// exportBuf returns the exporters' buffer: flushAt and some, or less for a
// profile too small to fill it (a small profile does not pay for clearing
// a large buffer, a large one does not grow it piecemeal).
func exportBuf(wp *Weighted) []byte {
	n := 4096 + 64*len(wp.Frames)
	for _, g := range wp.Groups {
		n += 32 * len(g.Samples)
		if g.Runs != nil {
			n += flushAt // a timeline: an event or a weight per run
		}
	}
	return make([]byte, 0, min(n, flushAt+4096))
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
	b := exportBuf(wp)
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	unit := "none"
	if wp.Default >= 0 && wp.Default < len(wp.Types) {
		unit = speedscopeUnit(wp.Types[wp.Default].Unit)
	}
	merged := wp.merged()
	// The groups with weight get a profile, after "All threads".
	var shown []int
	active := 0
	for i, g := range wp.Groups {
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
	b = append(b, `{"$schema":`...)
	b = appendJSONString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"clrdiag","name":`...)
	b = appendJSONString(b, wp.title())
	b = append(b, `,"activeProfileIndex":`...)
	b = strconv.AppendInt(b, int64(active), 10)
	b = append(b, `,"shared":{"frames":[`...)
	for i, fr := range wp.Frames {
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
		if len(b) >= flushAt {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(wp.Frames) > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"name":`...)
	b = appendJSONString(b, noFrames)
	b = append(b, `}]},"profiles":[`...)
	// Each stack's JSON array is encoded once, when first needed.
	stacks := stackArrays{frames: len(wp.Frames), stacks: wp.Stacks}
	sep := false
	// list appends a JSON list of n items, each written by item(i).
	list := func(n int, item func(i int)) error {
		sep = false
		for i := range n {
			if sep {
				b = append(b, ',')
			}
			sep = true
			item(i)
			if len(b) >= flushAt {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	header := func(name string, start, end int64) {
		b = append(b, `{"type":"sampled","name":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"unit":"`...)
		b = append(b, unit...)
		b = append(b, `","startValue":`...)
		b = strconv.AppendInt(b, start, 10)
		b = append(b, `,"endValue":`...)
		b = strconv.AppendInt(b, end, 10)
		b = append(b, `,"samples":[`...)
	}

	// All threads: the distinct stacks with weight.
	var order []int
	var total int64
	for st, v := range merged {
		if v != 0 {
			order = append(order, st)
			total += v
		}
	}
	header("All threads", 0, total)
	if err := list(len(order), func(i int) { b = append(b, stacks.get(order[i])...) }); err != nil {
		return err
	}
	b = append(b, `],"weights":[`...)
	if err := list(len(order), func(i int) { b = strconv.AppendInt(b, merged[order[i]], 10) }); err != nil {
		return err
	}
	b = append(b, "]}"...)

	for _, gi := range shown {
		g := &wp.Groups[gi]
		b = append(b, ',')
		if g.Runs != nil && !wp.RunsPartial {
			var start, end int64
			first := true
			for r := range g.Runs {
				if first {
					start, end, first = int64(r.Start), int64(r.Start), false
				}
				end += r.Count * wp.Period
			}
			header(g.Name, start, end)
			sep = false
			for r := range g.Runs {
				if sep {
					b = append(b, ',')
				}
				sep = true
				b = append(b, stacks.get(r.Stack)...)
				if len(b) >= flushAt {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			b = append(b, `],"weights":[`...)
			sep = false
			for r := range g.Runs {
				if sep {
					b = append(b, ',')
				}
				sep = true
				b = strconv.AppendInt(b, r.Count*wp.Period, 10)
				if len(b) >= flushAt {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			b = append(b, "]}"...)
			continue
		}
		var kept []Sample
		var end int64
		for _, s := range g.Samples {
			if v := s.Values[wp.Default]; v != 0 {
				kept = append(kept, s)
				end += v
			}
		}
		header(g.Name, 0, end)
		if err := list(len(kept), func(i int) { b = append(b, stacks.get(kept[i].Stack)...) }); err != nil {
			return err
		}
		b = append(b, `],"weights":[`...)
		if err := list(len(kept), func(i int) { b = strconv.AppendInt(b, kept[i].Values[wp.Default], 10) }); err != nil {
			return err
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}\n"...)
	return flush()
}

// stackArrays encodes stacks as speedscope sample arrays (frame indexes,
// root first; the pseudo-frame after the last frame for an empty stack),
// each once.
type stackArrays struct {
	frames int
	stacks []Stack
	enc    []byte
	span   [][2]int32 // enc[lo:hi] of each stack; hi 0 until encoded
}

func (s *stackArrays) get(stack int) []byte {
	if s.span == nil {
		s.span = make([][2]int32, len(s.stacks))
	}
	if sp := s.span[stack]; sp[1] > 0 {
		return s.enc[sp[0]:sp[1]]
	}
	lo := len(s.enc)
	frames := s.stacks[stack].Frames
	s.enc = append(s.enc, '[')
	if len(frames) == 0 {
		s.enc = strconv.AppendInt(s.enc, int64(s.frames), 10)
	}
	for i := len(frames) - 1; i >= 0; i-- {
		s.enc = strconv.AppendInt(s.enc, int64(frames[i]), 10)
		if i > 0 {
			s.enc = append(s.enc, ',')
		}
	}
	s.enc = append(s.enc, ']')
	s.span[stack] = [2]int32{int32(lo), int32(len(s.enc))}
	return s.enc[lo:]
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
	for _, g := range wp.Groups {
		hasRuns = hasRuns || g.Runs != nil
	}
	if !hasRuns && len(wp.Groups) > 0 {
		return ErrNoTimeline
	}
	// Each frame's B and E events up to the timestamp are encoded once:
	// enc[begin[i]:end[i]] opens frame i, enc[end[i]:begin[i+1]] closes it.
	var enc []byte
	begin := make([]int, len(wp.Frames)+1)
	end := make([]int, len(wp.Frames))
	for i, f := range wp.Frames {
		cat := f.Module
		if cat == "" {
			cat = unknownModule
		}
		begin[i] = len(enc)
		enc = append(enc, ",\n{\"ph\":\"B\",\"name\":"...)
		enc = appendJSONString(enc, f.Name)
		enc = append(enc, `,"cat":`...)
		enc = appendJSONString(enc, cat)
		enc = append(enc, `,"ts":`...)
		end[i] = len(enc)
		enc = append(enc, ",\n{\"ph\":\"E\",\"name\":"...)
		enc = appendJSONString(enc, f.Name)
		enc = append(enc, `,"cat":`...)
		enc = appendJSONString(enc, cat)
		enc = append(enc, `,"ts":`...)
	}
	begin[len(wp.Frames)] = len(enc)
	b := exportBuf(wp)
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	pid := strconv.Itoa(wp.ProcessID)
	b = append(b, `{"ph":"M","name":"process_name","pid":`...)
	b = append(b, pid...)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = appendJSONString(b, wp.title())
	b = append(b, `}}`...)
	// Threads sort by work, the busiest first.
	rank := make([]int, len(wp.Groups))
	for i := range rank {
		rank[i] = i
	}
	sort.SliceStable(rank, func(i, j int) bool { return wp.Groups[rank[i]].Work > wp.Groups[rank[j]].Work })
	sortIndex := make([]int, len(wp.Groups))
	for r, gi := range rank {
		sortIndex[gi] = r
	}
	period := time.Duration(wp.Period)
	var suffix, ts []byte // ,"pid":..,"tid":..} and the current timestamp
	var open []int        // frames, root first
	for gi, g := range wp.Groups {
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
		b = strconv.AppendInt(b, int64(sortIndex[gi]), 10)
		b = append(b, `}}`...)
		suffix = append(append(append(append(suffix[:0], `,"pid":`...), pid...), `,"tid":`...), tid...)
		suffix = append(suffix, '}')
		open = open[:0]
		openStack := -1 // the stack whose frames are open, -1 for none
		var at time.Duration
		// closeTo ends the open frames beyond the first n; ts is set.
		closeTo := func(n int) {
			for len(open) > n {
				f := open[len(open)-1]
				open = open[:len(open)-1]
				b = append(b, enc[end[f]:begin[f+1]]...)
				b = append(b, ts...)
				b = append(b, suffix...)
			}
		}
		for r := range g.Runs {
			if len(b) >= flushAt {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
			rs := max(r.Start, at) // keep each thread's timestamps monotonic
			if rs > at+4*period || (wp.RunsApart && len(open) > 0) {
				if len(open) > 0 {
					ts = appendMicros(ts[:0], int64(at))
					closeTo(0)
				}
				openStack = -1
			}
			at = rs + time.Duration(r.Count)*period
			if r.Stack == openStack {
				continue // no frame starts or ends
			}
			openStack = r.Stack
			frames := wp.Stacks[r.Stack].Frames
			common := 0
			for common < len(open) && common < len(frames) && open[common] == frames[len(frames)-1-common] {
				common++
			}
			if len(open) == common && len(frames) == common {
				continue
			}
			ts = appendMicros(ts[:0], int64(rs))
			closeTo(common)
			for i := len(frames) - 1 - common; i >= 0; i-- {
				f := frames[i]
				open = append(open, f)
				b = append(b, enc[begin[f]:end[f]]...)
				b = append(b, ts...)
				b = append(b, suffix...)
			}
		}
		if len(open) > 0 {
			ts = appendMicros(ts[:0], int64(at))
			closeTo(0)
		}
	}
	b = append(b, "]}\n"...)
	_, err := w.Write(b)
	return err
}
