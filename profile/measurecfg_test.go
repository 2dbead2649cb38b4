package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	tested := map[string]int{}
	for _, rel := range testcapture.AvailableTraces() {
		if _, external := testcapture.External[rel]; external && testing.Short() {
			continue // the committed captures have every measure; the others run in full mode
		}
		data := testcapture.Load(t, rel)
		full := read(data, Config{Timeline: true})
		for _, m := range MeasureInfos() {
			n, v := full.Events(m.Name)
			if n == 0 {
				continue
			}
			tested[m.Name]++
			only := read(data, Config{Timeline: true, Measure: m.Name})
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
				var wb, gb bytes.Buffer
				werr, gerr := f.Write(&wb, want), f.Write(&gb, got)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: %s %s: errors %v and %v", rel, f.Name, m.Name, werr, gerr)
				}
				// The frames are numbered differently (the full profile has
				// the frames of every measure's stacks): compare them by name.
				switch f.Name {
				case "pprof":
					wp, _ := want.Pprof()
					gp, _ := got.Pprof()
					wb.Reset()
					gb.Reset()
					wb.WriteString(pprofCanon(wp))
					gb.WriteString(pprofCanon(gp))
				case "speedscope":
					wb = *bytes.NewBufferString(speedscopeCanon(t, wb.Bytes()))
					gb = *bytes.NewBufferString(speedscopeCanon(t, gb.Bytes()))
				}
				if !bytes.Equal(wb.Bytes(), gb.Bytes()) {
					t.Errorf("%s: %s of %s differs with Config.Measure (%d and %d bytes)", rel, f.Name, m.Name, gb.Len(), wb.Len())
				}
			}
		}
	}
	for _, m := range []string{MeasureWall, MeasureCPU, MeasureAlloc} {
		if tested[m] == 0 {
			t.Errorf("no committed capture has events of %s", m)
		}
	}
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
		l := fmt.Sprint(s.Value, s.NumLabel, s.Label)
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				l += fmt.Sprintf(" %s|%s", ln.Function.Name, ln.Function.Filename)
			}
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// speedscopeCanon renders a speedscope file with its frame indexes
// replaced by the frames' names and files, without the frame list, and
// with the samples of sampled profiles (aggregated: their order is not
// time) sorted.
func speedscopeCanon(t *testing.T, data []byte) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	shared := doc["shared"].(map[string]any)
	frames := shared["frames"].([]any)
	name := func(i any) string {
		f := frames[int(i.(float64))].(map[string]any)
		return fmt.Sprint(f["name"], "|", f["file"])
	}
	delete(shared, "frames")
	for _, p := range doc["profiles"].([]any) {
		p := p.(map[string]any)
		if samples, ok := p["samples"].([]any); ok {
			// Samples of equal weight are in the order of their stacks'
			// numbers: sorted, with their weights.
			weights := p["weights"].([]any)
			pairs := make([]string, len(samples))
			for i, s := range samples {
				s := s.([]any)
				for i := range s {
					s[i] = name(s[i])
				}
				pairs[i] = fmt.Sprint(weights[i], s)
			}
			slices.Sort(pairs)
			p["samples"], p["weights"] = pairs, nil
		}
		if events, ok := p["events"].([]any); ok {
			for _, e := range events {
				e := e.(map[string]any)
				e["frame"] = name(e["frame"])
			}
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
