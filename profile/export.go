package profile

import (
	"bufio"
	"encoding/json"
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

// Speedscope JSON (https://www.speedscope.app/file-format-schema.json).
type (
	ssFile struct {
		Schema             string      `json:"$schema"`
		Shared             ssShared    `json:"shared"`
		Profiles           []ssProfile `json:"profiles"`
		Name               string      `json:"name,omitempty"`
		ActiveProfileIndex int         `json:"activeProfileIndex"`
		Exporter           string      `json:"exporter"`
	}
	ssShared struct {
		Frames []ssFrame `json:"frames"`
	}
	ssFrame struct {
		Name string `json:"name"`
		File string `json:"file,omitempty"`
	}
	ssProfile struct {
		Type       string  `json:"type"`
		Name       string  `json:"name"`
		Unit       string  `json:"unit"`
		StartValue int64   `json:"startValue"`
		EndValue   int64   `json:"endValue"`
		Samples    [][]int `json:"samples"`
		Weights    []int64 `json:"weights"`
	}
)

// SpeedscopeSchema is the $schema value of speedscope files.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// WriteSpeedscope writes the profile in speedscope's JSON format: one
// "sampled" profile per thread, weights in nanoseconds. With a timeline the
// samples are in time order (speedscope's Time Order view is then a
// timeline); without one each distinct stack appears once.
func WriteSpeedscope(w io.Writer, p *Profile, name string) error {
	f := ssFile{Schema: SpeedscopeSchema, Name: name, Exporter: "clrdiag"}
	for _, fr := range p.Frames {
		f.Shared.Frames = append(f.Shared.Frames, ssFrame{Name: fr.Name, File: fr.Module})
	}
	emptyFrame := -1
	rootFirst := func(s int) []int {
		frames := p.Stacks[s].Frames
		if len(frames) == 0 {
			if emptyFrame < 0 {
				emptyFrame = len(f.Shared.Frames)
				f.Shared.Frames = append(f.Shared.Frames, ssFrame{Name: noFrames})
			}
			return []int{emptyFrame}
		}
		out := make([]int, len(frames))
		for i, fr := range frames {
			out[len(frames)-1-i] = fr
		}
		return out
	}
	period := int64(p.Period)
	for _, t := range p.Threads {
		sp := ssProfile{Type: "sampled", Name: fmt.Sprintf("Thread %d", t.ID), Unit: "nanoseconds",
			Samples: [][]int{}, Weights: []int64{}}
		if len(t.Timeline) > 0 {
			sp.StartValue = int64(t.Timeline[0].Start)
			end := sp.StartValue
			for _, r := range t.Timeline {
				sp.Samples = append(sp.Samples, rootFirst(r.Stack))
				sp.Weights = append(sp.Weights, r.Count*period)
				end += r.Count * period
			}
			sp.EndValue = end
		} else {
			for _, s := range t.Samples {
				sp.Samples = append(sp.Samples, rootFirst(s.Stack))
				sp.Weights = append(sp.Weights, s.Count*period)
				sp.EndValue += s.Count * period
			}
		}
		f.Profiles = append(f.Profiles, sp)
	}
	if f.Shared.Frames == nil {
		f.Shared.Frames = []ssFrame{}
	}
	if f.Profiles == nil {
		f.Profiles = []ssProfile{}
	}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(f); err != nil {
		return err
	}
	return bw.Flush()
}

// Chromium trace-event JSON (chrome://tracing, Perfetto, Edge devtools).
type ctEvent struct {
	Name string         `json:"name,omitempty"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Pid  int            `json:"pid"`
	Tid  uint64         `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChromium writes the profile's timeline as Chromium trace-event JSON:
// per thread, a "B" event when a frame appears on the sampled stack and the
// matching "E" event when it leaves it, timestamps in microseconds from the
// start of the trace. Gaps longer than four periods without samples close
// every frame. It needs a profile built with Config.Timeline.
func WriteChromium(w io.Writer, p *Profile) error {
	hasTimeline := false
	for _, t := range p.Threads {
		hasTimeline = hasTimeline || len(t.Timeline) > 0
	}
	if !hasTimeline && len(p.Threads) > 0 {
		return ErrNoTimeline
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	bw.WriteString(`{"displayTimeUnit":"ms","traceEvents":[`)
	first := true
	emit := func(e ctEvent) error {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		return enc.Encode(e)
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	pid := p.ProcessID
	for _, t := range p.Threads {
		if err := emit(ctEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: t.ID,
			Args: map[string]any{"name": fmt.Sprintf("Thread %d", t.ID)}}); err != nil {
			return err
		}
		var open []int // frames, root first
		var at time.Duration
		closeTo := func(n int, ts time.Duration) error {
			for len(open) > n {
				fr := open[len(open)-1]
				open = open[:len(open)-1]
				if err := emit(ctEvent{Name: p.Frames[fr].Name, Ph: "E", Ts: us(ts), Pid: pid, Tid: t.ID}); err != nil {
					return err
				}
			}
			return nil
		}
		for _, r := range t.Timeline {
			r.Start = max(r.Start, at) // keep each thread's timestamps monotonic
			if r.Start > at+4*p.Period {
				if err := closeTo(0, at); err != nil {
					return err
				}
			}
			frames := p.Stacks[r.Stack].Frames
			common := 0
			for common < len(open) && common < len(frames) && open[common] == frames[len(frames)-1-common] {
				common++
			}
			if err := closeTo(common, r.Start); err != nil {
				return err
			}
			for i := len(frames) - 1 - common; i >= 0; i-- {
				fr := frames[i]
				open = append(open, fr)
				if err := emit(ctEvent{Name: p.Frames[fr].Name, Cat: p.Frames[fr].Module, Ph: "B", Ts: us(r.Start), Pid: pid, Tid: t.ID}); err != nil {
					return err
				}
			}
			at = r.Start + time.Duration(r.Count)*p.Period
		}
		if err := closeTo(0, at); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}
