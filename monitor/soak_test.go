//go:build linux

package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
)

// soakCounters are what a soak fake publishes: System.Runtime's
// EventCounters as .NET Core 3.1 names them, with a fixed value each
// (cpu-usage 60, which the Periodic rule watches).
var soakCounters = []struct {
	name, kind, unit string
	value            float64
}{
	{"cpu-usage", "Mean", "%", 60}, {"working-set", "Mean", "MB", 40}, {"gc-heap-size", "Mean", "MB", 3},
	{"gen-0-gc-count", "Sum", "", 1}, {"gen-1-gc-count", "Sum", "", 0}, {"gen-2-gc-count", "Sum", "", 0},
	{"threadpool-thread-count", "Mean", "", 2}, {"monitor-lock-contention-count", "Sum", "", 0},
	{"threadpool-queue-length", "Mean", "", 0}, {"threadpool-completed-items-count", "Sum", "", 5},
	{"alloc-rate", "Sum", "B", 65536}, {"active-timer-count", "Mean", "", 1}, {"gc-fragmentation", "Mean", "%", 0},
	{"exception-count", "Sum", "", 0}, {"time-in-gc", "Mean", "%", 0}, {"gen-0-size", "Mean", "B", 0},
	{"gen-1-size", "Mean", "B", 0}, {"gen-2-size", "Mean", "B", 1 << 20}, {"loh-size", "Mean", "B", 0},
	{"assembly-count", "Mean", "", 12},
}

