package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// TestConfigMeasure checks that a profile built for one measure
// (Config.Measure) exports what the full profile exports for it, in every
// format, on every capture (the external ones with CLRDIAG_CAPTURES), and
// that it left the other measures' events out.
//
// -short tests shortMeasureCaptures only: the smallest committed capture
// of each combination of measures, so that every measure is still tested
// with each other measure's events there to leave out (full mode checks
// that the list is that), and of objver4 one thread (shortMeasureThreads).
func TestConfigMeasure(t *testing.T) {
	read := func(data []byte, cfg Config) *Profile {
		t.Helper()
		p, err := Read(bytes.NewReader(data), cfg)
		var fe *nettrace.FormatError
		if p == nil || (err != nil && !errors.As(err, &fe)) {
			t.Fatal(err)
		}
		return p
	}
	rels := testcapture.AvailableTraces()
	if testing.Short() {
		rels = shortMeasureCaptures
	}
	smallest := smallestCommitted{} // by combination of measures
	tested := map[string]int{}
	var wb, gb bytes.Buffer // the outputs, reused (the largest are megabytes)
	for _, rel := range rels {
		data := testcapture.Load(t, rel)
		cfg := Config{Timeline: true}
		full := read(data, cfg)
		k := measuresOf(full)
		if k != "" {
			smallest.add(k, rel, len(data))
		}
		if thread, ok := shortMeasureThreads[rel]; ok && testing.Short() {
			cfg.Threads = []uint64{thread}
			if full = read(data, cfg); measuresOf(full) != k {
				t.Errorf("%s: thread %d has events of %s, the capture of %s: shortMeasureThreads must name a thread with events of every measure", rel, thread, measuresOf(full), k)
			}
		}
		for _, m := range MeasureInfos() {
			n, v := full.Events(m.Name)
			if n == 0 {
				continue
			}
			tested[m.Name]++
			ocfg := cfg
			ocfg.Measure = m.Name
			only := read(data, ocfg)
			if gn, gv := only.Events(m.Name); gn != n || gv != v {
				t.Errorf("%s: Measure %s: %d events worth %d, the full profile %d worth %d", rel, m.Name, gn, gv, n, v)
			}
			for _, o := range MeasureInfos() {
				sameEvents := (o.Name == MeasureWall || o.Name == MeasureCPU) == (m.Name == MeasureWall || m.Name == MeasureCPU)
				if o.Name == m.Name || sameEvents {
					continue
				}
				if gn, _ := only.Events(o.Name); gn != 0 {
					t.Errorf("%s: Measure %s kept %d events of %s", rel, m.Name, gn, o.Name)
				}
			}
			want, got := weightedOf(t, full, m.Name), weightedOf(t, only, m.Name)
			for _, f := range weighted.Formats() {
				if m.CheckFormat(f) != nil {
					continue
				}
				// The two outputs are written and put in canonical form
				// at once, on two cores where there are two.
				var w output
				done := make(chan struct{})
				go func() {
					defer close(done)
					w = canonOutput(f, want, &wb)
				}()
				g := canonOutput(f, got, &gb)
				<-done
				if (w.writeErr == nil) != (g.writeErr == nil) {
					t.Fatalf("%s: %s %s: errors %v and %v", rel, f.Name, m.Name, w.writeErr, g.writeErr)
				}
				if w.err != nil || g.err != nil {
					t.Fatalf("%s: %s %s: %v, %v", rel, f.Name, m.Name, w.err, g.err)
				}
				if !bytes.Equal(w.canon, g.canon) {
					t.Errorf("%s: %s of %s differs with Config.Measure (%d and %d bytes)", rel, f.Name, m.Name, len(g.canon), len(w.canon))
				}
			}
		}
	}
	for _, m := range []string{MeasureWall, MeasureCPU, MeasureAlloc} {
		if tested[m] == 0 {
			t.Errorf("no committed capture has events of %s", m)
		}
	}
	smallest.check(t, "shortMeasureCaptures", "of each combination of measures", shortMeasureCaptures)
}

