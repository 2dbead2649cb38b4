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

// flushAt is the size at which the exporters hand their buffer to the
// writer.
const flushAt = 64 << 10

// WriteSpeedscope writes the profile in speedscope's JSON format
// (https://www.speedscope.app/file-format-schema.json): one "sampled"
// profile per thread, stacks root first, weights in nanoseconds. With a
// timeline the samples are in time order (speedscope's Time Order view is
// then a timeline); without one each distinct stack appears once.
func WriteSpeedscope(w io.Writer, p *Profile, name string) error {
	b := make([]byte, 0, flushAt+4096)
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, `{"$schema":`...)
	b = appendJSONString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"clrdiag","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"activeProfileIndex":0,"shared":{"frames":[`...)
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
		if len(b) >= flushAt {
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
	// Each stack's JSON array is encoded once, when first needed.
	stacks := stackArrays{p: p}
	for ti, t := range p.Threads {
		if ti > 0 {
			b = append(b, ',')
		}
		// Time-ordered runs when there is a timeline, else one entry per
		// distinct stack.
		var start, end int64
		if t.Timeline.n > 0 {
			start = t.Timeline.chunks[0][0].start
			end = start
			for _, c := range t.Timeline.chunks {
				for _, r := range c {
					end += int64(r.count) * period
				}
			}
		} else {
			for _, s := range t.Samples {
				end += s.Count * period
			}
		}
		b = append(b, `{"type":"sampled","name":"Thread `...)
		b = strconv.AppendUint(b, t.ID, 10)
		b = append(b, `","unit":"nanoseconds","startValue":`...)
		b = strconv.AppendInt(b, start, 10)
		b = append(b, `,"endValue":`...)
		b = strconv.AppendInt(b, end, 10)
		b = append(b, `,"samples":[`...)
		sep := false
		sample := func(stack int) error {
			if sep {
				b = append(b, ',')
			}
			sep = true
			b = append(b, stacks.get(stack)...)
			if len(b) >= flushAt {
				return flush()
			}
			return nil
		}
		weight := func(w int64) error {
			if sep {
				b = append(b, ',')
			}
			sep = true
			b = strconv.AppendInt(b, w, 10)
			if len(b) >= flushAt {
				return flush()
			}
			return nil
		}
		if t.Timeline.n > 0 {
			for _, c := range t.Timeline.chunks {
				for _, r := range c {
					if err := sample(int(r.stackKind >> 1)); err != nil {
						return err
					}
				}
			}
			b = append(b, `],"weights":[`...)
			sep = false
			for _, c := range t.Timeline.chunks {
				for _, r := range c {
					if err := weight(int64(r.count) * period); err != nil {
						return err
					}
				}
			}
		} else {
			for _, s := range t.Samples {
				if err := sample(s.Stack); err != nil {
					return err
				}
			}
			b = append(b, `],"weights":[`...)
			sep = false
			for _, s := range t.Samples {
				if err := weight(s.Count * period); err != nil {
					return err
				}
			}
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
	p    *Profile
	enc  []byte
	span [][2]int32 // enc[lo:hi] of each stack; hi 0 until encoded
}

func (s *stackArrays) get(stack int) []byte {
	if s.span == nil {
		s.span = make([][2]int32, len(s.p.Stacks))
	}
	if sp := s.span[stack]; sp[1] > 0 {
		return s.enc[sp[0]:sp[1]]
	}
	lo := len(s.enc)
	frames := s.p.Stacks[stack].Frames
	s.enc = append(s.enc, '[')
	if len(frames) == 0 {
		s.enc = strconv.AppendInt(s.enc, int64(len(s.p.Frames)), 10)
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

// WriteChromium writes the profile's timeline as Chromium trace-event JSON
// (chrome://tracing, Perfetto): per thread, a "B" event when a frame appears
// on the sampled stack and the matching "E" event when it leaves it,
// timestamps in microseconds from the start of the trace. Gaps longer than
// four periods without samples close every frame. It needs a profile built
// with Config.Timeline.
func WriteChromium(w io.Writer, p *Profile) error {
	hasTimeline := false
	for _, t := range p.Threads {
		hasTimeline = hasTimeline || t.Timeline.n > 0
	}
	if !hasTimeline && len(p.Threads) > 0 {
		return ErrNoTimeline
	}
	// Each frame's B and E events up to the timestamp are encoded once:
	// enc[begin[i]:end[i]] opens frame i, enc[end[i]:begin[i+1]] closes it.
	var enc []byte
	begin := make([]int, len(p.Frames)+1)
	end := make([]int, len(p.Frames))
	for i, f := range p.Frames {
		begin[i] = len(enc)
		enc = append(enc, ",\n{\"ph\":\"B\",\"name\":"...)
		enc = appendJSONString(enc, f.Name)
		enc = append(enc, `,"cat":`...)
		enc = appendJSONString(enc, f.Module)
		enc = append(enc, `,"ts":`...)
		end[i] = len(enc)
		enc = append(enc, ",\n{\"ph\":\"E\",\"name\":"...)
		enc = appendJSONString(enc, f.Name)
		enc = append(enc, `,"ts":`...)
	}
	begin[len(p.Frames)] = len(enc)
	b := make([]byte, 0, flushAt+4096)
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	pid := strconv.Itoa(p.ProcessID)
	var suffix, ts []byte // ,"pid":..,"tid":..} and the current timestamp
	var open []int        // frames, root first
	for ti, t := range p.Threads {
		tid := strconv.FormatUint(t.ID, 10)
		if ti > 0 {
			b = append(b, ',', '\n')
		}
		b = append(b, `{"ph":"M","name":"thread_name","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"name":"Thread `...)
		b = append(b, tid...)
		b = append(b, `"}}`...)
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
		for _, c := range t.Timeline.chunks {
			for _, r := range c {
				if len(b) >= flushAt {
					if _, err := w.Write(b); err != nil {
						return err
					}
					b = b[:0]
				}
				rs := max(time.Duration(r.start), at) // keep each thread's timestamps monotonic
				stack := int(r.stackKind >> 1)
				if rs > at+4*p.Period {
					if len(open) > 0 {
						ts = appendMicros(ts[:0], int64(at))
						closeTo(0)
					}
					openStack = -1
				}
				at = rs + time.Duration(r.count)*p.Period
				if stack == openStack {
					continue // no frame starts or ends
				}
				openStack = stack
				frames := p.Stacks[stack].Frames
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
