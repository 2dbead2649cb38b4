//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/speedscopetest"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// startWorkloads starts the Workloads target (testdata/targets/Workloads.cs).
func startWorkloads(t *testing.T) *dotnettest.Target {
	t.Helper()
	rt := dotnettest.Find(t)
	return rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
}

// collectWorkload collects a trace of the Workloads target with the given
// session arguments while it runs the commands (each answered by the line
// starting with its reply), ended by the target's Done event.
func collectWorkload(t *testing.T, tg *dotnettest.Target, trace string, session []string, commands ...[2]string) map[string]string {
	t.Helper()
	args := append([]string{"trace", "collect", "-p", strconv.Itoa(tg.PID), "-o", trace,
		"--stopping-event-provider-name", "Clrdiag-Workloads", "--stopping-event-event-name", "Done"}, session...)
	r := startCLI(args...)
	r.waitSession(t)
	tg.Send(t, "wait-enabled")
	tg.Expect(t, "ENABLED", 30*time.Second)
	replies := map[string]string{}
	for _, c := range commands {
		tg.Send(t, c[0])
		replies[c[0]] = tg.Expect(t, c[1], 2*time.Minute)
	}
	tg.Send(t, "done")
	tg.Expect(t, "DONE", 30*time.Second)
	r.wait(t, 2*time.Minute)
	if r.code != 0 || !strings.Contains(r.stderr.String(), "stopping event seen") {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr.String())
	}
	return replies
}

// pprofFile parses a pprof file.
func pprofFile(t *testing.T, path string) *pprofile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pp, err := pprofile.Parse(f)
	if err != nil {
		t.Fatalf("%s does not parse as pprof: %v", path, err)
	}
	return pp
}

// sampleIndex returns the index of a pprof sample type, failing without it.
func sampleIndex(t *testing.T, pp *pprofile.Profile, typ string) int {
	t.Helper()
	for i, st := range pp.SampleType {
		if st.Type == typ {
			return i
		}
	}
	t.Fatalf("pprof has no sample type %q: %v", typ, pp.SampleType)
	return -1
}

// funcs returns the function names of a pprof sample, leaf first.
func funcs(s *pprofile.Sample) []string {
	var out []string
	for _, l := range s.Location {
		for _, ln := range l.Line {
			out = append(out, ln.Function.Name)
		}
	}
	return out
}

// convertTo runs trace convert and returns the output path.
func convertTo(t *testing.T, trace, sample, format string) string {
	t.Helper()
	out := strings.TrimSuffix(trace, ".nettrace") + "." + sample
	f, err := weighted.LookupFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	out += f.Suffix
	code, _, errOut := run(t, "trace", "convert", trace, "--sample", sample, "--format", format, "-o", out)
	if code != 0 {
		t.Fatalf("convert --sample %s --format %s: exit %d\n%s", sample, format, code, errOut)
	}
	return out
}

