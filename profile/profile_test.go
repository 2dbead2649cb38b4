package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/clrdiag/clrdiag/weighted/weightedtest"
)

func readSynth(t *testing.T, ptrSize int, cfg Config) *Profile {
	t.Helper()
	p, err := Read(bytes.NewReader(synthTrace(t, ptrSize)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func frameNames(p *Profile, s int) []string {
	var out []string
	for _, f := range p.Stacks[s].Frames {
		out = append(out, p.Frames[f].String())
	}
	return out
}

func TestSynthetic(t *testing.T) {
	for _, ptrSize := range []int{4, 8} {
		t.Run(fmt.Sprintf("ptr%d", ptrSize), func(t *testing.T) {
			p := readSynth(t, ptrSize, Config{})
			if p.DecodeErrors != 0 {
				t.Fatalf("decode errors: %d, first %v", p.DecodeErrors, p.FirstDecodeError)
			}
			if p.PointerSize != ptrSize || p.ProcessID != 42 {
				t.Errorf("header: ptr %d pid %d", p.PointerSize, p.ProcessID)
			}
			// Samples are 2 ms apart although the header says 1 ms.
			if p.Period != 2*time.Millisecond {
				t.Errorf("Period = %v, want 2ms (derived from timestamps)", p.Period)
			}
			if len(p.Threads) != 3 {
				t.Fatalf("%d threads, want 3", len(p.Threads))
			}
			got := map[uint64][2]int64{}
			for _, th := range p.Threads {
				got[th.ID] = [2]int64{th.Managed, th.External}
			}
			want := map[uint64][2]int64{100: {6, 0}, 200: {1, 3}, 300: {0, 1}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("samples by thread = %v, want %v", got, want)
			}
			th := p.Threads[0]
			if th.ID != 100 || len(th.Samples) != 1 || th.Period != 2*time.Millisecond {
				t.Fatalf("thread 100: %+v", th)
			}
			if s := frameNames(p, th.Samples[0].Stack); !slices.Equal(s, []string{"App!App.Worker.Leaf", "App!App.Worker.Work", "App!App.Program.Main"}) {
				t.Errorf("thread 100 stack = %v", s)
			}
			sym := p.Symbols
			if !sym.Rundown || sym.Methods != 4 || sym.RundownMethods != 4 || sym.SampleFrames != 29 || sym.ResolvedSampleFrames != 26 || sym.UnresolvedSampleFrames() != 3 {
				t.Errorf("symbols = %+v", sym)
			}
			var unresolved []string
			for _, f := range p.Frames {
				if !f.Resolved {
					unresolved = append(unresolved, f.Name)
				}
			}
			if !slices.Equal(unresolved, []string{"0xdead0000"}) {
				t.Errorf("unresolved frames = %v", unresolved)
			}
			if len(p.Exceptions) != 1 || p.Exceptions[0].Count != 2 || p.Exceptions[0].Type != "System.InvalidOperationException" ||
				len(p.Exceptions[0].Sites) != 1 || p.Frames[p.Exceptions[0].Sites[0].Frame].Name != "App.Worker.Work" {
				t.Errorf("exceptions = %+v", p.Exceptions)
			}
			g := p.GC
			if g.Collections != [3]int64{0, 1, 0} || g.Reasons["Induced"] != 1 || g.Pauses != 1 ||
				g.PauseTotal != 3*time.Millisecond || g.OtherSuspensions != 1 || g.OtherSuspensionTotal != time.Millisecond {
				t.Errorf("gc = %+v", g)
			}
			if len(g.Allocations) != 1 || g.Allocations[0] != (TypeAllocation{Type: "System.Byte[]", Bytes: 250000, Ticks: 1, Objects: 244}) {
				t.Errorf("allocations = %+v", g.Allocations)
			}
			c := p.Contention
			if c.Count != 1 || c.Total != 2*time.Millisecond || len(c.Sites) != 1 || p.Frames[c.Sites[0].Frame].Name != "App.Worker.Work" {
				t.Errorf("contention = %+v", c)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	p := readSynth(t, 8, Config{ManagedOnly: true})
	var n int64
	for _, th := range p.Threads {
		n += th.Managed + th.External
		if th.External != 0 {
			t.Errorf("thread %d kept %d external samples", th.ID, th.External)
		}
	}
	if n != 7 || len(p.Threads) != 2 || !p.ManagedOnly {
		t.Errorf("managed-only: %d samples in %d threads", n, len(p.Threads))
	}
	// The period still comes from all samples of the thread.
	if p.Period != 2*time.Millisecond {
		t.Errorf("managed-only period = %v", p.Period)
	}
	p = readSynth(t, 8, Config{Threads: []uint64{200}})
	if len(p.Threads) != 1 || p.Threads[0].ID != 200 {
		t.Errorf("thread filter kept %d threads", len(p.Threads))
	}
}

func TestFolded(t *testing.T) {
	var buf bytes.Buffer
	if err := weighted.WriteFolded(&buf, weightedOf(t, readSynth(t, 8, Config{}), "")); err != nil {
		t.Fatal(err)
	}
	want := "App!App.Program.Main;App!App.Lazy.Jitted 2000000\n" +
		"App!App.Program.Main;App!App.Worker.Work;0xdead0000 6000000\n" +
		"App!App.Program.Main;App!App.Worker.Work;App!App.Worker.Leaf 12000000\n" +
		"[no managed frames] 2000000\n"
	if buf.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestReport(t *testing.T) {
	p := readSynth(t, 8, Config{})
	r := BuildReport(p, ReportConfig{Top: 3})
	if len(r.Methods) != 3 || r.Methods[0].Method != "App.Worker.Leaf" || r.Methods[0].Exclusive != 12*time.Millisecond ||
		r.Methods[1].Method != "0xdead0000" || r.Methods[1].Resolved {
		t.Errorf("exclusive top = %+v", r.Methods)
	}
	// Thread 300 waited the whole trace (one External sample): left out of
	// the ranking by default, whose percentages are then of the 10
	// samples of the threads that ran.
	r = BuildReport(p, ReportConfig{Inclusive: true})
	if r.Methods[0].Method != "App.Program.Main" || r.Methods[0].Inclusive != 20*time.Millisecond || r.Methods[0].InclusivePct != 100 {
		t.Errorf("inclusive top = %+v", r.Methods[0])
	}
	if !r.WaitingLeftOut || len(r.Waiting) != 1 || r.Waiting[0].Threads != 1 || r.Waiting[0].Time != 2*time.Millisecond {
		t.Errorf("waiting threads: left out %v, %+v", r.WaitingLeftOut, r.Waiting)
	}
	for _, m := range r.Methods {
		if m.Method == r.Waiting[0].Method {
			t.Errorf("the waiting thread's %s is ranked: %+v", m.Method, r.Methods)
		}
	}
	// With only the waiting thread (--thread 300), no thread ran: its
	// samples are ranked, and pprof shows wall.
	if r := BuildReport(readSynth(t, 8, Config{Threads: []uint64{300}}), ReportConfig{}); r.WaitingLeftOut || len(r.Methods) == 0 || !r.Methods[0].Waiting {
		t.Errorf("only a waiting thread: left out %v, methods %+v", r.WaitingLeftOut, r.Methods)
	}
	if wp := weightedOf(t, readSynth(t, 8, Config{Threads: []uint64{300}}), ""); wp.PprofDefault != "" {
		t.Errorf("only a waiting thread: PprofDefault %q", wp.PprofDefault)
	} else if pp, err := wp.Pprof(); err != nil || pp.DefaultSampleType != MeasureWall {
		t.Errorf("only a waiting thread: pprof default %q (%v)", pp.DefaultSampleType, err)
	}
	r = BuildReport(p, ReportConfig{Inclusive: true, IncludeWaiting: true})
	if r.Methods[0].Method != "App.Program.Main" || r.Methods[0].Inclusive != 20*time.Millisecond ||
		r.Methods[0].InclusivePct < 90.9 || r.Methods[0].InclusivePct > 91 || r.WaitingLeftOut || len(r.Waiting) != 0 {
		t.Errorf("inclusive top with the waiting threads = %+v, left out %v %+v", r.Methods[0], r.WaitingLeftOut, r.Waiting)
	}
	if r.Samples != 11 || r.Threads[0].ID != 100 || r.Threads[0].Time != 12*time.Millisecond {
		t.Errorf("totals: %d samples, threads %+v", r.Samples, r.Threads)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Samples: 11 (7 managed, 4 external), period 2ms", "26 of 29 sample frames resolved",
		"gen1 1", "Pauses: 1, total 3.0ms", "System.InvalidOperationException", "at App!App.Worker.Work",
		"Lock contention: 1 waits, total 2.0ms", "250000"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Samples != 11 || back.GC.Pauses != 1 || back.Exceptions[0].Count != 2 || back.Period != 2*time.Millisecond {
		t.Errorf("JSON round trip: %+v", back)
	}
}

func TestReadDamaged(t *testing.T) {
	b := synthTrace(t, 8)
	p, err := Read(bytes.NewReader(b[:len(b)-40]), Config{})
	var fe *nettrace.FormatError
	if !errors.As(err, &fe) || p == nil {
		t.Fatalf("truncated: p=%v err=%v", p != nil, err)
	}
	if _, err := Read(strings.NewReader("not a trace"), Config{}); err == nil {
		t.Error("garbage: no error")
	}
}

// weightedOf is p.Weighted(measure), failing the test on error.
func weightedOf(t testing.TB, p *Profile, measure string) *weighted.Profile {
	t.Helper()
	wp, err := p.Weighted(measure)
	if err != nil {
		t.Fatal(err)
	}
	return wp
}

// checkPprof parses the pprof output and checks the sample types, the
// totals, the mapping and that no two samples have the same stack and
// labels.
func checkPprof(t *testing.T, p *Profile) *pprofile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := weighted.WritePprof(&buf, weightedOf(t, p, "")); err != nil {
		t.Fatal(err)
	}
	pp, err := pprofile.Parse(&buf)
	if err != nil {
		t.Fatalf("pprof does not parse: %v", err)
	}
	var types []string
	for _, st := range pp.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if want := []string{"samples/count", "wall/nanoseconds", "cpu/nanoseconds", "wall_ran/nanoseconds"}; !slices.Equal(types, want) {
		t.Errorf("pprof sample types %v, want %v", types, want)
	}
	var samples, wall, cpu, wallRan, want, managed, ran int64
	seen := map[string]bool{}
	for _, s := range pp.Sample {
		samples += s.Value[0]
		wall += s.Value[1]
		cpu += s.Value[2]
		wallRan += s.Value[3]
		if len(s.Location) == 0 {
			t.Fatal("pprof sample without locations")
		}
		key := fmt.Sprint(s.NumLabel["thread"])
		for _, l := range s.Location {
			key += fmt.Sprintf(";%d", l.ID)
			if l.Mapping == nil || l.Mapping.ID != 1 {
				t.Fatalf("location %d has mapping %v, want the main mapping", l.ID, l.Mapping)
			}
		}
		if seen[key] {
			t.Errorf("two pprof samples with the same thread and stack: %s", key)
		}
		seen[key] = true
	}
	waited := false
	for _, th := range p.Threads {
		want += th.Managed + th.External
		managed += th.Managed
		if th.Waiting {
			waited = true
		} else {
			ran += th.Managed + th.External
		}
	}
	if samples != want || wall != want*int64(p.Period) || cpu != managed*int64(p.Period) || wallRan != ran*int64(p.Period) || pp.Period != int64(p.Period) {
		t.Errorf("pprof totals: %d samples %d wall ns %d cpu ns %d wall_ran ns, want %d samples (%d managed, %d of threads that ran) at %v",
			samples, wall, cpu, wallRan, want, managed, ran, p.Period)
	}
	// pprof's default is what the report ranks: wall_ran when it leaves
	// waiting threads out.
	wantDefault := "wall"
	if p.ManagedOnly {
		wantDefault = "cpu"
	} else if waited && ran > 0 {
		wantDefault = "wall_ran"
	}
	if r := BuildReport(p, ReportConfig{}); pp.DefaultSampleType != wantDefault || r.WaitingLeftOut != (wantDefault == "wall_ran") {
		t.Errorf("pprof default %q, want %q; report leaves the waiting threads out: %v", pp.DefaultSampleType, wantDefault, r.WaitingLeftOut)
	}
	if len(pp.Mapping) != 1 || !pp.Mapping[0].HasFunctions || pp.Mapping[0].File == "" {
		t.Errorf("pprof mappings %+v, want one main mapping with functions", pp.Mapping)
	}
	for _, fn := range pp.Function {
		if !strings.Contains(fn.SystemName, fn.Name) {
			t.Errorf("function %q has system name %q", fn.Name, fn.SystemName)
		}
	}
	return pp
}

// checkSpeedscope checks the keys the schema requires, the frame indices,
// the "All threads" profile and that speedscope opens on the busiest
// thread.
func checkSpeedscope(t *testing.T, p *Profile) {
	t.Helper()
	var buf bytes.Buffer
	if err := weighted.WriteSpeedscope(&buf, weightedOf(t, p, "")); err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	if f["$schema"] != weighted.SpeedscopeSchema {
		t.Errorf("$schema = %v", f["$schema"])
	}
	shared, _ := f["shared"].(map[string]any)
	frames, ok := shared["frames"].([]any)
	if !ok {
		t.Fatal("no shared.frames")
	}
	for i, fr := range frames {
		if name, _ := fr.(map[string]any)["name"].(string); name == "" {
			t.Errorf("frame %d has no name", i)
		}
	}
	profiles, _ := f["profiles"].([]any)
	if len(profiles) != len(p.Threads)+1 {
		t.Fatalf("%d profiles for %d threads, want one more (All threads)", len(profiles), len(p.Threads))
	}
	var all, threads float64
	for i, pr := range profiles {
		m := pr.(map[string]any)
		for _, k := range []string{"type", "name", "unit", "startValue", "endValue", "samples", "weights"} {
			if _, ok := m[k]; !ok {
				t.Errorf("profile lacks %q", k)
			}
		}
		if m["type"] != "sampled" || m["unit"] != "nanoseconds" {
			t.Errorf("type %v unit %v", m["type"], m["unit"])
		}
		samples, weights := m["samples"].([]any), m["weights"].([]any)
		if len(samples) != len(weights) || len(samples) == 0 {
			t.Fatalf("%d samples, %d weights", len(samples), len(weights))
		}
		var sum float64
		for i, s := range samples {
			for _, idx := range s.([]any) {
				if k := int(idx.(float64)); k < 0 || k >= len(frames) {
					t.Fatalf("frame index %d out of range (%d frames)", k, len(frames))
				}
			}
			sum += weights[i].(float64)
		}
		if span := m["endValue"].(float64) - m["startValue"].(float64); span != sum {
			t.Errorf("endValue-startValue = %v, sum of weights %v", span, sum)
		}
		if i == 0 {
			if m["name"] != "All threads" {
				t.Errorf("first profile %q, want All threads", m["name"])
			}
			all = sum
		} else {
			threads += sum
		}
	}
	if all != threads {
		t.Errorf("All threads weighs %v, the threads %v", all, threads)
	}
	busiest := p.Threads[0]
	for _, th := range p.Threads {
		if th.Work() > busiest.Work() {
			busiest = th
		}
	}
	active := int(f["activeProfileIndex"].(float64))
	if name := profiles[active].(map[string]any)["name"]; name != fmt.Sprintf("Thread %d", busiest.ID) {
		t.Errorf("speedscope opens on %v, want the busiest thread %d", name, busiest.ID)
	}
}

// checkChromium converts p to Chromium trace-event JSON, validates it
// (validateTraceEvents) and returns the number of B events.
func checkChromium(t *testing.T, p *Profile) int {
	t.Helper()
	var buf bytes.Buffer
	if err := weighted.WriteChromium(&buf, weightedOf(t, p, "")); err != nil {
		t.Fatal(err)
	}
	begins, problems := weightedtest.ValidateTraceEvents(buf.Bytes())
	for i, pr := range problems {
		if i == 10 {
			t.Errorf("... and %d more", len(problems)-i)
			break
		}
		t.Error(pr)
	}
	return begins
}

func TestExportsSynthetic(t *testing.T) {
	p := readSynth(t, 8, Config{Timeline: true})
	pp := checkPprof(t, p)
	var names []string
	for _, fn := range pp.Function {
		names = append(names, fn.Name)
	}
	slices.Sort(names)
	if want := []string{"0xdead0000", "App.Lazy.Jitted", "App.Program.Main", "App.Worker.Leaf", "App.Worker.Work", weighted.NoFrames}; !slices.Equal(names, want) {
		t.Errorf("pprof functions = %v, want %v", names, want)
	}
	if pp.Mapping[0].File != "app" {
		t.Errorf("pprof main mapping %q, want the app's name", pp.Mapping[0].File)
	}
	checkSpeedscope(t, p)
	// Thread 100: one run of Main>Work>Leaf (3 B); thread 200: Main>Work>0xdead0000
	// (3 B) then Jitted under Main (1 B); thread 300: the pseudo-frame-less empty stack (0).
	if n := checkChromium(t, p); n != 7 {
		t.Errorf("chromium: %d B events, want 7", n)
	}
	if err := weighted.WriteChromium(&bytes.Buffer{}, weightedOf(t, readSynth(t, 8, Config{}), "")); !errors.Is(err, weighted.ErrNoTimeline) {
		t.Errorf("chromium without timeline: %v", err)
	}
	checkSpeedscope(t, readSynth(t, 8, Config{}))
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "ctl\x00\x01\n\r\t\x1f", "List`1[System.Int32]", "日本語😀", "bad\xffutf8"} {
		b := fastfmt.AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Errorf("%q -> %s -> %q", s, b, back)
		}
	}
	if got := string(fastfmt.AppendMicros(nil, 1234567)); got != "1234.567" {
		t.Errorf("appendMicros = %s", got)
	}
}

// Events the runtime never wrote (a gap in a thread's sequence numbers) are
// reported: in the profile, the notes and the report's header.
func TestDroppedEvents(t *testing.T) {
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: 8, ProcessID: 9})
	if err != nil {
		t.Fatal(err)
	}
	sample := &nettrace.Metadata{ID: 1, ProviderName: "Microsoft-DotNETCore-SampleProfiler", EventID: 0}
	if err := w.AddMetadata(sample); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStacks(1, [][]uint64{{0x1000}}); err != nil {
		t.Fatal(err)
	}
	for i, seq := range []uint32{1, 2, 10, 11} { // 3 to 9 dropped
		if err := w.WriteEvent(&nettrace.Event{Metadata: sample, ThreadID: 5, CaptureThreadID: 5, SequenceNumber: seq,
			Timestamp: int64(1000 + i*1_000_000), StackID: 1, Payload: (&wire.Builder{}).U32(2).B}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := Read(&buf, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if p.DroppedEvents != 7 {
		t.Fatalf("DroppedEvents = %d, want 7", p.DroppedEvents)
	}
	r := BuildReport(p, ReportConfig{})
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if r.DroppedEvents != 7 || !strings.Contains(text.String(), "7 events dropped by the runtime") ||
		!strings.Contains(text.String(), "Note: 7 events were dropped by the runtime") {
		t.Errorf("report does not tell of the dropped events:\n%s", text.String())
	}
}
