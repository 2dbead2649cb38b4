package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/speedscopetest"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/clrdiag/clrdiag/weighted/weightedtest"
)

// eventsTrace writes a trace with allocation ticks, exceptions and lock
// waits on threads 100, 200 and 300 (tickVersion is the GCAllocationTick
// version of the typed ticks: 4 reports object sizes, 3 does not):
//
//   - thread 100, Main>Work>Leaf: App.Big ticks of 200000 and 100000 bytes
//     (objects of 1000 bytes); 3 InvalidOperationException in Main>Work;
//     a 5 ms wait (version 0 stop) in Main>Work, then one in Main>Work>Leaf
//     from 40 ms that has not ended when the trace ends at 50 ms.
//   - thread 200, Main>Work: an App.Small tick of 150000 bytes (24-byte
//     objects) and a truncated tick (a decode error); a FormatException in Main>Work>Leaf and a version 0
//     exception without a type in Main>Work; a wait from 12 ms in
//     Main>Work>Leaf whose version 1 stop says 7 ms.
//   - thread 300, Main>Work: a version 1 tick of 100000 bytes without a
//     type; a version 0 stop without a start (left out) and a
//     version 1 stop of 2 ms without a start, in Main>Work.
func eventsTrace(t testing.TB, ptrSize int, tickVersion uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{PointerSize: ptrSize, ProcessID: 42,
		ExpectedCPUSamplingRate: 1000000, SyncTimeUTC: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	mds := map[[2]uint32]*nettrace.Metadata{}
	id := uint32(0)
	md := func(provider string, event, version uint32) *nettrace.Metadata {
		if provider == clrevents.ProviderRuntime {
			if m, ok := mds[[2]uint32{event, version}]; ok {
				return m
			}
		}
		id++
		m := &nettrace.Metadata{ID: id, ProviderName: provider, EventID: event, Version: version}
		if err := w.AddMetadata(m); err != nil {
			t.Fatal(err)
		}
		if provider == clrevents.ProviderRuntime {
			mds[[2]uint32{event, version}] = m
		}
		return m
	}
	seq := map[uint64]uint32{}
	write := func(m *nettrace.Metadata, thread uint64, ts int64, stack uint32, payload []byte) {
		seq[thread]++
		ev := &nettrace.Event{Metadata: m, ThreadID: thread, CaptureThreadID: thread, SequenceNumber: seq[thread],
			Timestamp: ts, StackID: stack, Payload: payload}
		if err := w.WriteEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteStacks(1, [][]uint64{
		{addrLeaf, addrWork, addrMain}, // 1
		{addrWork + 4, addrMain},       // 2
	}); err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	base := int64(1_000_000_000)
	write(md("Microsoft-DotNETCore-EventPipe", 1, 0), 100, base, 0, (&wire.Builder{}).UTF16Z(`dotnet /app/App.dll`).B)
	tick := func(amount uint64, name string, size uint64) []byte {
		p := (&wire.Builder{PtrSize: ptrSize}).U32(uint32(amount)).U32(0).U16(9).U64(amount).Ptr(0x5000 + uint64(len(name))).UTF16Z(name).U32(0)
		if tickVersion >= 3 {
			p.Ptr(0x6000)
		}
		if tickVersion >= 4 {
			p.U64(size)
		}
		return p.B
	}
	tickMD := md(clrevents.ProviderRuntime, 10, tickVersion)
	write(tickMD, 100, base+ms, 1, tick(200000, "App.Big", 1000))
	write(tickMD, 100, base+2*ms, 1, tick(100000, "App.Big", 1000))
	write(tickMD, 200, base+3*ms, 2, tick(150000, "App.Small", 24))
	write(md(clrevents.ProviderRuntime, 10, 1), 300, base+4*ms, 2, (&wire.Builder{}).U32(100000).U32(0).U16(9).B)
	write(tickMD, 200, base+5*ms, 2, tick(100000, "App.Cut", 24)[:20])

	exc := func(typ string) []byte {
		return (&wire.Builder{PtrSize: ptrSize}).UTF16Z(typ).UTF16Z("boom").Ptr(addrWork + 4).U32(0x80131509).U16(0).U16(9).B
	}
	excMD := md(clrevents.ProviderRuntime, 80, 1)
	for i := range int64(3) {
		write(excMD, 100, base+(6+i)*ms, 2, exc("System.InvalidOperationException"))
	}
	write(excMD, 200, base+6*ms, 1, exc("System.FormatException"))
	write(md(clrevents.ProviderRuntime, 80, 0), 200, base+7*ms, 2, nil)

	start := md(clrevents.ProviderRuntime, 81, 1)
	stop0 := md(clrevents.ProviderRuntime, 91, 0)
	stop1 := md(clrevents.ProviderRuntime, 91, 1)
	flags := (&wire.Builder{}).U8(0).U16(9).B
	write(start, 100, base+10*ms, 2, flags)
	write(start, 200, base+12*ms, 1, flags)
	write(stop0, 100, base+15*ms, 0, flags)
	write(stop0, 300, base+16*ms, 0, flags)
	write(stop1, 300, base+18*ms, 2, (&wire.Builder{}).U8(0).U16(9).U64(math.Float64bits(2e6)).B)
	write(stop1, 200, base+30*ms, 1, (&wire.Builder{}).U8(0).U16(9).U64(math.Float64bits(7e6)).B)
	write(start, 100, base+40*ms, 1, flags)

	write(md(clrevents.ProviderRundown, 154, 1), 300, base+50*ms, 0, modulePayload(7, `/app/App.dll`))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+50*ms, 0, methodPayload(0x10000000, 0x100, 7, "App.Program", "Main"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+50*ms, 0, methodPayload(0x10001000, 0x100, 7, "App.Worker", "Work"))
	write(md(clrevents.ProviderRundown, 144, 2), 300, base+50*ms, 0, methodPayload(0x10002000, 0x100, 7, "App.Worker", "Leaf"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readEvents(t *testing.T, ptrSize int, tickVersion uint32, cfg Config) *Profile {
	t.Helper()
	p, err := Read(bytes.NewReader(eventsTrace(t, ptrSize, tickVersion)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// folded returns the folded output of the measure.
func foldedOf(t *testing.T, p *Profile, measure string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := weighted.WriteFolded(&buf, weightedOf(t, p, measure)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestEventMeasures(t *testing.T) {
	for _, ptrSize := range []int{4, 8} {
		t.Run(fmt.Sprintf("ptr%d", ptrSize), func(t *testing.T) {
			p := readEvents(t, ptrSize, 4, Config{Timeline: true})
			if p.DecodeErrors != 1 {
				t.Errorf("decode errors %d (%v), want the truncated tick", p.DecodeErrors, p.FirstDecodeError)
			}
			const main, work, leaf = "App!App.Program.Main", "App!App.Worker.Work", "App!App.Worker.Leaf"
			want := strings.Join([]string{
				main + ";" + work + ";" + leaf + ";App.Big 300000",
				main + ";" + work + ";App.Small 150000",
				main + ";" + work + ";" + typeNotReported + " 100000", ""}, "\n")
			if got := foldedOf(t, p, MeasureAlloc); got != want {
				t.Errorf("alloc folded:\n%s\nwant:\n%s", got, want)
			}
			if p.Allocs != (AllocStats{Ticks: 4, Sized: 3}) {
				t.Errorf("alloc stats %+v", p.Allocs)
			}
			// A version 1 tick reports no size: objects are not estimated.
			if got := p.GC.Allocations; len(got) != 3 || got[0] != (TypeAllocation{Type: "App.Big", Bytes: 300000, Ticks: 2}) {
				t.Errorf("allocations by type %+v", got)
			}
			want = strings.Join([]string{
				main + ";" + work + ";" + leaf + ";System.FormatException 1",
				main + ";" + work + ";System.InvalidOperationException 3",
				main + ";" + work + ";" + typeNotReported + " 1", ""}, "\n")
			if got := foldedOf(t, p, MeasureExceptions); got != want {
				t.Errorf("exceptions folded:\n%s\nwant:\n%s", got, want)
			}
			// Waits: 5 ms (thread 100) and 2 ms (thread 300) in Main>Work,
			// 7 ms (thread 200) and 10 ms unfinished (thread 100) in
			// Main>Work>Leaf.
			want = strings.Join([]string{
				main + ";" + work + " 7000000",
				main + ";" + work + ";" + leaf + " 17000000", ""}, "\n")
			if got := foldedOf(t, p, MeasureContention); got != want {
				t.Errorf("contention folded:\n%s\nwant:\n%s", got, want)
			}
			c := p.Contention
			if c.Count != 4 || c.Total != 24*time.Millisecond || c.Max != 10*time.Millisecond || c.Unfinished != 1 ||
				c.UnfinishedTotal != 10*time.Millisecond || c.StopsWithoutStart != 1 || len(c.Sites) != 2 {
				t.Errorf("contention %+v", c)
			}
			notes := strings.Join(p.NotesFor(MeasureContention), "\n")
			if !strings.Contains(notes, "1 lock waits had not ended when the trace ended") || !strings.Contains(notes, "1 lock waits began before the trace") {
				t.Errorf("contention notes: %s", notes)
			}
			if len(p.Exceptions) != 3 || p.Exceptions[0].Type != "System.InvalidOperationException" || p.Exceptions[0].Count != 3 {
				t.Errorf("exceptions %+v", p.Exceptions)
			}

			// The thread filter applies to the events.
			q := readEvents(t, ptrSize, 4, Config{Threads: []uint64{200}})
			if n, _ := q.Events(MeasureAlloc); n != 1 {
				t.Errorf("thread 200: %d allocation ticks, want 1", n)
			}
			if n, v := q.Events(MeasureContention); n != 1 || v != int64(7*time.Millisecond) {
				t.Errorf("thread 200: %d waits of %v", n, time.Duration(v))
			}
		})
	}
}

func TestAllocObjects(t *testing.T) {
	// Threads 100 and 200 have only version 4 ticks, with sizes.
	p := readEvents(t, 8, 4, Config{Threads: []uint64{100, 200}})
	wp := weightedOf(t, p, MeasureAlloc)
	var types []string
	for _, ty := range wp.Types {
		types = append(types, ty.Type+"/"+ty.Unit)
	}
	if strings.Join(types, ",") != "samples/count,alloc_objects/count,alloc_space/bytes" || wp.Types[wp.Default].Type != "alloc_space" {
		t.Fatalf("types %v default %d", types, wp.Default)
	}
	objects := map[string]int64{}
	for _, g := range wp.Groups {
		for _, s := range g.Samples {
			objects[wp.Frames[wp.Stacks[s.Stack].Frames[0]].Name] += s.Values[1]
		}
	}
	// 200000/1000 + 100000/1000 and 150000/24 rounded.
	if objects["App.Big"] != 300 || objects["App.Small"] != 6250 {
		t.Errorf("alloc_objects %v", objects)
	}
	// Version 3 ticks (.NET Core 3.x) report no sizes: no alloc_objects.
	p = readEvents(t, 8, 3, Config{})
	wp = weightedOf(t, p, MeasureAlloc)
	if len(wp.Types) != 2 || wp.Types[1].Type != "alloc_space" {
		t.Errorf("version 3 types %v", wp.Types)
	}
	if notes := strings.Join(wp.Comments, "\n"); !strings.Contains(notes, "alloc_objects is not estimated") {
		t.Errorf("comments: %s", notes)
	}
}

// Each event measure converts to every format, and the outputs hold up in
// their consumers' terms: pprof parses with the sample types and totals,
// speedscope conforms to its schema, Chromium draws the lock waits.
func TestEventExports(t *testing.T) {
	p := readEvents(t, 8, 4, Config{Timeline: true})
	for _, measure := range []string{MeasureAlloc, MeasureContention, MeasureExceptions} {
		t.Run(measure, func(t *testing.T) {
			wp := weightedOf(t, p, measure)
			var buf bytes.Buffer
			if err := weighted.WritePprof(&buf, wp); err != nil {
				t.Fatal(err)
			}
			pp, err := pprofile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			_, value := p.Events(measure)
			var sum int64
			for _, s := range pp.Sample {
				sum += s.Value[wp.Default]
			}
			if sum != value || pp.DefaultSampleType != wp.Types[wp.Default].Type {
				t.Errorf("pprof total %d (want %d), default %q", sum, value, pp.DefaultSampleType)
			}
			buf.Reset()
			if err := weighted.WriteSpeedscope(&buf, wp); err != nil {
				t.Fatal(err)
			}
			speedscopetest.Validate(t, buf.Bytes())
			var ss struct {
				Profiles []struct {
					Name    string  `json:"name"`
					Weights []int64 `json:"weights"`
				} `json:"profiles"`
			}
			if err := json.Unmarshal(buf.Bytes(), &ss); err != nil {
				t.Fatal(err)
			}
			var all, threads int64
			for i, pr := range ss.Profiles {
				for _, w := range pr.Weights {
					if i == 0 {
						all += w
					} else {
						threads += w
					}
				}
			}
			if all != value || threads != value {
				t.Errorf("speedscope: All threads %d, threads %d, want %d", all, threads, value)
			}
			buf.Reset()
			err = weighted.WriteChromium(&buf, wp)
			if measure != MeasureContention {
				if !errors.Is(err, weighted.ErrNoTimeline) {
					t.Errorf("chromium of %s: %v", measure, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			begins, problems := weightedtest.ValidateTraceEvents(buf.Bytes())
			if len(problems) > 0 || begins == 0 {
				t.Errorf("chromium: %d B events, problems %v", begins, problems)
			}
		})
	}
	f, _ := weighted.LookupFormat("chromium")
	m, _ := LookupMeasure(MeasureAlloc)
	var can []string // the formats that do not draw only time
	for _, o := range weighted.Formats() {
		if !o.TimeOnly {
			can = append(can, o.Name)
		}
	}
	if err := m.CheckFormat(f); err == nil || !strings.Contains(err.Error(), "use "+strings.Join(can, ", ")) {
		t.Errorf("chromium of alloc: %v", err)
	}
	m, _ = LookupMeasure(MeasureContention)
	if err := m.CheckFormat(f); err != nil {
		t.Errorf("chromium of contention: %v", err)
	}
}

// The lock waits are each thread's Runs, in time order, as long as they
// waited.
func TestContentionRuns(t *testing.T) {
	p := readEvents(t, 8, 4, Config{Timeline: true})
	wp := weightedOf(t, p, MeasureContention)
	got := map[uint64][]string{}
	for _, g := range wp.Groups {
		for r := range g.Runs {
			got[g.ThreadID] = append(got[g.ThreadID], fmt.Sprintf("%v+%v", r.Start, time.Duration(r.Count*wp.Period)))
		}
	}
	want := map[uint64][]string{100: {"10ms+5ms", "40ms+10ms"}, 200: {"12ms+7ms"}, 300: {"16ms+2ms"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestEventReport(t *testing.T) {
	p := readEvents(t, 8, 4, Config{})
	r := BuildReport(p, ReportConfig{Measure: MeasureAlloc})
	if r.Unit != "bytes" || len(r.Methods) != 3 || r.Methods[0].Method != "App.Worker.Leaf" || r.Methods[0].ExclusiveValue != 300000 ||
		r.Methods[1].Method != "App.Worker.Work" || r.Methods[1].ExclusiveValue != 250000 || r.Methods[2].InclusiveValue != 550000 {
		t.Errorf("alloc methods %+v", r.Methods)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Top methods by exclusive allocated bytes", "  300 kB     54.5  300 kB     54.5   App!App.Worker.Leaf", "  Allocations (sampled every ~100 KiB)\n    Bytes   Ticks  Type\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	r = BuildReport(p, ReportConfig{Measure: MeasureContention, Inclusive: true})
	if r.Unit != "nanoseconds" || r.Methods[0].Method != "App.Program.Main" || r.Methods[0].Inclusive != 24*time.Millisecond {
		t.Errorf("contention methods %+v", r.Methods)
	}
	// A trace without the events says how to collect them.
	empty := readSynth(t, 8, Config{})
	var ne *NoEventsError
	if err := empty.Check(MeasureContention); err != nil {
		t.Errorf("synth has a lock wait: %v", err)
	}
	q := readEvents(t, 8, 4, Config{Threads: []uint64{999}})
	if err := q.Check(MeasureAlloc); !errors.As(err, &ne) || !strings.Contains(err.Error(), "--profile gc-verbose") {
		t.Errorf("Check(alloc) of nothing: %v", err)
	}
	if err := q.Check(MeasureWall); !errors.As(err, &ne) || err.Error() != NoSamplesAdvice {
		t.Errorf("Check(wall) of nothing: %v", err)
	}
	if err := q.Check("heap"); err == nil || !strings.Contains(err.Error(), "wall, cpu, alloc, contention, exceptions") {
		t.Errorf("Check(heap): %v", err)
	}
}

// The in-place readers of GCAllocationTick and ExceptionThrown agree with
// the generated decoders on whatever they accept.
func FuzzAllocTickFastPath(f *testing.F) {
	for _, v := range []uint8{2, 3, 4} {
		for _, ps := range []int{4, 8} {
			p := (&wire.Builder{PtrSize: ps}).U32(1).U32(0).U16(9).U64(123456).Ptr(0x5000).UTF16Z("App.Type").U32(0)
			if v >= 3 {
				p.Ptr(0x6000)
			}
			if v >= 4 {
				p.U64(48)
			}
			f.Add(p.B, v, ps == 8)
		}
	}
	f.Fuzz(func(t *testing.T, pl []byte, version uint8, ptr8 bool) {
		ps := 4
		if ptr8 {
			ps = 8
		}
		// Twice through the cached reader (the second time the type is a
		// recent one) and once through parseAllocTick: each accepts only
		// what the decoder decodes, and reads the same.
		var acc eventAcc
		for i := range 3 {
			var tk allocTick
			var ok bool
			leaf := int32(-1)
			if i < 2 {
				tk.amount, tk.size, leaf, ok = acc.allocTick(pl, version, ps)
			} else {
				tk, ok = parseAllocTick(pl, version, ps)
			}
			if !ok {
				continue
			}
			a, err := clrevents.DecodeGCAllocationTick(pl, version, ps)
			if err != nil {
				t.Fatalf("fast path %d accepted what the decoder refuses: %v", i, err)
			}
			name := a.TypeName
			if name == "" {
				name = typeNotReported
			}
			if tk.amount != a.AllocationAmount || tk.size != a.ObjectSize || (i == 2 && (tk.typeID != a.TypeID || decodeUTF16(tk.name) != a.TypeName)) ||
				(i < 2 && acc.leaves[leaf] != name) {
				t.Fatalf("fast path %d %+v leaf %d, decoder %+v", i, tk, leaf, a)
			}
		}
	})
}

func FuzzExceptionFastPath(f *testing.F) {
	for _, ps := range []int{4, 8} {
		f.Add((&wire.Builder{PtrSize: ps}).UTF16Z("System.Exception").UTF16Z("m").Ptr(1).U32(2).U16(3).U16(4).B, uint8(1), ps == 8)
	}
	f.Fuzz(func(t *testing.T, pl []byte, version uint8, ptr8 bool) {
		ps := 4
		if ptr8 {
			ps = 8
		}
		name, ok := parseExceptionType(pl, version, ps)
		if !ok {
			return
		}
		x, err := clrevents.DecodeExceptionThrown(pl, version, ps)
		if err != nil {
			t.Fatalf("fast path accepted what the decoder refuses: %v", err)
		}
		if decodeUTF16(name) != x.ExceptionType {
			t.Fatalf("fast path %q, decoder %q", decodeUTF16(name), x.ExceptionType)
		}
	})
}

func decodeUTF16(b []byte) string { return wire.DecodeUTF16(b) }

func TestUTF16zLen(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want int
	}{
		{nil, -1}, {[]byte{0}, -1}, {[]byte{0, 0}, 0}, {[]byte{'A', 0, 0, 0}, 2},
		{[]byte{'A', 0, 0, 1, 0, 0}, 4}, // U+0100 after 'A': zero bytes at an odd offset
		{[]byte{'A', 0, 0, 1, 0}, -1},   // no NUL at an even offset
		{[]byte{0, 1, 0, 0, 'x'}, 2},    // U+0100 first
		{[]byte{'a', 0, 'b', 0, 0, 0, 0, 0}, 4},
	} {
		if got := utf16zLen(c.b); got != c.want {
			t.Errorf("utf16zLen(%v) = %d, want %d", c.b, got, c.want)
		}
	}
}