// TestRealAllocExceptionProfiles collects a trace with --profile gc-verbose
// while the Workloads target allocates 256 MiB ("alloc 256" counts in MiB) of Order and Invoice objects
// (the same size) in a 3:1 ratio from two methods and throws 7
// InvalidOperationException and 3 ArgumentException from two methods, and
// checks the alloc and exceptions profiles in every format.
//
// The statistics: GCAllocationTick fires about every 100 KiB, so 256 MiB
// gives about 2600 ticks, each attributed to the object that crossed the
// threshold, an Order with probability 3/4. The share of Order bytes then
// has a standard deviation of about sqrt(0.75*0.25/2600) = 0.0085; the
// test accepts 0.75 +- 0.05 (almost 6 sigma), a ratio between 2.33 and 4.
func TestRealAllocExceptionProfiles(t *testing.T) {
	tg := startWorkloads(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "workloads.nettrace")
	replies := collectWorkload(t, tg, trace, []string{"--profile", "gc-verbose", "--providers", "Clrdiag-Workloads:0x1:4"},
		[2]string{"alloc 256", "ALLOCATED"}, [2]string{"throw", "THROWN"})
	var orders, invoices int64
	if _, err := fmt.Sscanf(replies["alloc 256"], "ALLOCATED %d %d", &orders, &invoices); err != nil {
		t.Fatalf("reply %q: %v", replies["alloc 256"], err)
	}
	const objectSize = 48 // 4 longs, header and method table on 64-bit

	// pprof: alloc_space by leaf type and allocating method.
	pb := convertTo(t, trace, "alloc", "pprof")
	pp := pprofFile(t, pb)
	var types []string
	for _, st := range pp.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	// .NET Core 3.1 sends GCAllocationTick version 3, without object sizes:
	// no alloc_objects.
	if strings.Join(types, ",") != "samples/count,alloc_space/bytes" || pp.DefaultSampleType != "alloc_space" {
		t.Errorf("pprof sample types %v (default %q)", types, pp.DefaultSampleType)
	}
	space, ticks := sampleIndex(t, pp, "alloc_space"), sampleIndex(t, pp, "samples")
	bytesBy := map[string]int64{}
	ticksBy := map[string]int64{}
	for _, s := range pp.Sample {
		fs := funcs(s)
		if len(fs) < 2 {
			continue
		}
		key := fs[0] + " from " + fs[1]
		bytesBy[key] += s.Value[space]
		ticksBy[key] += s.Value[ticks]
	}
	orderKey := "Workloads.Order from Workloads.Allocator.MakeOrder"
	invoiceKey := "Workloads.Invoice from Workloads.Allocator.MakeInvoice"
	ob, ib := bytesBy[orderKey], bytesBy[invoiceKey]
	t.Logf("allocated %d orders, %d invoices (%.1f MiB); profile: %d ticks %d bytes of Order, %d ticks %d bytes of Invoice",
		orders, invoices, float64((orders+invoices)*objectSize)/(1<<20), ticksBy[orderKey], ob, ticksBy[invoiceKey], ib)
	if ob == 0 || ib == 0 {
		t.Fatalf("no Order or Invoice allocations under their methods: %v", bytesBy)
	}
	share, want := float64(ob)/float64(ob+ib), float64(orders)/float64(orders+invoices)
	if math.Abs(share-want) > 0.05 {
		t.Errorf("Order bytes are %.3f of Order+Invoice, want %.3f +- 0.05 (ratio %.2f, want %.2f)", share, want,
			float64(ob)/float64(ib), float64(orders)/float64(invoices))
	}
	total, allocated := float64(ob+ib), float64((orders+invoices)*objectSize)
	if total < 0.9*allocated || total > 1.1*allocated {
		t.Errorf("the profile weighs %.0f bytes of Order and Invoice, the target allocated %.0f", total, allocated)
	}
	for key := range bytesBy {
		if (strings.HasPrefix(key, "Workloads.Order ") && key != orderKey) || (strings.HasPrefix(key, "Workloads.Invoice ") && key != invoiceKey) {
			t.Errorf("allocation attributed to the wrong method: %s", key)
		}
	}
	if len(pp.Mapping) != 1 || pp.Mapping[0].File != "Workloads" {
		t.Errorf("pprof mappings %+v, want one named Workloads", pp.Mapping)
	}
	goToolPprof(t, pb, []string{"-top", "-sample_index=alloc_space"}, "Workloads.Order", "Workloads.Invoice", "File: Workloads", "Type: alloc_space")
	goToolPprof(t, pb, []string{"-traces"}, "Workloads.Allocator.MakeOrder", "Workloads.Allocator.MakeInvoice")

	// folded: weighted by bytes, the type as the leaf frame.
	folded, err := os.ReadFile(convertTo(t, trace, "alloc", "folded"))
	if err != nil {
		t.Fatal(err)
	}
	var foldedOrder int64
	for _, line := range strings.Split(strings.TrimSpace(string(folded)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if strings.HasSuffix(line[:i], ";Workloads!Workloads.Allocator.MakeOrder;Workloads.Order") {
			n, _ := strconv.ParseInt(line[i+1:], 10, 64)
			foldedOrder += n
		}
	}
	if foldedOrder != ob {
		t.Errorf("folded: %d bytes of Order under MakeOrder, pprof %d", foldedOrder, ob)
	}

	// speedscope: bytes.
	ss := convertTo(t, trace, "alloc", "speedscope")
	checkSpeedscopeFile(t, ss, "bytes", "Workloads.Order", "Workloads.Invoice")

	// The report ranks the allocating methods.
	code, out, errOut := run(t, "trace", "report", trace, "--sample", "alloc", "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	var rep profile.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Measure != "alloc" || rep.Unit != "bytes" || len(rep.Methods) < 2 || rep.Methods[0].Method != "Workloads.Allocator.MakeOrder" ||
		rep.Methods[1].Method != "Workloads.Allocator.MakeInvoice" || rep.Methods[0].ExclusiveValue != ob {
		t.Errorf("report --sample alloc: measure %s unit %s methods %+v", rep.Measure, rep.Unit, rep.Methods[:min(3, len(rep.Methods))])
	}

	// Exceptions: exact counts by type and throwing method.
	pb = convertTo(t, trace, "exceptions", "pprof")
	pp = pprofFile(t, pb)
	if len(pp.SampleType) != 1 || pp.SampleType[0].Type != "exceptions" {
		t.Errorf("exceptions sample types %v", pp.SampleType)
	}
	thrown := map[string]int64{}
	for _, s := range pp.Sample {
		if fs := funcs(s); len(fs) >= 2 {
			thrown[fs[0]+" from "+fs[1]] += s.Value[0]
		}
	}
	if thrown["System.InvalidOperationException from Workloads.Thrower.Invalid"] != 7 ||
		thrown["System.ArgumentException from Workloads.Thrower.Argument"] != 3 {
		t.Errorf("exceptions by type and method: %v, want 7 InvalidOperationException from Invalid, 3 ArgumentException from Argument", thrown)
	}
	goToolPprof(t, pb, []string{"-top"}, "System.InvalidOperationException", "System.ArgumentException", "Type: exceptions")
	folded, err = os.ReadFile(convertTo(t, trace, "exceptions", "folded"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(folded), ";Workloads!Workloads.Thrower.Invalid;System.InvalidOperationException 7\n") ||
		!strings.Contains(string(folded), ";Workloads!Workloads.Thrower.Argument;System.ArgumentException 3\n") {
		t.Errorf("exceptions folded:\n%s", folded)
	}
	checkSpeedscopeFile(t, convertTo(t, trace, "exceptions", "speedscope"), "none", "System.InvalidOperationException")

	// chromium draws time: alloc and exceptions have none.
	code, _, errOut = run(t, "trace", "convert", trace, "--sample", "alloc", "--format", "chromium", "-o", "-")
	if code != exitUsage || !strings.Contains(errOut, "has no durations") {
		t.Errorf("chromium of alloc: exit %d %s", code, errOut)
	}
	// A trace without lock waits says how to collect them.
	code, _, errOut = run(t, "trace", "convert", trace, "--sample", "contention", "-o", "-")
	if code != exitFailure || !strings.Contains(errOut, "clrdiag trace collect -p PID --clrevents contention") {
		t.Errorf("contention of a trace without it: exit %d %s", code, errOut)
	}
}

// TestRealContentionProfile collects a trace with --clrevents contention
// while the Workloads target's LockWaiter thread waits 4 times at least
// 300 ms for a lock in WaitForGate, then blocks in WaitStuck until after
// the trace ends.
func TestRealContentionProfile(t *testing.T) {
	tg := startWorkloads(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "contention.nettrace")
	const waits, hold = 4, 300 * time.Millisecond
	collectWorkload(t, tg, trace, []string{"--clrevents", "contention", "--providers", "Clrdiag-Workloads:0x1:4"},
		[2]string{fmt.Sprintf("contend %d %d", waits, hold.Milliseconds()), "CONTENDED"})
	tg.Send(t, "release")
	tg.Expect(t, "RELEASED", 30*time.Second)

	pb := convertTo(t, trace, "contention", "pprof")
	pp := pprofFile(t, pb)
	delay, count := sampleIndex(t, pp, "delay"), sampleIndex(t, pp, "contentions")
	if pp.DefaultSampleType != "delay" || pp.SampleType[delay].Unit != "nanoseconds" {
		t.Errorf("contention sample types %v default %q", pp.SampleType, pp.DefaultSampleType)
	}
	var gateN, gateNs, stuckN, stuckNs int64
	threads := map[int64]bool{}
	for _, s := range pp.Sample {
		// The leaf is Monitor.Enter (managed on 3.1), the waiting method
		// below it.
		fs := strings.Join(funcs(s), " ")
		switch {
		case strings.Contains(fs, "Workloads.Contention.WaitForGate"):
			gateN += s.Value[count]
			gateNs += s.Value[delay]
			threads[s.NumLabel["thread"][0]] = true
		case strings.Contains(fs, "Workloads.Contention.WaitStuck"):
			stuckN += s.Value[count]
			stuckNs += s.Value[delay]
		}
	}
	var lockWaiter int64
	for id := range threads {
		lockWaiter = id
	}
	t.Logf("WaitForGate: %d waits, %v; WaitStuck: %d, %v (unfinished)", gateN, time.Duration(gateNs), stuckN, time.Duration(stuckNs))
	if gateN != waits || len(threads) != 1 {
		t.Errorf("WaitForGate: %d waits on threads %v, want %d on the LockWaiter thread", gateN, threads, waits)
	}
	if d := time.Duration(gateNs); d < waits*hold || d > waits*(hold+5*time.Second) {
		t.Errorf("WaitForGate waited %v, want at least %v (and not much more)", d, waits*hold)
	}
	if stuckN != 1 || stuckNs <= 0 {
		t.Errorf("WaitStuck: %d waits of %v, want the one unfinished wait", stuckN, time.Duration(stuckNs))
	}
	goToolPprof(t, pb, []string{"-top", "-sample_index=delay"}, "Workloads.Contention.WaitForGate", "Type: delay")

	code, out, errOut := run(t, "trace", "report", trace, "--sample", "contention")
	if code != 0 || !strings.Contains(out, "Top methods by exclusive lock wait time") ||
		!strings.Contains(out, "Workloads!Workloads.Contention.WaitForGate") || !strings.Contains(out, "(1 unfinished at the end of the trace)") ||
		!strings.Contains(out, "Note: 1 lock waits had not ended when the trace ended") {
		t.Errorf("report --sample contention: exit %d\n%s%s", code, out, errOut)
	}

	// Chromium: each wait is a span on the LockWaiter thread.
	ch := convertTo(t, trace, "contention", "chromium")
	b, err := os.ReadFile(ch)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string  `json:"ph"`
			Name string  `json:"name"`
			TS   float64 `json:"ts"`
			Tid  int64   `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	var spans []float64
	var open float64
	for _, e := range doc.TraceEvents {
		if e.Name != "Workloads.Contention.WaitForGate" || e.Tid != lockWaiter {
			continue
		}
		switch e.Ph {
		case "B":
			open = e.TS
		case "E":
			spans = append(spans, e.TS-open)
		}
	}
	if len(spans) != waits {
		t.Errorf("chromium: %d WaitForGate spans, want %d", len(spans), waits)
	}
	for _, us := range spans {
		if time.Duration(us*1e3) < hold {
			t.Errorf("chromium: a WaitForGate span of %.0f us, want at least %v", us, hold)
		}
	}
	checkSpeedscopeFile(t, convertTo(t, trace, "contention", "speedscope"), "nanoseconds", "Workloads.Contention.WaitForGate")
}

// checkSpeedscopeFile checks a speedscope file against speedscope's file
// format schema and that it has the unit and names the frames.
func checkSpeedscopeFile(t *testing.T, path, unit string, frames ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	validateSpeedscope(t, b)
	var f struct {
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Unit    string    `json:"unit"`
			Samples [][]int   `json:"samples"`
			Weights []float64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]bool{}
	for _, fr := range f.Shared.Frames {
		names[fr.Name] = true
	}
	for _, want := range frames {
		if !names[want] {
			t.Errorf("%s has no frame %q", path, want)
		}
	}
	if len(f.Profiles) < 2 {
		t.Fatalf("%s: %d profiles, want All threads and at least one thread", path, len(f.Profiles))
	}
	for _, p := range f.Profiles {
		if p.Unit != unit || len(p.Samples) != len(p.Weights) || len(p.Samples) == 0 {
			t.Errorf("%s: profile unit %q (want %q), %d samples, %d weights", path, p.Unit, unit, len(p.Samples), len(p.Weights))
		}
	}
}

func validateSpeedscope(t *testing.T, b []byte) {
	t.Helper()
	speedscopetest.Validate(t, b)
}

// TestRealCollectFormatSample collects with --format pprof --sample alloc
// and only the target's own provider: collect enables the runtime's GC
// events at Verbose level for the measure, and the converted file weighs
// the allocations of the Workloads target's two types.
func TestRealCollectFormatSample(t *testing.T) {
	tg := startWorkloads(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "workloads.nettrace")
	collectWorkload(t, tg, trace, []string{"--providers", "Clrdiag-Workloads:0x1:4", "--format", "pprof", "--sample", "alloc"},
		[2]string{"alloc 64", "ALLOCATED"})
	pp := pprofFile(t, filepath.Join(dir, "workloads.pb.gz"))
	if pp.DefaultSampleType != "alloc_space" {
		t.Errorf("collect --format pprof --sample alloc wrote a profile of %q, want alloc_space", pp.DefaultSampleType)
	}
	space := sampleIndex(t, pp, "alloc_space")
	byType := map[string]int64{}
	for _, s := range pp.Sample {
		if fs := funcs(s); len(fs) > 0 {
			byType[fs[0]] += s.Value[space]
		}
	}
	if byType["Workloads.Order"] == 0 || byType["Workloads.Invoice"] == 0 || byType["Workloads.Order"] < byType["Workloads.Invoice"] {
		t.Errorf("allocated bytes by type: %v, want Order about three times Invoice", byType)
	}
}
