package profile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

// frameStrings returns a display string (Module!Name) per frame.
func (p *Profile) frameStrings() []string {
	out := make([]string, len(p.Frames))
	for i, f := range p.Frames {
		out[i] = f.String()
	}
	return out
}

// WriteFolded writes the profile as folded stacks, one line per distinct
// stack over all threads: "root;caller;...;leaf value", frames as
// Module!Namespace.Type.Method, value in nanoseconds (samples times the
// period). Lines are sorted. Flame graph tools (flamegraph.pl, inferno,
// speedscope) read this format.
func WriteFolded(w io.Writer, p *Profile) error {
	names := p.frameStrings()
	for i, n := range names {
		names[i] = strings.NewReplacer(";", ",", "\n", " ", "\r", " ").Replace(n)
	}
	counts := make(map[int]int64)
	for _, t := range p.Threads {
		for _, s := range t.Samples {
			counts[s.Stack] += s.Count
		}
	}
	lines := make([]string, 0, len(counts))
	var sb strings.Builder
	for s, n := range counts {
		sb.Reset()
		frames := p.Stacks[s].Frames
		if len(frames) == 0 {
			sb.WriteString(noFrames)
		}
		for i := len(frames) - 1; i >= 0; i-- {
			sb.WriteString(names[frames[i]])
			if i > 0 {
				sb.WriteByte(';')
			}
		}
		sb.WriteByte(' ')
		sb.WriteString(strconv.FormatInt(n*int64(p.Period), 10))
		lines = append(lines, sb.String())
	}
	sort.Strings(lines)
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WritePprof writes the profile as a gzipped pprof protocol buffer: sample
// types "samples" (count) and "time" (nanoseconds; "cpu" for a managed-only
// profile, "wall" otherwise), one function and location per frame with the
// module as file name, and labels "thread" (numeric) and "kind"
// (Managed/External) on every sample.
func WritePprof(w io.Writer, p *Profile) error {
	pp, err := p.Pprof()
	if err != nil {
		return err
	}
	return pp.Write(w)
}

// Pprof converts the profile to a github.com/google/pprof/profile value.
func (p *Profile) Pprof() (*profile.Profile, error) {
	timeType := "wall"
	if p.ManagedOnly {
		timeType = "cpu"
	}
	pp := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: timeType, Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: timeType, Unit: "nanoseconds"},
		Period:     int64(p.Period),
		// Samples are listed by thread, so the default ordering of views
		// is the time column.
		DefaultSampleType: timeType,
		TimeNanos:         p.Start.UnixNano(),
		DurationNanos:     int64(p.Duration),
	}
	locs := make([]*profile.Location, len(p.Frames))
	for i, f := range p.Frames {
		fn := &profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.Name + f.Signature, Filename: f.Module}
		pp.Function = append(pp.Function, fn)
		locs[i] = &profile.Location{ID: uint64(i + 1), Address: f.Address, Line: []profile.Line{{Function: fn}}}
		pp.Location = append(pp.Location, locs[i])
	}
	var empty *profile.Location
	for _, t := range p.Threads {
		for _, s := range t.Samples {
			frames := p.Stacks[s.Stack].Frames
			stack := make([]*profile.Location, len(frames))
			for i, f := range frames {
				stack[i] = locs[f]
			}
			if len(stack) == 0 {
				if empty == nil {
					id := uint64(len(pp.Function) + 1)
					fn := &profile.Function{ID: id, Name: noFrames, SystemName: noFrames}
					pp.Function = append(pp.Function, fn)
					empty = &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
					pp.Location = append(pp.Location, empty)
				}
				stack = []*profile.Location{empty}
			}
			pp.Sample = append(pp.Sample, &profile.Sample{
				Location: stack,
				Value:    []int64{s.Count, s.Count * int64(p.Period)},
				Label:    map[string][]string{"kind": {s.Kind.String()}},
				NumLabel: map[string][]int64{"thread": {int64(t.ID)}},
			})
		}
	}
	if err := pp.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: pprof conversion: %w", err)
	}
	return pp, nil
}

