//go:build unix

package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// needTool finds a consumer tool: it fails the test under CI=true and skips
// it loudly otherwise when the tool is missing.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (CI=true, so this fails instead of skipping): install Debian's %s (scripts/test.sh does)", name, pkg)
	}
	t.Skipf("SKIPPING: %s not found; install Debian's %s (make test does) to check /metrics in it", name, pkg)
	return ""
}

// checkExposition lints a /metrics body with client_golang's promlint and,
// when installed, with promtool check metrics: both must find nothing but
// the one thing the OpenTelemetry-to-Prometheus names of Meter instruments
// do on purpose: a gauge ending in _count (dotnet_assembly_count, the name
// the OpenTelemetry Collector gives dotnet.assembly.count).
func checkExposition(t *testing.T, text string) {
	t.Helper()
	const countSuffix = `non-histogram and non-summary metrics should not have "_count" suffix`
	meterGauge := func(name string) bool {
		return strings.Contains(text, "# TYPE "+name+" gauge\n") && strings.Contains(text, "\n"+name+"{") &&
			strings.Contains(text[strings.Index(text, "\n"+name+"{"):], "otel_scope_name=")
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("promlint cannot parse /metrics: %v\n%s", err, text)
	}
	for _, p := range problems {
		if p.Text == countSuffix && meterGauge(p.Metric) {
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	promtool := needTool(t, "promtool", "prometheus")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, problem, ok := strings.Cut(line, " "); ok && problem == countSuffix && meterGauge(name) {
			continue
		}
		if line != "" {
			left = append(left, line)
		}
	}
	if len(left) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\non:\n%s", err, strings.Join(left, "\n"), text)
	}
}

// writer helpers for fake runtimes.
func sfield(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeString} }

// eventCounter is one EventCounter a fake runtime publishes: a Mean or a
// Sum (incrementing) counter.
type eventCounter struct {
	name, display, units string
	sum                  bool
	value                float64
}

// runtime31Counters are the System.Runtime counters of .NET Core 3.1 with
// their real display names and units.
var runtime31Counters = []eventCounter{
	{"cpu-usage", "CPU Usage", "%", false, 12.5},
	{"working-set", "Working Set", "MB", false, 29},
	{"gc-heap-size", "GC Heap Size", "MB", false, 3},
	{"gen-0-gc-count", "Gen 0 GC Count", "", true, 2},
	{"gen-1-gc-count", "Gen 1 GC Count", "", true, 1},
	{"gen-2-gc-count", "Gen 2 GC Count", "", true, 0},
	{"threadpool-thread-count", "ThreadPool Thread Count", "", false, 4},
	{"monitor-lock-contention-count", "Monitor Lock Contention Count", "", true, 0},
	{"threadpool-queue-length", "ThreadPool Queue Length", "", false, 0},
	{"threadpool-completed-items-count", "ThreadPool Completed Work Item Count", "", true, 3},
	{"alloc-rate", "Allocation Rate", "B", true, 65536},
	{"active-timer-count", "Number of Active Timers", "", false, 1},
	{"gc-fragmentation", "GC Fragmentation", "%", false, 0.5},
	{"exception-count", "Exception Count", "", true, 1},
	{"time-in-gc", "% Time in GC since last GC", "%", false, 0},
	{"gen-0-size", "Gen 0 Size", "B", false, 24},
	{"gen-1-size", "Gen 1 Size", "B", false, 100},
	{"gen-2-size", "Gen 2 Size", "B", false, 1000},
	{"loh-size", "LOH Size", "B", false, 5000},
	{"assembly-count", "Number of Assemblies Loaded", "", false, 12},
}