// shortMeasureCaptures are the captures TestConfigMeasure tests with
// -short, sorted: of the committed captures with events of the same
// measures, the smallest (full mode checks the list). What Config.Measure
// leaves out depends on the kinds of events a capture has, not on how
// many: each combination of a measure with the others' events is tested,
// and every format of every measure. Left out: the other 10 workloads
// captures (other runtimes and collectors, the same measures),
// only_managed_samples (wall and cpu, as hot-3.1.2), and the 3 without
// events of any measure.
var shortMeasureCaptures = []string{
	"clrdiag/hot-3.1.2-linux-x64.nettrace",                                    // wall, cpu
	"clrdiag/workloads-8.0.34-linux-x64-default.clrdiag.nettrace.zip",         // wall, cpu, exceptions
	"clrdiag/workloads-8.0.34-linux-x64-gc-verbose.dotnet-trace.nettrace.zip", // alloc, exceptions
	"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace",                 // wall, cpu, contention; cut short
	"misc/net6.0.9-windows.nettrace",                                          // alloc
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",           // wall, cpu, alloc, contention
}

// output is a profile's output in a format, in canonical form
// (canonOutput), with the format's error (writeErr) and the canonical
// form's (err).
type output struct {
	canon         []byte
	writeErr, err error
}

// canonOutput writes wp in format f into buf, and returns the output in a
// form that does not depend on how the frames are numbered: the full
// profile has the frames of every measure's stacks, so pprof and
// speedscope, which number them, are compared by name (pprofCanon,
// speedscopeCanon); the others as written.
func canonOutput(f weighted.Format, wp *weighted.Profile, buf *bytes.Buffer) output {
	buf.Reset()
	o := output{writeErr: f.Write(buf, wp)}
	switch f.Name {
	case "pprof":
		pp, err := wp.Pprof()
		if err != nil {
			o.err = err
			return o
		}
		o.canon = []byte(pprofCanon(pp))
	case "speedscope":
		o.canon, o.err = speedscopeCanon(buf.Bytes())
	default:
		o.canon = buf.Bytes()
	}
	return o
}

// shortMeasureThreads names, of a capture TestConfigMeasure tests with
// -short, the one thread it reads (Config.Threads, in the full profile and
// the measure's): objver4, the one capture with events of every measure
// but exceptions, has 13 threads, and its wall timeline in every format
// took most of the test's time. Thread 10848 has events of each of the
// capture's measures (4,006 samples, 4,670 allocation ticks, a lock
// wait), which the test checks, so each measure is still tested with the
// others' events left out; full mode reads every thread.
var shortMeasureThreads = map[string]uint64{
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip": 10848,
}

// measuresOf names the measures p has events of.
func measuresOf(p *Profile) string {
	var names []string
	for _, m := range MeasureInfos() {
		if n, _ := p.Events(m.Name); n > 0 {
			names = append(names, m.Name)
		}
	}
	return strings.Join(names, ",")
}

