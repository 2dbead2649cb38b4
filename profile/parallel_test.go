package profile

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// parallelConfigs are the settings the parallel reader is tested with:
// several workers from the first block, one worker with one block in
// flight, and a serial start that hands over in the middle.
func parallelConfigs(size int) []nettrace.ParallelConfig {
	return []nettrace.ParallelConfig{
		{Workers: 3, MaxInFlight: 4, SerialBytes: -1},
		{Workers: 1, MaxInFlight: 1, SerialBytes: -1},
		{Workers: 2, SerialBytes: int64(size / 3)},
	}
}

// convertAll renders p in every format of every measure it has events of,
// and its report in text and JSON, into one buffer per output.
func convertAll(t *testing.T, p *Profile) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, m := range MeasureInfos() {
		wp, err := p.Weighted(m.Name)
		if err != nil {
			out[m.Name] = []byte(err.Error())
			continue
		}
		for _, f := range weighted.Formats() {
			if m.CheckFormat(f) != nil {
				continue
			}
			var b bytes.Buffer
			if err := f.Write(&b, wp); err != nil {
				fmt.Fprintf(&b, "error: %v", err)
			}
			out[f.Name+"-"+m.Name] = b.Bytes()
		}
	}
	var text, js bytes.Buffer
	r := BuildReport(p, ReportConfig{})
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	out["report"], out["report-json"] = text.Bytes(), js.Bytes()
	return out
}

// sameRead fails unless reading data in parallel with pcfg gives the
// profile, error and dropped-event count of reading it serially; with
// outputs, every output's bytes too.
func sameRead(t *testing.T, name string, data []byte, cfg Config, pcfg nettrace.ParallelConfig, outputs bool) {
	t.Helper()
	want, werr := read(bytes.NewReader(data), cfg, nettrace.ParallelConfig{SerialBytes: int64(len(data)) + 1})
	got, gerr := read(bytes.NewReader(data), cfg, pcfg)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s %+v: parallel read ends with %v, serial with %v", name, pcfg, gerr, werr)
	}
	var wfe, gfe *nettrace.FormatError
	if errors.As(werr, &wfe) != errors.As(gerr, &gfe) || (wfe != nil && wfe.Offset != gfe.Offset) {
		t.Fatalf("%s %+v: parallel error %#v, serial %#v", name, pcfg, gerr, werr)
	}
	if want == nil || got == nil {
		if want != got {
			t.Fatalf("%s %+v: parallel profile %v, serial %v", name, pcfg, got, want)
		}
		return
	}
	if got.DroppedEvents != want.DroppedEvents {
		t.Fatalf("%s %+v: %d dropped events in parallel, %d serially", name, pcfg, got.DroppedEvents, want.DroppedEvents)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %+v: the parallel read's profile differs from the serial one's", name, pcfg)
	}
	if !outputs {
		return
	}
	gout, wout := convertAll(t, got), convertAll(t, want)
	if len(gout) != len(wout) {
		t.Fatalf("%s %+v: %d outputs in parallel, %d serially", name, pcfg, len(gout), len(wout))
	}
	for k, w := range wout {
		if g := gout[k]; !bytes.Equal(g, w) {
			t.Errorf("%s %+v: %s differs (%d bytes in parallel, %d serially):\n%s", name, pcfg, k, len(g), len(w), testcapture.LineDiff(string(w), string(g)))
		}
	}
}