// eventCountersTracing publishes counters every 20 ms as an EventCounters
// stream of a 3.1 runtime would.
func eventCountersTracing(list []eventCounter) func(ctx context.Context, s *ipctest.TracingSession) error {
	return func(ctx context.Context, s *ipctest.TracingSession) error {
		intervalMS := 1000
		for _, p := range s.Request.Providers {
			if v, ok := strings.CutPrefix(p.Args, "EventCounterIntervalSec="); ok && p.Name == "System.Runtime" {
				secs, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return err
				}
				intervalMS = int(secs*1000 + 0.5)
			}
		}
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
		if err != nil {
			return err
		}
		mean := []nettrace.Field{sfield("Name"), sfield("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble},
			{Name: "StandardDeviation", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
			{Name: "Min", Type: nettrace.TypeDouble}, {Name: "Max", Type: nettrace.TypeDouble},
			{Name: "IntervalSec", Type: nettrace.TypeSingle}, sfield("Series"), sfield("CounterType"), sfield("Metadata"), sfield("DisplayUnits")}
		sum := []nettrace.Field{sfield("Name"), sfield("DisplayName"), sfield("DisplayRateTimeScale"),
			{Name: "Increment", Type: nettrace.TypeDouble}, {Name: "IntervalSec", Type: nettrace.TypeSingle},
			sfield("Metadata"), sfield("Series"), sfield("CounterType"), sfield("DisplayUnits")}
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
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		series := "Interval=" + strconv.Itoa(intervalMS)
		for {
			for _, c := range list {
				md, fields := mdMean, mean
				vals := []any{c.name, c.display, c.value, 0.0, int32(1), c.value, c.value, float32(intervalMS) / 1000, series, "Mean", "", c.units}
				if c.sum {
					md, fields = mdSum, sum
					vals = []any{c.name, c.display, "00:00:01", c.value, float32(intervalMS) / 1000, "", series, "Sum", c.units}
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
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
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
}

// instrument is one System.Diagnostics.Metrics value a fake .NET 9 runtime
// publishes through MetricsEventSource.
type instrument struct {
	id     uint32 // MetricsEventSource event: 4 counter, 5 gauge, 6 histogram, 16 up-down
	meter  string
	name   string
	unit   string
	tags   string
	values []string // rate+value, lastValue, quantiles+count+sum, rate+value
}

var net9Instruments = []instrument{
	{4, "System.Runtime", "dotnet.gc.collections", "{collection}", "gc.heap.generation=gen0", []string{"1", "7"}},
	{4, "System.Runtime", "dotnet.gc.collections", "{collection}", "gc.heap.generation=gen2", []string{"0", "1"}},
	{4, "System.Runtime", "dotnet.gc.heap.total_allocated", "By", "", []string{"4096", "1048576"}},
	{4, "System.Runtime", "dotnet.gc.pause.time", "s", "", []string{"0.001", "0.25"}},
	{4, "System.Runtime", "dotnet.exceptions", "{exception}", "error.type=System.InvalidOperationException", []string{"1", "3"}},
	{16, "System.Runtime", "dotnet.assembly.count", "{assembly}", "", []string{"0", "42"}},
	{16, "System.Runtime", "dotnet.thread_pool.thread.count", "{thread}", "", []string{"0", "8"}},
	{16, "System.Runtime", "dotnet.process.cpu.count", "{cpu}", "", []string{"0", "2"}},
	// A level .NET 9 and 10 publish as a counter (an ObservableCounter):
	// a gauge of its current value, not a _total.
	{4, "System.Runtime", "dotnet.thread_pool.queue.length", "{work_item}", "", []string{"-3", "5"}},
	{5, "System.Runtime", "dotnet.process.memory.working_set", "By", "", []string{"30000000"}},
	{5, "System.Runtime", "dotnet.gc.last_collection.heap.size", "By", "gc.heap.generation=gen0", []string{"1024"}},
	{6, "System.Runtime", "http.server.request.duration", "ms", "http.route=/a,httpMethod=GET", []string{"0.5=2;0.95=8;0.99=20", "10", "45"}},
}

// metricsTracing publishes the instruments every 20 ms as MetricsEventSource
// (version 2 events) does for the session that asked with SessionId.
func metricsTracing(list []instrument) func(ctx context.Context, s *ipctest.TracingSession) error {
	return func(ctx context.Context, s *ipctest.TracingSession) error {
		session := ""
		for _, p := range s.Request.Providers {
			for _, kv := range strings.Split(p.Args, ";") {
				if v, ok := strings.CutPrefix(kv, "SessionId="); ok && p.Name == "System.Diagnostics.Metrics" {
					session = v
				}
			}
		}
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
		if err != nil {
			return err
		}
		head := []nettrace.Field{sfield("sessionId"), sfield("meterName"), sfield("meterVersion"), sfield("instrumentName"), sfield("unit"), sfield("tags")}
		id := nettrace.Field{Name: "instrumentId", Type: nettrace.TypeInt32}
		cat := func(more ...nettrace.Field) []nettrace.Field {
			return append(append([]nettrace.Field(nil), head...), more...)
		}
		mds := map[uint32]*nettrace.Metadata{
			4:  {ID: 4, EventID: 4, EventName: "CounterRateValuePublished", Fields: cat(sfield("rate"), sfield("value"), id)},
			5:  {ID: 5, EventID: 5, EventName: "GaugeValuePublished", Fields: cat(sfield("lastValue"), id)},
			6:  {ID: 6, EventID: 6, EventName: "HistogramValuePublished", Fields: cat(sfield("quantiles"), nettrace.Field{Name: "count", Type: nettrace.TypeInt32}, nettrace.Field{Name: "sum", Type: nettrace.TypeDouble}, id)},
			16: {ID: 16, EventID: 16, EventName: "UpDownCounterRateValuePublished", Fields: cat(sfield("rate"), sfield("value"), id)},
		}
		for _, k := range []uint32{4, 5, 6, 16} {
			md := mds[k]
			md.ProviderName, md.Version, md.Level = "System.Diagnostics.Metrics", 2, 4
			if err := w.AddMetadata(md); err != nil {
				return err
			}
		}
		start := time.Now()
		var seq uint32
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, in := range list {
				md := mds[in.id]
				vals := []any{session, in.meter, "9.0.0", in.name, in.unit, in.tags}
				switch in.id {
				case 6:
					c, _ := strconv.Atoi(in.values[1])
					sum, _ := strconv.ParseFloat(in.values[2], 64)
					vals = append(vals, in.values[0], int32(c), sum)
				default:
					for _, v := range in.values {
						vals = append(vals, v)
					}
				}
				vals = append(vals, int32(i+1))
				obj := make(nettrace.Object, len(vals))
				for j, v := range vals {
					obj[j] = nettrace.NamedValue{Name: md.Fields[j].Name, Value: v}
				}
				payload, err := nettrace.AppendPayload(nil, md.Fields, obj)
				if err != nil {
					return err
				}
				seq++
				if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 9, CaptureThreadID: 9,
					Timestamp: int64(time.Since(start)), Payload: payload}); err != nil {
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
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
}

// series is a wanted sample: name{labels} value (value NaN: any value).
type series struct {
	name   string
	labels string // k="v",k="v" in any order
	value  float64
}

// parseLabels turns k="v",k="v" into a map.
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}

// find looks a series up in an exposition, whatever the order of its
// labels: the sample's value (a summary's quantile when the labels name a
// quantile, its _count or _sum for those names), and whether it is there.
func find(t *testing.T, text string, want series) (float64, bool) {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, text)
	}
	labels := parseLabels(want.labels)
	name, part := want.name, ""
	for _, suf := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suf); ok && mfs[base] != nil && mfs[base].GetType() == dto.MetricType_SUMMARY {
			name, part = base, suf
		}
	}
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	q, hasQ := labels["quantile"]
	delete(labels, "quantile")
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if !maps.Equal(got, labels) {
			continue
		}
		switch {
		case m.GetSummary() != nil && part == "_count":
			return float64(m.GetSummary().GetSampleCount()), true
		case m.GetSummary() != nil && part == "_sum":
			return m.GetSummary().GetSampleSum(), true
		case m.GetSummary() != nil && hasQ:
			for _, qv := range m.GetSummary().GetQuantile() {
				if strconv.FormatFloat(qv.GetQuantile(), 'g', -1, 64) == q {
					return qv.GetValue(), true
				}
			}
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// scrapeUntil serves a monitor over the fake runtimes and scrapes /metrics
// until every wanted series has its value.
func scrapeUntil(t *testing.T, procs monitor.StaticSource, want ...series) (*httptest.Server, string) {
	t.Helper()
	hs := serve(t, monitor.Config{MetricsWindow: time.Second, DiscoveryInterval: time.Hour, Source: procs})
	get := func() string {
		code, body := do(t, hs, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return string(body)
	}
	var names []string
	for _, w := range want {
		names = append(names, fmt.Sprintf("%s{%s} %v", w.name, w.labels, w.value))
	}
	text := waitMetrics(t, get, strings.Join(names, ", "), func(s string) bool {
		for _, w := range want {
			v, ok := find(t, s, w)
			if !ok || !math.IsNaN(w.value) && v != w.value {
				return false
			}
		}
		return true
	})
	return hs, text
}

// The System.Runtime EventCounters of a 3.1 runtime: base units, _total
// counters, gauges without a _count suffix, HELP with unit and source; the
// exposition passes promlint and promtool.
func TestMetricsConventionsEventCounters(t *testing.T) {
	srv := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 911, Tracing: eventCountersTracing(runtime31Counters)})
	const lbl = `pid="911",process_name="app"`
	any := math.NaN()
	_, text := scrapeUntil(t, monitor.StaticSource{{PID: 911, Name: "app", Dialer: srv}},
		series{"systemruntime_cpu_usage_ratio", lbl, 0.125},
		series{"systemruntime_working_set_bytes", lbl, 29e6},
		series{"systemruntime_gc_heap_size_bytes", lbl, 3e6},
		series{"systemruntime_threadpool_threads", lbl, 4},
		series{"systemruntime_assemblies", lbl, 12},
		series{"systemruntime_active_timers", lbl, 1},
		series{"systemruntime_threadpool_queue_length", lbl, 0},
		series{"systemruntime_gen_2_gc_count_total", lbl, 0},
		series{"systemruntime_loh_size_bytes", lbl, 5000},
		series{"systemruntime_gc_fragmentation_ratio", lbl, 0.005},
		series{"systemruntime_time_in_gc_ratio", lbl, 0},
		series{"systemruntime_alloc_rate_bytes_total", lbl, any},
		series{"systemruntime_gen_0_gc_count_total", lbl, any},
		series{"systemruntime_exception_count_total", lbl, any},
	)
	for _, want := range []string{
		"# TYPE systemruntime_alloc_rate_bytes_total counter\n",
		"# TYPE systemruntime_working_set_bytes gauge\n",
		"# HELP systemruntime_working_set_bytes Working Set (EventCounter System.Runtime/working-set, mean over the interval; unit MB, exposed in bytes)\n",
		"# HELP systemruntime_gen_0_gc_count_total Gen 0 GC Count (EventCounter System.Runtime/gen-0-gc-count, incrementing counter; its per-interval increases added up since clrdiag's session opened)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
	// The incrementing counters add up: each interval's increase of 2 GCs.
	if v, _ := find(t, text, series{"systemruntime_gen_0_gc_count_total", lbl, 0}); v < 2 || int(v)%2 != 0 {
		t.Errorf("gen 0 GC total %v, want a positive multiple of 2", v)
	}
	if v, _ := find(t, text, series{"systemruntime_alloc_rate_bytes_total", lbl, 0}); v < 65536 || int(v)%65536 != 0 {
		t.Errorf("allocated bytes total %v, want a positive multiple of 65536", v)
	}
	checkExposition(t, text)
}

// System.Diagnostics.Metrics instruments of a .NET 9 runtime: dotted names
// keep their words, cumulative counters are _total counters with the
// runtime's total, histograms are summaries in seconds.
func TestMetricsConventionsMeters(t *testing.T) {
	srv := fake(t, ipctest.Config{Runtime: ipctest.NET9, PID: 912, Tracing: metricsTracing(net9Instruments)})
	const lbl = `pid="912",process_name="app",otel_scope_name="System.Runtime"`
	const route = lbl + `,http_route="/a",http_method="GET"`
	_, text := scrapeUntil(t, monitor.StaticSource{{PID: 912, Name: "app", Dialer: srv}},
		series{"dotnet_gc_collections_total", lbl + `,gc_heap_generation="gen0"`, 7},
		series{"dotnet_gc_collections_total", lbl + `,gc_heap_generation="gen2"`, 1},
		series{"dotnet_gc_heap_allocated_bytes_total", lbl, 1048576},
		series{"dotnet_gc_pause_time_seconds_total", lbl, 0.25},
		series{"dotnet_exceptions_total", lbl + `,error_type="System.InvalidOperationException"`, 3},
		series{"dotnet_assembly_count", lbl, 42},
		series{"dotnet_thread_pool_thread_count", lbl, 8},
		series{"dotnet_process_cpu_count", lbl, 2},
		series{"dotnet_thread_pool_queue_length", lbl, 5},
		series{"dotnet_process_memory_working_set_bytes", lbl, 3e7},
		series{"dotnet_gc_last_collection_heap_size_bytes", lbl + `,gc_heap_generation="gen0"`, 1024},
		series{"http_server_request_duration_seconds", route + `,quantile="0.95"`, 0.008},
		series{"http_server_request_duration_seconds_count", route, math.NaN()},
	)
	for _, want := range []string{
		"# TYPE dotnet_gc_collections_total counter\n",
		"# TYPE http_server_request_duration_seconds summary\n",
		"# TYPE dotnet_assembly_count gauge\n",
		"# TYPE dotnet_thread_pool_queue_length gauge\n",
		"# HELP http_server_request_duration_seconds http.server.request.duration (instrument http.server.request.duration of the Meter in otel_scope_name, histogram; quantiles of the last interval, count and sum added up since clrdiag's session opened; unit ms, exposed in seconds)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
	count, _ := find(t, text, series{"http_server_request_duration_seconds_count", route, 0})
	sum, _ := find(t, text, series{"http_server_request_duration_seconds_sum", route, 0})
	if count < 10 || int(count)%10 != 0 || math.Abs(sum-count/10*0.045) > 1e-9*sum {
		t.Errorf("summary count %v sum %v: want the intervals' 10 and 45 ms added up", count, sum)
	}
	checkExposition(t, text)
}

// prometheusServer is a real Prometheus that scrapes a monitor every
// second.
type prometheusServer struct {
	addr string
	logs *bytes.Buffer
}

// startPrometheus starts Debian's prometheus scraping target (host:port)
// every second, with the test key when withKey is set; it stops with the
// test.
func startPrometheus(t *testing.T, target string, withKey bool) *prometheusServer {
	t.Helper()
	if testing.Short() {
		// A real server that scrapes once a second: seconds of waiting.
		t.Skip("real Prometheus: full mode only (go test without -short)")
	}
	prom := needTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: clrdiag\n  static_configs: [{targets: ['%s']}]\n", target)
	if withKey {
		cfg += fmt.Sprintf("  authorization: {credentials: %s}\n", key)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &bytes.Buffer{}
	cmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return &prometheusServer{addr: addr, logs: logs}
}

// query asks Prometheus an instant query and returns its answer's body.
func (p *prometheusServer) query(q string) (string, error) {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// value asks an instant query whose answer is one series and returns its
// value; ok is false when the answer is not one number (yet).
func (p *prometheusServer) value(q string) (v float64, ok bool, err error) {
	body, err := p.query(q)
	if err != nil {
		return 0, false, err
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
		return 0, false, nil
	}
	text, _ := r.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(text, 64)
	return v, err == nil, nil
}

// A real Prometheus server scrapes the monitor (with its API key) and
// stores the series.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	srv := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 913, Tracing: eventCountersTracing(runtime31Counters)})
	hs, _ := scrapeUntil(t, monitor.StaticSource{{PID: 913, Name: "app", Dialer: srv}},
		series{"systemruntime_cpu_usage_ratio", `pid="913",process_name="app"`, 0.125})
	p := startPrometheus(t, strings.TrimPrefix(hs.URL, "http://"), true)
	query := p.query
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		body, err := query(`systemruntime_working_set_bytes{pid="913"}`)
		last = fmt.Sprint(body, err)
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err == nil && json.Unmarshal([]byte(body), &r) == nil && r.Status == "success" && len(r.Data.Result) == 1 {
			if v := r.Data.Result[0].Value; len(v) == 2 && v[1] == "29000000" {
				up, _ := query(`up{job="clrdiag"}`)
				if !strings.Contains(up, `"1"]`) {
					t.Errorf("up is not 1: %s", up)
				}
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Prometheus never stored the series: %s\nprometheus log:\n%s", last, p.logs.String())
}

// The real .NET Core 3.1 runtime's System.Runtime counters through /metrics
// pass promlint and promtool, with base units and _total counters.
func TestRealRuntimeMetricsConventions(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Basic"), nil, nil)
	p := monitor.Process{PID: tg.PID, Name: "dotnet", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	lbl := fmt.Sprintf(`pid="%d",process_name="dotnet"`, tg.PID)
	any := math.NaN()
	_, text := scrapeUntil(t, monitor.StaticSource{p},
		series{"systemruntime_cpu_usage_ratio", lbl, any},
		series{"systemruntime_working_set_bytes", lbl, any},
		series{"systemruntime_gc_heap_size_bytes", lbl, any},
		series{"systemruntime_gen_0_gc_count_total", lbl, any},
		series{"systemruntime_alloc_rate_bytes_total", lbl, any},
		series{"systemruntime_exception_count_total", lbl, any},
		series{"systemruntime_threadpool_threads", lbl, any},
		series{"systemruntime_assemblies", lbl, any},
		series{"systemruntime_time_in_gc_ratio", lbl, any},
		series{"systemruntime_loh_size_bytes", lbl, any},
	)
	ws, _ := find(t, text, series{"systemruntime_working_set_bytes", lbl, 0})
	if ws < 1e6 || ws > 1e11 {
		t.Errorf("working set %v bytes: not a working set in bytes", ws)
	}
	cpu, _ := find(t, text, series{"systemruntime_cpu_usage_ratio", lbl, 0})
	if cpu < 0 || cpu > 64 { // a ratio per CPU core, at most the core count
		t.Errorf("cpu usage ratio %v", cpu)
	}
	if n, _ := find(t, text, series{"systemruntime_assemblies", lbl, 0}); n < 1 {
		t.Errorf("%v assemblies loaded", n)
	}
	checkExposition(t, text)
}

// The collector logs a session it cannot open or loses, and its reopening,
// with the process; a nil Logger logs nothing (every other test).
func TestMetricsLogsSessions(t *testing.T) {
	cr := newCounterRuntime(t, 921)
	cr.value.Store(1)
	fd := &flakyDialer{d: cr}
	fd.refuse.Store(2)
	var logs syncbuf.Buffer
	hs := serve(t, monitor.Config{MetricsWindow: 20 * time.Millisecond, DiscoveryInterval: time.Hour,
		Source: monitor.StaticSource{{PID: 921, Name: "app", Dialer: fd}},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	get := func() string {
		_, body := do(t, hs, "GET", "/metrics")
		return string(body)
	}
	waitMetrics(t, get, "the session", func(s string) bool {
		_, ok := sample(s, `systemruntime_cpu_usage_ratio{pid="921",process_name="app"}`)
		return ok
	})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "reopened") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	text := logs.String()
	for _, want := range []string{`level=WARN msg="monitor: counters session lost; retrying" pid=921 process=app err=`,
		"connection refused (test)", "retry_in=", `level=INFO msg="monitor: counters session reopened" pid=921 process=app`} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
}

// A Meters session the runtime refuses (another tool holds a private
// Metrics session, as dotnet-counters does) is closed and tried again:
// kept open, it would never get a value, even once that tool left.
func TestMetersSessionRefusedIsRetried(t *testing.T) {
	var metersSessions atomic.Int32
	publish := metricsTracing(net9Instruments)
	srv := fake(t, ipctest.Config{Runtime: ipctest.NET9, PID: 914, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		metrics := false
		for _, p := range s.Request.Providers {
			metrics = metrics || p.Name == "System.Diagnostics.Metrics"
		}
		if !metrics || metersSessions.Add(1) > 1 {
			return publish(ctx, s)
		}
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
		if err != nil {
			return err
		}
		md := &nettrace.Metadata{ID: 15, ProviderName: "System.Diagnostics.Metrics", EventID: 15, EventName: "MultipleSessionsNotSupportedError",
			Level: 4, Fields: []nettrace.Field{sfield("runningSessionId")}}
		if err := w.AddMetadata(md); err != nil {
			return err
		}
		payload, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Name: "runningSessionId", Value: "a-private-session"}})
		if err != nil {
			return err
		}
		if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: 1, ThreadID: 9, CaptureThreadID: 9, Timestamp: 1, Payload: payload}); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		select { // then nothing, as a refused session gets
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return w.Close()
	}})
	var logs syncbuf.Buffer
	hs := serve(t, monitor.Config{MetricsWindow: 50 * time.Millisecond, DiscoveryInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Source: monitor.StaticSource{{PID: 914, Name: "app", Dialer: srv}}})
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := do(t, hs, "GET", "/metrics")
		if strings.Contains(string(body), `dotnet_gc_collections_total{gc_heap_generation="gen0",otel_scope_name="System.Runtime",pid="914"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Meter values after a refused session (%d Meters sessions):\n%s\nlog:\n%s", metersSessions.Load(), body, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := metersSessions.Load(); n != 2 {
		t.Errorf("%d Meters sessions, want the refused one and its retry", n)
	}
	if !strings.Contains(logs.String(), "the runtime refused the Meters session") || !strings.Contains(logs.String(), "a-private-session") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
}
