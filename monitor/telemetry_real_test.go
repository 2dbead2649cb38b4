//go:build unix

package monitor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/realcomp"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promSeries parses a /metrics exposition into the process's series:
// name{labels but pid and process_name} -> value.
func promSeries(t *testing.T, text string, pid int) map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if strings.HasPrefix(name, "clrdiag_") {
			continue
		}
		for _, m := range f.Metric {
			mine := false
			var labels []string
			for _, l := range m.Label {
				switch l.GetName() {
				case "pid":
					mine = l.GetValue() == strconv.Itoa(pid)
				case "process_name":
				default:
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			if !mine {
				continue
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Summary != nil:
				out[key] = m.Summary.GetSampleSum()
			}
		}
	}
	return out
}

// debugTime parses a timestamp as the collector's debug exporter prints it.
func debugTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return tm
}

// otlpPoint is one data point the collector received for the process.
type otlpPoint struct {
	t time.Time
	v float64
}

// otlpSeries gathers the collector's points of the process's series by
// name{attributes}.
func otlpSeries(t *testing.T, out realcomp.DebugOutput, pid int) map[string][]otlpPoint {
	t.Helper()
	series := map[string][]otlpPoint{}
	for _, m := range out.Metrics {
		if m.Resource["process.pid"] != fmt.Sprintf("Int(%d)", pid) {
			continue
		}
		for _, p := range m.Points {
			key := m.Name
			if len(p.Attrs) > 0 {
				var attrs []string
				for k, v := range p.Attrs {
					attrs = append(attrs, k+"="+v)
				}
				key += "{" + strings.Join(attrs, ",") + "}"
			}
			v := p.Value
			if m.DataType == "Summary" {
				v = p.Sum
			}
			series[key] = append(series[key], otlpPoint{debugTime(t, p.Time), v})
		}
	}
	return series
}

// TestRealTelemetryPush: the monitor's telemetry of a real .NET Core 3.1
// process arrives in a real OpenTelemetry Collector (OTLP/HTTP metrics,
// logs and, behind its flag, profiles) and in Debian's Prometheus by
// remote write. Every series /metrics shows for the process is pushed,
// under the OpenTelemetry names; the values /metrics shows are the ones
// pushed for the same samples (a gauge equal to a point of the same
// window, a cumulative total between the points around the scrape); the
// remote-written values equal the OTLP points of the same timestamps; the
// ILogger messages arrive as log records with their attributes.
func TestRealTelemetryPush(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 11}, testTelemetryPush)
}

