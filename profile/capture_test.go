package profile

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/clrdiag/clrdiag/weighted/weightedtest"
)

func readCapture(t *testing.T, rel string, cfg Config) *Profile {
	t.Helper()
	p, err := Read(bytes.NewReader(capture(t, rel)), cfg)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if p.DecodeErrors != 0 {
		t.Errorf("%s: %d decode errors, first %v", rel, p.DecodeErrors, p.FirstDecodeError)
	}
	return p
}

// With rundown, every sample frame of a .NET 5 trace resolves.
func TestCaptureOnlyManagedSamples(t *testing.T) {
	p := readCapture(t, "perfview/only_managed_samples.nettrace.zip", Config{Timeline: true})
	s := p.Symbols
	if !s.Rundown || s.SampleFrames == 0 || s.ResolvedSampleFrames != s.SampleFrames || s.ResolvedAddresses != s.Addresses {
		t.Errorf("symbols = %+v, want every frame resolved", s)
	}
	var managed, external int64
	for _, th := range p.Threads {
		managed += th.Managed
		external += th.External
	}
	if managed+external != 7423 {
		t.Errorf("%d samples, want the 7423 SampleProfiler events", managed+external)
	}
	if p.Period < 900_000 || p.Period > 2_000_000 {
		t.Errorf("period %v, want about 1 ms", p.Period)
	}
	if p.Runtime == nil || p.Runtime.VMMajorVersion != 5 {
		t.Errorf("runtime = %+v", p.Runtime)
	}
	checkPprof(t, p)
	checkSpeedscope(t, p)
	if checkChromium(t, p) == 0 {
		t.Error("chromium: no frames")
	}
	r := BuildReport(p, ReportConfig{Top: 5})
	if len(r.Methods) == 0 || !r.Methods[0].Resolved {
		t.Errorf("top methods = %+v", r.Methods)
	}
	t.Logf("period %v, %d threads, %d stacks, %d frames, top %s %.1f%%", p.Period, len(p.Threads), len(p.Stacks), len(p.Frames), r.Methods[0].Method, r.Methods[0].ExclusivePct)
}

// The zetslief trace has no samples, but its custom events carry stacks and
// the rundown resolves all of them.
func TestCaptureZetsliefPerf(t *testing.T) {
	p := readCapture(t, "zetslief/perf.nettrace", Config{})
	s := p.Symbols
	if !s.Rundown || s.EventFrames == 0 || s.ResolvedEventFrames != s.EventFrames {
		t.Errorf("symbols = %+v, want every event frame resolved", s)
	}
	if p.Runtime == nil || p.Runtime.VMMajorVersion != 8 {
		t.Errorf("runtime = %+v", p.Runtime)
	}
}

// VoiceMemo is a 32-bit trace: 4-byte stack addresses, rundown at the end.
func TestCaptureVoiceMemo32Bit(t *testing.T) {
	if testing.Short() {
		t.Skip("a 29.6 MB capture: full mode only (go test without -short)")
	}
	p := readCapture(t, "perfview/VoiceMemo.23092.nettrace.zip", Config{})
	s := p.Symbols
	if p.PointerSize != 4 {
		t.Fatalf("pointer size %d", p.PointerSize)
	}
	if !s.Rundown || s.SampleFrames == 0 || float64(s.ResolvedSampleFrames) < 0.99*float64(s.SampleFrames) {
		t.Errorf("symbols = %+v, want at least 99%% resolved", s)
	}
	for _, f := range p.Frames {
		if !f.Resolved {
			t.Logf("unresolved: %s", f.Name)
		}
	}
	t.Logf("VoiceMemo: %d of %d sample frames resolved, %d unresolved (%d of %d addresses)",
		s.ResolvedSampleFrames, s.SampleFrames, s.UnresolvedSampleFrames(), s.Addresses-s.ResolvedAddresses, s.Addresses)
	checkPprof(t, p)
	checkSpeedscope(t, p)
}

// The .NET Core 3.0 preview capture has no rundown: only methods jitted
// during the session resolve; the rest stay addresses, and are counted.
func TestCaptureNoRundown(t *testing.T) {
	p := readCapture(t, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip", Config{Timeline: true})
	s := p.Symbols
	if s.Rundown {
		t.Error("rundown reported in a trace without one")
	}
	if s.UnresolvedSampleFrames() == 0 || s.ResolvedSampleFrames == 0 || float64(s.ResolvedSampleFrames) > 0.2*float64(s.SampleFrames) {
		t.Errorf("symbols = %+v", s)
	}
	t.Logf("no rundown: %d of %d sample frames unresolved (%.1f%% resolved), %d of %d addresses unresolved",
		s.UnresolvedSampleFrames(), s.SampleFrames, 100*float64(s.ResolvedSampleFrames)/float64(s.SampleFrames),
		s.Addresses-s.ResolvedAddresses, s.Addresses)
	if p.GC.Collections[0] == 0 || len(p.GC.Allocations) == 0 || p.Contention.Count == 0 {
		t.Errorf("GC %+v, contention %+v", p.GC.Collections, p.Contention)
	}
	checkPprof(t, p)
	checkSpeedscope(t, p)
	checkChromium(t, p)
}

func BenchmarkCapture(b *testing.B) {
	for _, c := range []struct{ name, rel string }{
		{"samples", "perfview/only_managed_samples.nettrace.zip"},
		{"voicememo32", "perfview/VoiceMemo.23092.nettrace.zip"},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkCapture(b, capture(b, c.rel)) })
	}
}