// soakTracing is a fake .NET Core 3.1 runtime's counters session: every
// counter of soakCounters once per interval the session asked for.
func soakTracing(ctx context.Context, s *ipctest.TracingSession) error {
	interval := time.Second
	for _, p := range s.Request.Providers {
		if v, ok := strings.CutPrefix(p.Args, "EventCounterIntervalSec="); ok && p.Name == "System.Runtime" {
			secs, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			interval = time.Duration(secs * float64(time.Second))
		}
	}
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
	if err != nil {
		return err
	}
	sf := func(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeString} }
	mean := []nettrace.Field{sf("Name"), sf("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble},
		{Name: "StandardDeviation", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
		{Name: "Min", Type: nettrace.TypeDouble}, {Name: "Max", Type: nettrace.TypeDouble},
		{Name: "IntervalSec", Type: nettrace.TypeSingle}, sf("Series"), sf("CounterType"), sf("Metadata"), sf("DisplayUnits")}
	sum := []nettrace.Field{sf("Name"), sf("DisplayName"), sf("DisplayRateTimeScale"), {Name: "Increment", Type: nettrace.TypeDouble},
		{Name: "IntervalSec", Type: nettrace.TypeSingle}, sf("Metadata"), sf("Series"), sf("CounterType"), sf("DisplayUnits")}
	wrap := func(id uint32, fields []nettrace.Field) *nettrace.Metadata {
		return &nettrace.Metadata{ID: id, ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters", Level: 4,
			Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: fields}}}}}
	}
	mdMean, mdSum := wrap(1, mean), wrap(2, sum)
	for _, md := range []*nettrace.Metadata{mdMean, mdSum} {
		if err := w.AddMetadata(md); err != nil {
			return err
		}
	}
	start := time.Now()
	var seq uint32
	secs := float32(interval.Seconds())
	series := "Interval=" + strconv.Itoa(int(interval.Milliseconds()))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, c := range soakCounters {
			md, fields := mdMean, mean
			vals := []any{c.name, c.name, c.value, 0.0, int32(1), c.value, c.value, secs, series, "Mean", "", c.unit}
			if c.kind == "Sum" {
				md, fields = mdSum, sum
				vals = []any{c.name, c.name, "00:00:01", c.value, secs, "", series, "Sum", c.unit}
			}
			inner := make(nettrace.Object, len(vals))
			for i, x := range vals {
				inner[i] = nettrace.NamedValue{Name: fields[i].Name, Value: x}
			}
			payload, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Value: nettrace.Object{{Name: "Payload", Value: inner}}}})
			if err != nil {
				return err
			}
			seq++
			if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 9, CaptureThreadID: 9,
				Timestamp: int64(time.Since(start)), Payload: payload}); err != nil {
				return nil // the session was closed
			}
		}
		if err := w.Flush(); err != nil {
			return nil
		}
		select {
		case <-s.Stopped:
			return w.Close()
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// rssBytes is this process's resident set (VmRSS).
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestSoakFleet runs one monitor over 50 processes with 20 rules each,
// pushing its metrics over OTLP, for CLRDIAG_SOAK (a duration, e.g. 10m;
// unset: skipped, it is not part of make test). CLRDIAG_SOAK_REAL real
// .NET Core 3.1 processes (default 16) and fakes for the rest. Every 10 s
// it samples the test process's RSS (the monitor runs in it) and its
// goroutines; every minute it checks that every process's counters are on
// time (GET /processes/{pid}/counters gets a sample of each within the
// window); it scrapes /metrics every 15 s as Prometheus would. One rule
// fires on the fakes once a minute (Execute), the 19 others never.
// Flat: the RSS of the second half at most 15% (+16 MiB) above the first
// half's after a two-minute warm-up, and no more goroutines at the end
// than after the warm-up (+10).
func TestSoakFleet(t *testing.T) {
	total, err := time.ParseDuration(os.Getenv("CLRDIAG_SOAK"))
	if err != nil || total <= 0 {
		t.Skip("soak test: set CLRDIAG_SOAK=10m to run it (not part of make test)")
	}
	nReal := 16
	if v := os.Getenv("CLRDIAG_SOAK_REAL"); v != "" {
		if nReal, err = strconv.Atoi(v); err != nil || nReal < 0 || nReal > 50 {
			t.Fatalf("CLRDIAG_SOAK_REAL=%q", v)
		}
	}
	const nProcs, window = 50, 2 * time.Second
	var procs monitor.StaticSource
	if nReal > 0 {
		rt := dotnettest.Find(t)
		dll := rt.Build(t, "Basic")
		for range nReal {
			tg := rt.Start(t, dll, nil, nil)
			procs = append(procs, targetProcess(tg, "Basic"))
		}
	}
	for i := len(procs); i < nProcs; i++ {
		pid := 700000 + i
		procs = append(procs, monitor.Process{PID: pid, Name: "fake", Dialer: fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: pid, Tracing: soakTracing})})
	}

	// The OTLP sink: counts what arrives.
	var otlpRequests, otlpBytes atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		otlpRequests.Add(1)
		otlpBytes.Add(n)
	}))
	t.Cleanup(sink.Close)

	var y strings.Builder
	y.WriteString("CollectionRules:\n")
	names := []string{"cpu-usage", "exception-count", "working-set", "gc-heap-size", "threadpool-queue-length", "time-in-gc", "gen-2-size", "alloc-rate"}
	for i := range 19 {
		fmt.Fprintf(&y, "  Never%d:\n    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: %s, GreaterThan: %d, SlidingWindowDuration: \"00:00:10\"}}\n    Actions: [{Type: CollectDump}]\n",
			i, names[i%len(names)], int64(1_000_000_000_000)+int64(i))
	}
	y.WriteString(`  Periodic:
    Filters: [{Key: ProcessName, Value: fake}]
    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 50, SlidingWindowDuration: "00:00:04"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1, ActionCountSlidingWindowDuration: "00:01:00"}
`)
	fmt.Fprintf(&y, "Telemetry:\n  Otlp: {Endpoint: %q}\n", sink.URL)
	fc := fleetConfig(t, y.String())
	_, hs := serveUI(t, monitor.Config{Fleet: fc, ArtifactDir: t.TempDir(), MetricsWindow: window, Source: procs})

	type point struct {
		at         time.Duration
		rss        int64
		goroutines int
	}
	var points []point
	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	nextScrape, nextCheck := start, start.Add(time.Minute)
	var checks, late int
	for time.Since(start) < total {
		<-tick.C
		runtime.GC()
		points = append(points, point{time.Since(start).Round(time.Second), rssBytes(t), runtime.NumGoroutine()})
		if time.Now().After(nextScrape) {
			code, body := do(t, hs, "GET", "/metrics")
			if code != 200 || strings.Count(string(body), "clrdiag_collector_up{") != nProcs {
				t.Errorf("/metrics at %v: %d, %d processes", time.Since(start).Round(time.Second), code, strings.Count(string(body), "clrdiag_collector_up{"))
			}
			nextScrape = nextScrape.Add(15 * time.Second)
		}
		if time.Now().After(nextCheck) {
			checks++
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, p := range procs {
				wg.Go(func() {
					asked := time.Now()
					_, body := do(t, hs, "GET", fmt.Sprintf("/processes/%d/counters?duration=%s", p.PID, 2*window+time.Second))
					var samples []struct {
						Time time.Time `json:"timestamp"`
						Name string
					}
					ok := json.Unmarshal(body, &samples) == nil
					fresh := false
					for _, s := range samples {
						fresh = fresh || s.Name == "cpu-usage" && s.Time.After(asked.Add(-window))
					}
					if !ok || !fresh {
						mu.Lock()
						late++
						mu.Unlock()
						t.Errorf("process %d (%s): no fresh cpu-usage within %v at %v: %.200s", p.PID, p.Name, 2*window+time.Second, time.Since(start).Round(time.Second), body)
					}
				})
			}
			wg.Wait()
			nextCheck = nextCheck.Add(time.Minute)
		}
	}

	// Figures.
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %v, %d processes (%d real .NET Core 3.1, %d fakes), 20 rules each, OTLP push every %v\n", total, nProcs, nReal, nProcs-nReal, monitor.DefaultExportInterval)
	b.WriteString("  t       RSS MiB  goroutines\n")
	for _, p := range points {
		fmt.Fprintf(&b, "  %-7v %7.1f  %d\n", p.at, float64(p.rss)/(1<<20), p.goroutines)
	}
	_, status := do(t, hs, "GET", "/collectionrules?pid="+strconv.Itoa(procs[len(procs)-1].PID))
	var rules []map[string]any
	json.Unmarshal(status, &rules)
	periodic := 0.0
	for _, r := range rules {
		if r["rule"] == "Periodic" {
			periodic, _ = r["executions"].(float64)
		}
	}
	fmt.Fprintf(&b, "  on-time checks: %d rounds of %d processes, %d late; OTLP: %d requests, %d bytes; Periodic ran %v times on a fake\n",
		checks, nProcs, late, otlpRequests.Load(), otlpBytes.Load(), periodic)
	t.Log(b.String())
	if out := os.Getenv("CLRDIAG_SOAK_OUT"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	}

	// Flat memory and goroutines after the warm-up.
	var warm []point
	for _, p := range points {
		if p.at >= 2*time.Minute {
			warm = append(warm, p)
		}
	}
	if len(warm) < 4 {
		t.Fatalf("too short a soak to judge (%v)", total)
	}
	half := len(warm) / 2
	maxOf := func(ps []point) int64 {
		var m int64
		for _, p := range ps {
			m = max(m, p.rss)
		}
		return m
	}
	first, second := maxOf(warm[:half]), maxOf(warm[half:])
	if float64(second) > float64(first)*1.15+16<<20 {
		t.Errorf("RSS grew: %.1f MiB in the second half, %.1f MiB in the first", float64(second)/(1<<20), float64(first)/(1<<20))
	}
	if g0, g1 := warm[0].goroutines, points[len(points)-1].goroutines; g1 > g0+10 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
	if min := total/time.Minute - 2; periodic < float64(min) {
		t.Errorf("the Periodic rule ran %v times on a fake, want at least %d", periodic, min)
	}
}