func testTelemetryPush(t *testing.T, rt *dotnettest.Runtime) {
	col := realcomp.StartCollector(t, realcomp.CollectorOptions{Profiles: true})
	prom := realcomp.StartPrometheus(t)
	tg := rt.Start(t, rt.Build(t, "Logging"), nil, nil)
	t.Setenv("POD_NAME", "shop-7d9")
	t.Setenv("POD_NAMESPACE", "prod")
	cfgPath := filepath.Join(t.TempDir(), "monitor.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`Telemetry:
  ExportInterval: "00:00:01"
  Otlp: {Endpoint: "%s", Logs: {LogLevel: Warning}, Profiles: true}
  RemoteWrite: {Url: "%s/api/v1/write", ExternalLabels: {cluster: test}}
  Profiling: {Interval: "00:00:10", Duration: "00:00:02"}
`, col.Endpoint, prom.URL)), 0o600)
	fc, err := monitor.LoadFleetConfig(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf syncbuf.Buffer
	_, hs := serveUI(t, monitor.Config{Fleet: fc, MetricsWindow: time.Second, DiscoveryInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), Source: monitor.StaticSource{targetProcess(tg, "Logging")}})

	// Scrape /metrics while the pushes go on, until the collector has
	// points from after the last scrape.
	type scrape struct {
		at     time.Time
		series map[string]float64
	}
	var scrapes []scrape
	deadline := time.Now().Add(3 * time.Minute)
	// Scrapes count once the series are steady: the same names in a row
	// (on .NET 9 and later, the System.Runtime Meter's once its session
	// publishes).
	steady := func(a, b map[string]float64) bool {
		if len(a) != len(b) {
			return false
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				return false
			}
		}
		return true
	}
	var prev map[string]float64
	for len(scrapes) < 5 {
		_, body := do(t, hs, "GET", "/metrics")
		s := promSeries(t, string(body), tg.PID)
		switch {
		case len(s) < 10, rt.Major >= 9 && !strings.Contains(strings.Join(keys(s), " "), "dotnet_assembly_count"):
			scrapes = nil
		case len(scrapes) > 0 && !steady(prev, s):
			scrapes = nil
		default:
			scrapes = append(scrapes, scrape{time.Now(), s})
		}
		prev = s
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed the process's counters\nlog:\n%s", logBuf.String())
		}
		time.Sleep(700 * time.Millisecond)
	}
	last := scrapes[len(scrapes)-1].at
	var out realcomp.DebugOutput
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := col.WaitLog(ctx, func(s string) bool {
		out = realcomp.ParseDebugOutput(s)
		for _, p := range otlpSeries(t, out, tg.PID)["dotnet.gc.heap.total_allocated"] {
			if p.t.After(last.Add(time.Second)) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the collector has no point from after the scrapes: %v\nlog:\n%s", err, logBuf.String())
	}
	otlp := otlpSeries(t, out, tg.PID)

	// Every series of /metrics is pushed: as many OTLP series still
	// pushed at the last scrape. (On .NET 9 and later the EventCounters
	// stand in until the Meters session has published: their series end
	// then, on /metrics and in the pushes alike.)
	final := scrapes[len(scrapes)-1].series
	current := map[string][]otlpPoint{}
	for k, pts := range otlp {
		for _, p := range pts {
			if p.t.After(scrapes[0].at) {
				current[k] = pts
			}
		}
	}
	if len(current) != len(final) {
		t.Errorf("/metrics has %d series of the process, the collector %d:\n/metrics %v\nOTLP %v", len(final), len(current), keys(final), keys(current))
	}
	t.Logf("%d series on /metrics and pushed over OTLP (%d ever pushed); %d points of dotnet.gc.heap.total_allocated", len(final), len(otlp), len(otlp["dotnet.gc.heap.total_allocated"]))
	// Named by the OpenTelemetry conventions, with the process's resource.
	for _, m := range out.Metric("process.cpu.utilization") {
		if m.Resource["process.pid"] == fmt.Sprintf("Int(%d)", tg.PID) && (m.Resource["k8s.pod.name"] != "Str(shop-7d9)" || m.Resource["k8s.namespace.name"] != "Str(prod)" || m.Resource["service.name"] != "Str(Logging)") {
			t.Errorf("resource %v", m.Resource)
		}
	}
	// Values: each scrape's value is one pushed for the same window.
	type pair struct {
		prom, otlp string
		total      bool
	}
	// .NET Core 3.1: the EventCounters, under the semantic names.
	pairs := []pair{
		{"systemruntime_assemblies", "dotnet.assembly.count", false},
		{"systemruntime_threadpool_threads", "dotnet.thread_pool.thread.count", false},
		{"systemruntime_gen_2_size_bytes", "dotnet.gc.last_collection.heap.size{gc.heap.generation=Str(gen2)}", false},
		{"systemruntime_alloc_rate_bytes_total", "dotnet.gc.heap.total_allocated", true},
		{"systemruntime_gen_0_gc_count_total", "dotnet.gc.collections{gc.heap.generation=Str(gen0)}", true},
	}
	if rt.Major >= 9 { // the System.Runtime Meter's own instruments
		pairs = []pair{
			{"dotnet_assembly_count{otel_scope_name=System.Runtime}", "dotnet.assembly.count", false},
			{"dotnet_process_cpu_count{otel_scope_name=System.Runtime}", "dotnet.process.cpu.count", false},
			{"dotnet_gc_heap_allocated_bytes_total{otel_scope_name=System.Runtime}", "dotnet.gc.heap.total_allocated", true},
			{"dotnet_jit_compiled_methods_total{otel_scope_name=System.Runtime}", "dotnet.jit.compiled_methods", true},
		}
	}
	for _, p := range pairs {
		points := current[p.otlp]
		if len(points) == 0 {
			t.Errorf("%s: not pushed (series %v)", p.otlp, keys(current))
			continue
		}
		exact := 0
		for _, sc := range scrapes {
			v, ok := sc.series[p.prom]
			if !ok {
				t.Errorf("/metrics lacks %s: %v", p.prom, sc.series)
				break
			}
			found := false
			for _, pt := range points {
				// Sample times are the runtime's; a sample reaches the
				// monitor up to a few seconds later.
				if pt.v == v && pt.t.After(sc.at.Add(-4*time.Second)) && pt.t.Before(sc.at.Add(time.Second)) {
					found = true
				}
			}
			if found {
				exact++
			}
			if !p.total {
				if !found {
					t.Errorf("%s = %v at %s: no %s point of that value in the same window: %v", p.prom, v, sc.at.Format(time.StampMilli), p.otlp, points)
				}
				continue
			}
			// A total: points sampled well before the scrape are at most
			// what it showed, points sampled after it at least.
			for _, pt := range points {
				if pt.t.Before(sc.at.Add(-3*time.Second)) && pt.v > v || pt.t.After(sc.at) && pt.v < v {
					t.Errorf("%s = %v at %s, but %s = %v at %s", p.prom, v, sc.at.Format(time.StampMilli), p.otlp, pt.v, pt.t.Format(time.StampMilli))
				}
			}
		}
		if exact == 0 {
			t.Errorf("%s: no scrape's value was pushed as %s: %v", p.prom, p.otlp, points)
		}
	}

	// Prometheus has the remote-written points: at the timestamp of an
	// OTLP point, the same value, with the resource's labels.
	tot := current["dotnet.gc.heap.total_allocated"]
	pt := tot[len(tot)/2]
	q := fmt.Sprintf(`dotnet_gc_heap_allocated_bytes_total{pid="%d"}`, tg.PID)
	var got []realcomp.Sample
	for deadline := time.Now().Add(30 * time.Second); ; {
		if got, err = prom.Query(ctx, q, pt.t); err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("Prometheus %s @ %s = %v; the OTLP point %v", q, pt.t.Format(time.StampMilli), got, pt.v)
	if len(got) != 1 || got[0].Value != pt.v || got[0].Metric["k8s_pod_name"] != "shop-7d9" || got[0].Metric["cluster"] != "test" || got[0].Metric["job"] != "Logging" {
		t.Errorf("Prometheus %s @ %s: %+v, want %v", q, pt.t, got, pt.v)
	}
	if got, err := prom.Query(ctx, fmt.Sprintf(`{pid="%d",__name__=~"dotnet_assembl.*"}`, tg.PID), time.Now()); err != nil || len(got) != 1 {
		t.Errorf("Prometheus: the assembly count: %+v %v", got, err)
	}

	// Logs: the process's ILogger messages at Warning and above.
	tg.Send(t, "wait-enabled")
	tg.Expect(t, "ENABLED", 30*time.Second)
	tg.Send(t, "demo")
	tg.Expect(t, "DEMO done", 30*time.Second)
	if _, err := col.WaitLog(ctx, func(s string) bool {
		out = realcomp.ParseDebugOutput(s)
		return len(out.Logs) >= 3
	}); err != nil {
		t.Fatalf("log records: %v\n%s", err, logBuf.String())
	}
	var failed *realcomp.DebugLog
	for i, l := range out.Logs {
		if l.Resource["process.pid"] != fmt.Sprintf("Int(%d)", tg.PID) {
			t.Errorf("log record of another resource: %+v", l)
		}
		if strings.Contains(l.Body, "Order 7 failed") {
			failed = &out.Logs[i]
		}
	}
	if failed == nil || failed.Scope != "App.Orders" || failed.SeverityText != "Error" || failed.Attrs["exception.type"] != "Str(System.InvalidOperationException)" ||
		failed.Attrs["OrderId"] != "Str(7)" || failed.Attrs["{OriginalFormat}"] != "Str(Order {OrderId} failed)" {
		t.Errorf("the error's record: %+v\nall: %+v", failed, out.Logs)
	}

	// Profiles (behind Telemetry.Otlp.Profiles): one of the process.
	if _, err := col.WaitLog(ctx, func(s string) bool {
		out = realcomp.ParseDebugOutput(s)
		for _, p := range out.Profiles {
			if p.Resource["process.pid"] == fmt.Sprintf("Int(%d)", tg.PID) && len(p.Samples) > 0 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no profile of the process: %v\n%s", err, logBuf.String())
	}

	// The exporters' own counters.
	_, body := do(t, hs, "GET", "/metrics")
	for _, want := range []string{`clrdiag_telemetry_records_total{exporter="otlp",result="failed",signal="metrics"} 0`,
		`clrdiag_telemetry_records_total{exporter="remotewrite",result="failed",signal="metrics"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