func benchmarkCapture(b *testing.B, data []byte) {
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r, err := nettrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			var ev nettrace.Event
			for r.ReadEvent(&ev) == nil {
			}
		}
	})
	for _, f := range weighted.Formats() {
		b.Run("convert-"+f.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				p, err := Read(bytes.NewReader(data), Config{Timeline: f.Timeline})
				if err != nil {
					b.Fatal(err)
				}
				wp, err := p.Weighted("")
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Write(&out, wp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("report", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := Read(bytes.NewReader(data), Config{})
			if err != nil {
				b.Fatal(err)
			}
			if err := BuildReport(p, ReportConfig{}).WriteText(&bytes.Buffer{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// shortMax is the largest capture that the tests of every capture (every
// output, parallel and serial reads) read with -short: the larger ones
// take most of their time, and run in full mode.
const shortMax = 2 << 20

// smallestCommitted holds, by a key (the kinds of events, the measures),
// the smallest committed capture seen with it: what a test's -short list
// of captures must be, so that -short still takes every path full mode
// takes.
type smallestCommitted map[string]sizedCapture

type sizedCapture struct {
	rel  string
	size int
}

// add notes the capture rel of size bytes under key; captures that are not
// committed are left out (a clone without CLRDIAG_CAPTURES has only those).
func (s smallestCommitted) add(key, rel string, size int) {
	if _, committed := testcapture.Committed[rel]; !committed {
		return
	}
	if c, ok := s[key]; !ok || size < c.size {
		s[key] = sizedCapture{rel, size}
	}
}

// check fails t in full mode when short, the sorted -short list named
// name, is not the smallest capture of each key; of says what the keys
// are ("of each combination of measures").
func (s smallestCommitted) check(t *testing.T, name, of string, short []string) {
	t.Helper()
	if testing.Short() {
		return
	}
	want := make([]string, 0, len(s))
	for _, c := range s {
		want = append(want, c.rel)
	}
	slices.Sort(want)
	if !slices.Equal(want, short) {
		t.Errorf("%s must list the smallest committed capture %s:\n%q\nit lists\n%q", name, of, want, short)
	}
}

// eachShortCapture runs fn in a subtest per capture with the capture's
// bytes; a capture outside the repository is skipped when CLRDIAG_CAPTURES
// does not give it, and with -short one larger than shortMax (before it
// is read: unzipping the largest took longer than the tests of the others).
func eachShortCapture(t *testing.T, fn func(t *testing.T, rel string, data []byte)) {
	eachCaptureOf(t, nil, fn)
}

// eachCaptureOf is eachShortCapture that with -short, given a list of
// captures, skips the others too.
func eachCaptureOf(t *testing.T, short []string, fn func(t *testing.T, rel string, data []byte)) {
	for _, rel := range testcapture.Traces() {
		t.Run(rel, func(t *testing.T) {
			if !testcapture.Available(rel) {
				t.Skipf("%s: not available (set %s)", rel, testcapture.EnvVar)
			}
			if testing.Short() && short != nil && !slices.Contains(short, rel) {
				t.Skipf("%s: -short reads %d captures that have every kind of event this one has (full mode reads it)", rel, len(short))
			}
			if testing.Short() {
				if n := testcapture.Size(t, rel); n > shortMax {
					t.Skipf("%s: %d bytes, full mode only (go test without -short)", rel, n)
				}
			}
			fn(t, rel, capture(t, rel))
		})
	}
}

// Every capture converts to every format, in both measures, and each output
// keeps its format's rules: Chromium's trace-event rules (validateTraceEvents),
// speedscope's required keys, weights and busiest thread, pprof's sample
// types, totals and one sample per stack. A capture without samples says so
// in the notes. Damaged captures give the profile of what was read.
func TestEveryCapture(t *testing.T) {
	eachShortCapture(t, func(t *testing.T, rel string, data []byte) {
		p, err := Read(bytes.NewReader(data), Config{Timeline: true})
		if p == nil {
			t.Fatalf("no profile: %v", err)
		}
		if err != nil {
			t.Logf("damaged: %v", err)
		}
		a := p.Activity()
		t.Logf("%d samples on %d threads (%d waiting), %d stacks, %d frames, runtime %q, process %q, notes %q",
			a.Samples, len(p.Threads), a.WaitingThreads, len(p.Stacks), len(p.Frames), p.RuntimeVersion, p.ProcessName, p.Notes())
		if a.Samples == 0 {
			if notes := p.Notes(); len(notes) == 0 || notes[0] != NoSamplesAdvice {
				t.Errorf("no samples, notes %q", notes)
			}
			return
		}
		checkPprof(t, p)
		checkSpeedscope(t, p)
		if n := checkChromium(t, p); n == 0 {
			t.Error("chromium: no B events")
		}
		for _, mi := range MeasureInfos() {
			m := mi.Name
			wp := weightedOf(t, p, m)
			for _, f := range weighted.Formats() {
				if f.TimeOnly && !mi.Timeline {
					continue
				}
				var buf bytes.Buffer
				if err := f.Write(&buf, wp); err != nil {
					t.Errorf("%s %s: %v", f.Name, m, err)
				}
				if f.Name == "chromium" {
					if _, problems := weightedtest.ValidateTraceEvents(buf.Bytes()); len(problems) > 0 {
						t.Errorf("chromium %s: %q", m, problems[:min(5, len(problems))])
					}
				}
			}
			if err := BuildReport(p, ReportConfig{Measure: m}).WriteText(io.Discard); err != nil {
				t.Error(err)
			}
		}
	})
}
