package otlp_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/internal/realcomp"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
	"go.opentelemetry.io/otel/attribute"
)

// start runs an exporter to c until the test ends.
func start(t *testing.T, cfg otlp.Config) *otlp.Exporter {
	t.Helper()
	e, err := otlp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// waitFor waits until the collector has printed what ok accepts.
func waitFor(t *testing.T, c *realcomp.Collector, what string, ok func(realcomp.DebugOutput) bool) realcomp.DebugOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out realcomp.DebugOutput
	_, err := c.WaitLog(ctx, func(s string) bool {
		out = realcomp.ParseDebugOutput(s)
		return ok(out)
	})
	if err != nil {
		t.Fatalf("the collector never showed %s: %v\n%s", what, err, c.Log())
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestCollectorReceivesCounterMetrics converts counter samples as the
// runtime sends them (legacy EventCounters of System.Runtime, .NET 8+
// Meter instruments with totals, a histogram) and checks what a real
// OpenTelemetry Collector printed: semantic names, units, kinds,
// attributes, and values worked out here by hand.
func TestCollectorReceivesCounterMetrics(t *testing.T) {
	c := realcomp.StartCollector(t, realcomp.CollectorOptions{})
	e := start(t, otlp.Config{Endpoint: c.Endpoint, Headers: map[string]string{"X-Tenant": "team-a"}})
	res := telemetry.ProcessResource(telemetry.Process{PID: 4242, Name: "Shop.Api", RuntimeVersion: "8.0.11"},
		func(k string) string {
			return map[string]string{"POD_NAME": "shop-api-7d9", "POD_NAMESPACE": "prod"}[k]
		})
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	sec := time.Second
	samples := []counters.Sample{
		// Legacy EventCounters: increments per interval add up.
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate, Value: 1000},
		{Time: t0.Add(sec), Interval: sec, Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate, Value: 2500},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "gen-0-gc-count", Kind: counters.KindRate, Value: 3},
		{Time: t0.Add(sec), Interval: sec, Provider: "System.Runtime", Name: "gen-0-gc-count", Kind: counters.KindRate, Value: 2},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "working-set", Unit: "MB", Kind: counters.KindMean, Value: 57},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "cpu-usage", Unit: "%", Kind: counters.KindMean, Value: 12.5},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "gen-2-size", Unit: "B", Kind: counters.KindMean, Value: 4096},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "gc-heap-size", Unit: "MB", Kind: counters.KindMean, Value: 3},
		// A .NET 8+ Meter counter with its own total, and a histogram.
		{Time: t0, Interval: sec, Provider: "System.Runtime", Meter: true, Name: "dotnet.exceptions", Unit: "{exception}", Kind: counters.KindRate,
			Value: 2, Total: 17, HasTotal: true, Tags: []counters.Tag{{Key: "error.type", Value: "System.InvalidOperationException"}}},
		{Time: t0, Interval: sec, Provider: "Microsoft.AspNetCore.Hosting", Meter: true, Name: "http.server.request.duration", Unit: "s", Kind: counters.KindHistogram,
			Count: 4, Sum: 0.5, Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 0.1}, {Quantile: 0.95, Value: 0.2}},
			Tags: []counters.Tag{{Key: "http.request.method", Value: "GET"}, {Key: "http.response.status_code", Value: "200"}}},
	}
	conv := telemetry.NewConverter()
	var ms []telemetry.Metric
	for i := range samples {
		if m, ok := conv.Convert(&samples[i], res); ok {
			ms = append(ms, m)
		}
	}
	if dropped := e.ExportMetrics(ms...); dropped != 0 {
		t.Fatalf("dropped %d", dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	out := waitFor(t, c, fmt.Sprintf("%d data points", len(ms)), func(o realcomp.DebugOutput) bool { return o.PointCount() >= len(ms) })

	type want struct {
		name, unit, dataType string
		monotonic            bool
		attrs                map[string]string
		value                float64 // the last point's
	}
	for _, w := range []want{
		{"dotnet.gc.heap.total_allocated", "By", "Sum", true, nil, 3500},
		{"dotnet.gc.collections", "{collection}", "Sum", true, map[string]string{"gc.heap.generation": "Str(gen0)"}, 5},
		{"dotnet.process.memory.working_set", "By", "Sum", false, nil, 57e6},
		{"process.cpu.utilization", "1", "Gauge", false, nil, 0.125},
		{"dotnet.gc.last_collection.heap.size", "By", "Sum", false, map[string]string{"gc.heap.generation": "Str(gen2)"}, 4096},
		{"systemruntime.gc_heap_size", "By", "Gauge", false, nil, 3e6},
		{"dotnet.exceptions", "{exception}", "Sum", true, map[string]string{"error.type": "Str(System.InvalidOperationException)"}, 17},
	} {
		got := out.Metric(w.name)
		if len(got) != 1 {
			t.Errorf("%s: %d metrics in the collector's output, want 1", w.name, len(got))
			continue
		}
		g := got[0]
		if g.Unit != w.unit || g.DataType != w.dataType || (w.dataType == "Sum" && (g.Monotonic != w.monotonic || g.Temporality != "Cumulative")) {
			t.Errorf("%s: unit %q type %s monotonic %v %s, want %q %s %v Cumulative", w.name, g.Unit, g.DataType, g.Monotonic, g.Temporality, w.unit, w.dataType, w.monotonic)
		}
		if g.Scope != "System.Runtime" {
			t.Errorf("%s: scope %q", w.name, g.Scope)
		}
		last := g.Points[len(g.Points)-1]
		if !near(last.Value, w.value) {
			t.Errorf("%s: value %v, want %v", w.name, last.Value, w.value)
		}
		for k, v := range w.attrs {
			if last.Attrs[k] != v {
				t.Errorf("%s: attribute %s = %q, want %q", w.name, k, last.Attrs[k], v)
			}
		}
		for k, v := range map[string]string{"service.name": "Str(Shop.Api)", "process.pid": "Int(4242)", "process.runtime.version": "Str(8.0.11)",
			"k8s.pod.name": "Str(shop-api-7d9)", "k8s.namespace.name": "Str(prod)"} {
			if g.Resource[k] != v {
				t.Errorf("%s: resource %s = %q, want %q", w.name, k, g.Resource[k], v)
			}
		}
	}
	// The increments add up point by point from the first interval's start.
	alloc := out.Metric("dotnet.gc.heap.total_allocated")[0]
	if len(alloc.Points) != 2 || !near(alloc.Points[0].Value, 1000) || alloc.Points[0].Start != alloc.Points[1].Start ||
		!strings.HasPrefix(alloc.Points[0].Start, "2026-11-28 05:59:59 ") {
		t.Errorf("alloc points: %+v", alloc.Points)
	}
	h := out.Metric("http.server.request.duration")
	if len(h) != 1 || h[0].DataType != "Summary" || h[0].Scope != "Microsoft.AspNetCore.Hosting" {
		t.Fatalf("histogram: %+v", h)
	}
	p := h[0].Points[0]
	if p.Count != 4 || !near(p.Sum, 0.5) || !near(p.Quantiles[0.5], 0.1) || !near(p.Quantiles[0.95], 0.2) ||
		p.Attrs["http.request.method"] != "Str(GET)" || p.Attrs["http.response.status_code"] != "Str(200)" {
		t.Errorf("histogram point: %+v", p)
	}
	if s := e.MetricsStats(); s.Sent != uint64(len(ms)) || s.Failed != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v, want %d sent", s, len(ms))
	}
}