// SpeedscopeSchema is the $schema value of speedscope files.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// WriteSpeedscope writes the profile in speedscope's JSON format
// (https://www.speedscope.app/file-format-schema.json): one "sampled"
// profile per thread, stacks root first, weights in nanoseconds. With a
// timeline the samples are in time order (speedscope's Time Order view is
// then a timeline); without one each distinct stack appears once.
func WriteSpeedscope(w io.Writer, p *Profile, name string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 4096)
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, `{"$schema":`...)
	b = appendJSONString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"clrdiag","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"activeProfileIndex":0,"shared":{"frames":[`...)
	emptyFrame := len(p.Frames) // index of the pseudo-frame for empty stacks
	for i, fr := range p.Frames {
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
		if len(b) > 32<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(p.Frames) > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"name":`...)
	b = appendJSONString(b, noFrames)
	b = append(b, `}]},"profiles":[`...)
	period := int64(p.Period)
	appendStack := func(b []byte, s int) []byte {
		frames := p.Stacks[s].Frames
		b = append(b, '[')
		if len(frames) == 0 {
			b = strconv.AppendInt(b, int64(emptyFrame), 10)
		}
		for i := len(frames) - 1; i >= 0; i-- {
			b = strconv.AppendInt(b, int64(frames[i]), 10)
			if i > 0 {
				b = append(b, ',')
			}
		}
		return append(b, ']')
	}
	for ti, t := range p.Threads {
		if ti > 0 {
			b = append(b, ',')
		}
		// Time-ordered runs when there is a timeline, else one entry per
		// distinct stack.
		n := len(t.Samples)
		at := func(i int) (stack int, weight int64) {
			return t.Samples[i].Stack, t.Samples[i].Count * period
		}
		var start int64
		if len(t.Timeline) > 0 {
			n = len(t.Timeline)
			at = func(i int) (int, int64) { return t.Timeline[i].Stack, t.Timeline[i].Count * period }
			start = int64(t.Timeline[0].Start)
		}
		end := start
		for i := range n {
			_, w := at(i)
			end += w
		}
		b = append(b, `{"type":"sampled","name":`...)
		b = appendJSONString(b, "Thread "+strconv.FormatUint(t.ID, 10))
		b = append(b, `,"unit":"nanoseconds","startValue":`...)
		b = strconv.AppendInt(b, start, 10)
		b = append(b, `,"endValue":`...)
		b = strconv.AppendInt(b, end, 10)
		b = append(b, `,"samples":[`...)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			stack, _ := at(i)
			b = appendStack(b, stack)
			if len(b) > 32<<10 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		b = append(b, `],"weights":[`...)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			_, w := at(i)
			b = strconv.AppendInt(b, w, 10)
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}\n"...)
	if err := flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteChromium writes the profile's timeline as Chromium trace-event JSON
// (chrome://tracing, Perfetto): per thread, a "B" event when a frame appears
// on the sampled stack and the matching "E" event when it leaves it,
// timestamps in microseconds from the start of the trace. Gaps longer than
// four periods without samples close every frame. It needs a profile built
// with Config.Timeline.
func WriteChromium(w io.Writer, p *Profile) error {
	hasTimeline := false
	for _, t := range p.Threads {
		hasTimeline = hasTimeline || len(t.Timeline) > 0
	}
	if !hasTimeline && len(p.Threads) > 0 {
		return ErrNoTimeline
	}
	// Frame names and categories are encoded once.
	names := make([][]byte, len(p.Frames))
	cats := make([][]byte, len(p.Frames))
	for i, f := range p.Frames {
		names[i] = appendJSONString(nil, f.Name)
		cats[i] = appendJSONString(nil, f.Module)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	b := make([]byte, 0, 4096)
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	pid := strconv.Itoa(p.ProcessID)
	first := true
	event := func(ph byte, fr int, ts time.Duration, tid string) {
		if !first {
			b = append(b, ',', '\n')
		}
		first = false
		b = append(b, `{"ph":"`...)
		b = append(b, ph)
		b = append(b, `","name":`...)
		b = append(b, names[fr]...)
		if ph == 'B' {
			b = append(b, `,"cat":`...)
			b = append(b, cats[fr]...)
		}
		b = append(b, `,"ts":`...)
		b = appendMicros(b, int64(ts))
		b = append(b, `,"pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, '}')
	}
	for _, t := range p.Threads {
		tid := strconv.FormatUint(t.ID, 10)
		if !first {
			b = append(b, ',', '\n')
		}
		first = false
		b = append(b, `{"ph":"M","name":"thread_name","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"name":"Thread `...)
		b = append(b, tid...)
		b = append(b, `"}}`...)
		var open []int // frames, root first
		var at time.Duration
		closeTo := func(n int, ts time.Duration) {
			for len(open) > n {
				event('E', open[len(open)-1], ts, tid)
				open = open[:len(open)-1]
			}
		}
		for _, r := range t.Timeline {
			r.Start = max(r.Start, at) // keep each thread's timestamps monotonic
			if r.Start > at+4*p.Period {
				closeTo(0, at)
			}
			frames := p.Stacks[r.Stack].Frames
			common := 0
			for common < len(open) && common < len(frames) && open[common] == frames[len(frames)-1-common] {
				common++
			}
			closeTo(common, r.Start)
			for i := len(frames) - 1 - common; i >= 0; i-- {
				open = append(open, frames[i])
				event('B', frames[i], r.Start, tid)
			}
			at = r.Start + time.Duration(r.Count)*p.Period
			if len(b) > 32<<10 {
				if _, err := bw.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		closeTo(0, at)
	}
	b = append(b, "]}\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}