// TestReadParallelSameProfile converts every capture (the committed ones,
// and with CLRDIAG_CAPTURES the others) on several workers and compares
// the profile and every output, byte for byte, with the serial read's, in
// each measure's Config and with thread and managed filters. -short reads
// shortParallelCaptures only, tries every parallel configuration on the
// first Config and 3 workers on the others (full mode: every capture,
// every configuration on every Config, and a check of the list).
func TestReadParallelSameProfile(t *testing.T) {
	smallest := smallestCommitted{} // by format and kinds of events
	eachCaptureOf(t, shortParallelCaptures, func(t *testing.T, rel string, data []byte) {
		if _, committed := testcapture.Committed[rel]; committed && !testing.Short() && len(data) <= shortMax {
			smallest.add(eventKinds(t, data), rel, len(data))
		}
		cfgs := []Config{{Timeline: true}, {ManagedOnly: true, Timeline: true, MaxTimelineRuns: 100}}
		for _, m := range MeasureInfos() {
			cfgs = append(cfgs, Config{Measure: m.Name, Timeline: m.Name == MeasureWall})
		}
		probe, _ := Read(bytes.NewReader(data), Config{})
		if probe != nil && len(probe.Threads) > 1 {
			cfgs = append(cfgs, Config{Threads: []uint64{probe.Threads[1].ID}, Timeline: true})
		}
		for i, cfg := range cfgs {
			for k, pcfg := range parallelConfigs(len(data)) {
				if testing.Short() && i > 0 && k > 0 {
					continue // -short: the other configurations with 3 workers only
				}
				sameRead(t, fmt.Sprintf("%s %+v", rel, cfg), data, cfg, pcfg, i == 0 || pcfg.Workers == 3)
			}
		}
	})
	if !t.Failed() {
		smallest.check(t, "shortParallelCaptures", "up to shortMax of each format and kinds of events", shortParallelCaptures)
	}
}

// shortParallelCaptures are the captures TestReadParallelSameProfile reads
// with -short, sorted: of the committed captures up to shortMax of the
// same format with the same kinds of events (eventKinds), the smallest
// (full mode checks the list). The parallel read's parts keep, drop or
// count an event by its kind, so these take every path the others take.
// Left out: the other 10 workloads captures (other runtimes and
// collectors, the same kinds), and the external ones (perf and task_trace
// have the kinds of arraytypes; net5-v2params and perf_100ms run in full
// mode, as objver4 and counters-truncated, the captures with lock waits,
// over shortMax, always did).
var shortParallelCaptures = []string{
	"clrdiag/hot-3.1.2-linux-x64.nettrace",                                       // samples, rundown
	"clrdiag/workloads-8.0.34-linux-x64-default.clrdiag.nettrace.zip",            // samples, exceptions, GCs, methods
	"clrdiag/workloads-8.0.34-linux-x64-gc-verbose.dotnet-trace.nettrace.zip",    // allocation ticks, exceptions, GCs
	"misc/net6.0.9-windows.nettrace",                                             // an allocation tick, a GC
	"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.zip",        // NetPerf, user events
	"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace.zip",           // user events, rundown
	"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip", // other events only
	"perfview/only_managed_samples.nettrace.zip",                                 // samples, suspensions without GCs
}

// eventKinds names a trace's format and the kinds of events it has, as
// the Builder classifies them.
func eventKinds(t *testing.T, data []byte) string {
	t.Helper()
	r, err := nettrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(r.Header(), Config{})
	kinds := map[eventKind]bool{}
	var ev nettrace.Event
	for r.ReadEvent(&ev) == nil {
		kinds[b.classify(ev.Metadata)] = true
	}
	return fmt.Sprint(r.Header().Format, r.Header().Version, slices.Sorted(maps.Keys(kinds)))
}

// TestReadParallelTruncated cuts every capture at several places: the
// parallel read gives the profile of the same events, the same error (at
// the same offset) and the same dropped-event count as the serial one
// (7 cuts a capture; 3 with -short).
func TestReadParallelTruncated(t *testing.T) {
	eachShortCapture(t, func(t *testing.T, rel string, data []byte) {
		step := max(len(data)/7, 1)
		if testing.Short() {
			step = max(len(data)/3, 1) // full mode: 7 cuts
		}
		for cut := len(data) - 1; cut > 0; cut -= step {
			for _, pcfg := range parallelConfigs(cut) {
				sameRead(t, fmt.Sprintf("%s cut at %d", rel, cut), data[:cut], Config{Timeline: true}, pcfg, cut == len(data)-1)
			}
		}
	})
}