// TestCollectorReceivesLogs sends log records as a Microsoft.Extensions.
// Logging event carries them and checks each field the collector printed.
func TestCollectorReceivesLogs(t *testing.T) {
	c := realcomp.StartCollector(t, realcomp.CollectorOptions{})
	e := start(t, otlp.Config{Endpoint: c.Endpoint, Gzip: true, Delivery: telemetry.Delivery{BatchSize: 2}})
	res := telemetry.ProcessResource(telemetry.Process{PID: 77, Name: "Worker"}, func(string) string { return "" })
	t0 := time.Date(2026, 11, 28, 6, 1, 2, 0, time.UTC)
	var recs []telemetry.LogRecord
	for i, lvl := range []int{2, 3, 4, 5} {
		sev, text := telemetry.SeverityOfLogLevel(lvl)
		recs = append(recs, telemetry.LogRecord{Resource: res, Scope: "Worker.Jobs", Time: t0.Add(time.Duration(i) * time.Millisecond),
			Severity: sev, SeverityText: text, Body: fmt.Sprintf("job %d: disk 9%d%% full", i, i), EventName: "DiskFull",
			Attrs: []attribute.KeyValue{attribute.Int("event.id", 1000+i), attribute.String("path", "/data")}})
	}
	e.ExportLogs(recs...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	out := waitFor(t, c, "4 log records", func(o realcomp.DebugOutput) bool { return len(o.Logs) >= 4 })
	if len(out.Logs) != 4 {
		t.Fatalf("%d log records, want 4", len(out.Logs))
	}
	wantSev := []string{"Info(9)", "Warn(13)", "Error(17)", "Fatal(21)"}
	wantText := []string{"Information", "Warning", "Error", "Critical"}
	for i, l := range out.Logs {
		if l.SeverityNumber != wantSev[i] || l.SeverityText != wantText[i] || l.Body != fmt.Sprintf("Str(job %d: disk 9%d%% full)", i, i) ||
			l.EventName != "DiskFull" || l.Scope != "Worker.Jobs" || l.Attrs["event.id"] != fmt.Sprintf("Int(%d)", 1000+i) ||
			l.Attrs["path"] != "Str(/data)" || l.Resource["service.name"] != "Str(Worker)" || l.Resource["process.pid"] != "Int(77)" {
			t.Errorf("record %d: %+v", i, l)
		}
		if got, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", l.Time); err != nil || !got.Equal(recs[i].Time) {
			t.Errorf("record %d: time %q, want %v", i, l.Time, recs[i].Time)
		}
	}
}

// TestCollectorDown: a batch for a collector that is not listening is
// retried, then counted as failed, with an error that names the URL.
func TestCollectorDown(t *testing.T) {
	port := realcomp.FreePort(t)
	e := start(t, otlp.Config{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port),
		Delivery: telemetry.Delivery{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}})
	e.ExportLogs(telemetry.LogRecord{Body: "lost"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d/v1/logs", port)) || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("err = %v", err)
	}
	if s := e.LogsStats(); s.Failed != 1 || s.Sent != 0 || s.LastError == nil {
		t.Errorf("stats %+v", s)
	}
}