// pprofCanon renders a pprof profile without its ids: the header, then
// one sorted line per sample (values, labels, the frames' names and
// modules from the leaf). Overloads of a method share one frame, named
// without the signature, whose address and signature are those of the
// overload seen first: they are left out, being what depends on which
// stacks were kept.
func pprofCanon(pp *profile.Profile) string {
	var b strings.Builder
	for _, st := range pp.SampleType {
		fmt.Fprintf(&b, "%s/%s ", st.Type, st.Unit)
	}
	fmt.Fprintf(&b, "%s/%s %d %d %d %q %q\n", pp.PeriodType.Type, pp.PeriodType.Unit, pp.Period, pp.TimeNanos, pp.DurationNanos, pp.DefaultSampleType, pp.Comments)
	var lines []string
	for _, s := range pp.Sample {
		var l strings.Builder
		fmt.Fprint(&l, s.Value, s.NumLabel, s.Label)
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				l.WriteByte(' ')
				l.WriteString(ln.Function.Name)
				l.WriteByte('|')
				l.WriteString(ln.Function.Filename)
			}
		}
		lines = append(lines, l.String())
	}
	slices.Sort(lines)
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// speedscopeFile is what weighted.WriteSpeedscope writes, every key of
// it: speedscopeCanon decodes it with DisallowUnknownFields, so that a key
// the writer adds fails the test until it is added here (and compared).
// Numbers keep their text.
type speedscopeFile struct {
	Schema             string      `json:"$schema"`
	Exporter           string      `json:"exporter"`
	Name               string      `json:"name"`
	ActiveProfileIndex json.Number `json:"activeProfileIndex"`
	Shared             struct {
		Frames []struct {
			Name string  `json:"name"`
			File *string `json:"file"`
		} `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type       string      `json:"type"`
		Name       string      `json:"name"`
		Unit       string      `json:"unit"`
		StartValue json.Number `json:"startValue"`
		EndValue   json.Number `json:"endValue"`
		Samples    intArrays   `json:"samples"`
		Weights    numberTexts `json:"weights"`
		Events     []struct {
			Type  string      `json:"type"`
			At    json.Number `json:"at"`
			Frame int         `json:"frame"`
		} `json:"events"`
	} `json:"profiles"`
}

// intArrays is a JSON array of arrays of non-negative integers (a
// speedscope file's samples: frame indexes), parsed by hand: encoding/json
// takes most of TestConfigMeasure's time on the large timelines.
type intArrays [][]int

func (a *intArrays) UnmarshalJSON(data []byte) error {
	err := fmt.Errorf("samples: not an array of arrays of frame indexes: %.40q", data)
	i := 0
	next := func() byte { // the next byte after white space, or 0
		for i < len(data) && strings.IndexByte(" \t\r\n", data[i]) >= 0 {
			i++
		}
		if i == len(data) {
			return 0
		}
		return data[i]
	}
	if string(data) == "null" {
		*a = nil
		return nil
	}
	if next() != '[' {
		return err
	}
	i++
	*a = [][]int{}
	if next() == ']' {
		return nil
	}
	for {
		if next() != '[' {
			return err
		}
		i++
		s := []int{}
		if next() == ']' {
			i++
		} else {
			for {
				next()
				j := i
				for i < len(data) && data[i] >= '0' && data[i] <= '9' {
					i++
				}
				if i == j || i-j > 1 && data[j] == '0' {
					return err
				}
				n, perr := strconv.Atoi(string(data[j:i]))
				if perr != nil {
					return err
				}
				s = append(s, n)
				if c := next(); c == ']' {
					i++
					break
				} else if c != ',' {
					return err
				}
				i++
			}
		}
		*a = append(*a, s)
		switch next() {
		case ']':
			if i++; next() != 0 {
				return err
			}
			return nil
		case ',':
			i++
		default:
			return err
		}
	}
}

// numberTexts is a JSON array of numbers, each kept as its text.
type numberTexts []string

func (a *numberTexts) UnmarshalJSON(data []byte) error {
	var nums []json.Number
	if err := json.Unmarshal(data, &nums); err != nil {
		return err
	}
	*a = make([]string, len(nums))
	for i, n := range nums {
		(*a)[i] = string(n)
	}
	return nil
}

// speedscopeCanon renders a speedscope file with its frames numbered by
// name and file rather than by index: the frame list is replaced by the
// sorted names (with files) of the frames the samples and events use, and
// each index by its name's place in that list, so two files whose frames
// are listed in another order, or with other unused frames, render alike
// exactly when their samples and events name the same frames. The samples
// of sampled profiles (aggregated: their order is not time) are sorted
// with their weights.
func speedscopeCanon(data []byte) ([]byte, error) {
	var doc speedscopeFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("speedscope: %w", err)
	}
	if dec.More() {
		return nil, errors.New("speedscope: data after the document")
	}
	names := make([]string, len(doc.Shared.Frames))
	for i, f := range doc.Shared.Frames {
		names[i] = f.Name + "|<nil>"
		if f.File != nil {
			names[i] = f.Name + "|" + *f.File
		}
	}
	used := map[string]int{} // the names the samples and events use
	for _, p := range doc.Profiles {
		for _, s := range p.Samples {
			for _, f := range s {
				if f >= len(names) {
					return nil, fmt.Errorf("speedscope: frame %d of %d", f, len(names))
				}
				used[names[f]] = 0
			}
		}
		for _, e := range p.Events {
			if e.Frame < 0 || e.Frame >= len(names) {
				return nil, fmt.Errorf("speedscope: frame %d of %d", e.Frame, len(names))
			}
			used[names[e.Frame]] = 0
		}
	}
	// A frame's number is its name's place among the used names, sorted.
	sorted := slices.Sorted(maps.Keys(used))
	for i, n := range sorted {
		used[n] = i
	}
	b := bytes.NewBuffer(make([]byte, 0, len(data)))
	fmt.Fprintf(b, "%q %q %q %s\n", doc.Schema, doc.Exporter, doc.Name, doc.ActiveProfileIndex)
	for _, n := range sorted {
		fmt.Fprintf(b, "frame %q\n", n)
	}
	for _, p := range doc.Profiles {
		fmt.Fprintf(b, "profile %q %q %q %s %s, %d samples (%v), %d weights (%v), %d events (%v)\n", p.Type, p.Name, p.Unit, p.StartValue, p.EndValue,
			len(p.Samples), p.Samples == nil, len(p.Weights), p.Weights == nil, len(p.Events), p.Events == nil)
		if len(p.Samples) != len(p.Weights) {
			return nil, fmt.Errorf("speedscope: profile %q has %d samples and %d weights", p.Name, len(p.Samples), len(p.Weights))
		}
		// Samples of equal weight are in the order of their stacks'
		// numbers: sorted, with their weights.
		pairs := make([]string, len(p.Samples))
		var l []byte
		for i, s := range p.Samples {
			l = append(append(l[:0], p.Weights[i]...), ':')
			for _, f := range s {
				l = strconv.AppendInt(append(l, ' '), int64(used[names[f]]), 10)
			}
			pairs[i] = string(l)
		}
		slices.Sort(pairs)
		for _, l := range pairs {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		for _, e := range p.Events {
			fmt.Fprintf(b, "event %q %s %d\n", e.Type, e.At, used[names[e.Frame]])
		}
	}
	return b.Bytes(), nil
}

// TestSpeedscopeCanon keeps speedscopeCanon to what TestConfigMeasure
// needs: a speedscope file of the same stacks with its frames listed in
// another order, and an unused frame more, renders alike; one whose
// stacks name other frames does not.
func TestSpeedscopeCanon(t *testing.T) {
	p, err := Read(bytes.NewReader(testcapture.Load(t, "clrdiag/hot-3.1.2-linux-x64.nettrace")), Config{Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	write := func(wp *weighted.Profile) string {
		t.Helper()
		var b bytes.Buffer
		if err := weighted.WriteSpeedscope(&b, wp); err != nil {
			t.Fatal(err)
		}
		c, err := speedscopeCanon(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return string(c)
	}
	// renumber copies wp with its frames in reverse order and an unused
	// frame first.
	renumber := func(wp *weighted.Profile) *weighted.Profile {
		c := *wp
		n := len(wp.Frames)
		c.Frames = append([]weighted.Frame{{Name: "Unused.Frame", Module: "unused.dll"}}, wp.Frames...)
		slices.Reverse(c.Frames[1:])
		c.Stacks = make([]weighted.Stack, len(wp.Stacks))
		for i, s := range wp.Stacks {
			c.Stacks[i].Frames = make([]int, len(s.Frames))
			for j, f := range s.Frames {
				c.Stacks[i].Frames[j] = n - f
			}
		}
		return &c
	}
	for _, m := range []string{MeasureWall, MeasureCPU} {
		wp := weightedOf(t, p, m)
		want := write(wp)
		if got := write(renumber(wp)); got != want {
			t.Errorf("%s: the same stacks with frames numbered otherwise render differently:\n%s", m, testcapture.LineDiff(want, got))
		}
		// Stacks that name another frame as their leaf: its caller.
		c, changed := renumber(wp), 0
		for _, s := range c.Stacks {
			if len(s.Frames) > 1 && s.Frames[0] != s.Frames[1] {
				s.Frames[0] = s.Frames[1]
				changed++
			}
		}
		if changed == 0 {
			t.Fatalf("%s: no stack of two frames", m)
		}
		if write(c) == want {
			t.Errorf("%s: %d stacks name another frame as their leaf and render alike", m, changed)
		}
	}
}