// BenchmarkReadParallel compares the serial and the parallel read of the
// larger captures (and of the file PROFILE_BENCH_FILE names, such as a flood
// capture), with the folded export of the wall profile after it, as
// trace convert does:
//
//	GOMAXPROCS=2 CLRDIAG_CAPTURES=... PROFILE_BENCH_FILE=/tmp/flood.nettrace go test ./profile -run '^$' -bench ReadParallel
//
// serial is ReadEvent alone, parallel the workers from the first MiB on,
// Read what Read chooses (see parallelSerialBytes). Compare the wall time
// and cpu-ns/op (the process's CPU time per operation) on a quiet machine.
func BenchmarkReadParallel(b *testing.B) {
	type input struct {
		name string
		data func(b *testing.B) []byte
	}
	var inputs []input
	for _, rel := range testcapture.Traces() {
		if n := testcapture.ShortName(rel); n == "objver4" || n == "counters-truncated" || n == "VoiceMemo.23092" || n == "net5-v2params-allocTrace" {
			inputs = append(inputs, input{n, func(b *testing.B) []byte { return testcapture.Load(b, rel) }})
		}
	}
	if f := os.Getenv("PROFILE_BENCH_FILE"); f != "" {
		inputs = append(inputs, input{filepath.Base(f), func(b *testing.B) []byte {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			return data
		}})
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			data := in.data(b)
			// serial: ReadEvent alone; parallel: the workers from the
			// first MiB on; Read: what Read chooses.
			for _, mode := range []string{"serial", "parallel", "Read"} {
				pcfg := nettrace.ParallelConfig{}
				switch mode {
				case "serial":
					pcfg.SerialBytes = int64(len(data)) + 1
				case "parallel":
					pcfg.SerialBytes = 1 << 20
				}
				b.Run(mode, func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(data)))
					defer reportCPU(b, cpuTime())
					for b.Loop() {
						p, err := read(bytes.NewReader(data), Config{Measure: MeasureWall}, pcfg)
						var fe *nettrace.FormatError
						if err != nil && !errors.As(err, &fe) {
							b.Fatal(err)
						}
						wp, err := p.Weighted(MeasureWall)
						if err != nil {
							b.Fatal(err)
						}
						if err := weighted.WriteFolded(io.Discard, wp); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// TestBuilderReadsCarriedFields keeps the Builder to the event fields a
// convPart carries to the merge (Metadata, Timestamp, ThreadID, Payload and
// the stack): a selector of any other field of nettrace.Event in the
// package's code fails it. Such a field must be carried in eventRec (and
// set in mergePart) first; TestReadParallelSameProfile then checks it.
func TestBuilderReadsCarriedFields(t *testing.T) {
	carried := map[string]bool{"Metadata": true, "Timestamp": true, "ThreadID": true, "Payload": true,
		"StackID": true, "StackRegion": true}
	others := map[string]bool{}
	ev := reflect.TypeFor[nettrace.Event]()
	for i := range ev.NumField() {
		if f := ev.Field(i); f.IsExported() && !carried[f.Name] {
			others[f.Name] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "parallel.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && others[s.Sel.Name] {
				t.Errorf("%s: reads .%s, which a convPart does not carry to the merge (parallel.go)", fset.Position(s.Pos()), s.Sel.Name)
			}
			return true
		})
	}
}

// stopReader returns data up to n bytes, then err: a source that fails, as
// the CLI's interruptible reader does on Ctrl-C.
type stopReader struct {
	data []byte
	n    int
	err  error
}

func (r *stopReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, r.err
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data, r.n = r.data[k:], r.n-k
	return k, nil
}

// TestReadParallelSourceError stops the source in the middle of the
// largest committed capture: the parallel read returns the source's error
// (errors.Is finds it, as the CLI's interruptedError does) with the
// profile of the same events as the serial read.
func TestReadParallelSourceError(t *testing.T) {
	data := capture(t, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")
	stop := errors.New("interrupted")
	for _, cut := range []int{len(data) / 3, len(data) * 3 / 4} {
		want, werr := read(&stopReader{data, cut, stop}, Config{Timeline: true}, nettrace.ParallelConfig{SerialBytes: int64(len(data)) + 1})
		got, gerr := read(&stopReader{data, cut, stop}, Config{Timeline: true}, nettrace.ParallelConfig{Workers: 2, SerialBytes: -1})
		if !errors.Is(werr, stop) || !errors.Is(gerr, stop) || werr.Error() != gerr.Error() {
			t.Fatalf("cut at %d: serial read ends with %v, parallel with %v; want both to wrap %v", cut, werr, gerr, stop)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %d: the parallel read's profile differs from the serial one's", cut)
		}
	}
}
