package telemetry_test

import (
	"math"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/telemetry"
)

func TestConverter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	res := &telemetry.Resource{}
	rt := func(name, unit string, kind counters.Kind, v float64, at time.Time) counters.Sample {
		return counters.Sample{Time: at, Interval: time.Second, Provider: "System.Runtime", Name: name, Unit: unit, Kind: kind, Value: v}
	}
	type want struct {
		name, unit string
		kind       telemetry.MetricKind
		monotonic  bool
		value      float64
		attr       string
	}
	c := telemetry.NewConverter()
	for i, tc := range []struct {
		s counters.Sample
		w want
	}{
		{rt("exception-count", "", counters.KindRate, 2, t0), want{"dotnet.exceptions", "{exception}", telemetry.Sum, true, 2, ""}},
		{rt("exception-count", "", counters.KindRate, 3, t0.Add(time.Second)), want{"dotnet.exceptions", "{exception}", telemetry.Sum, true, 5, ""}},
		{rt("gen-2-gc-count", "", counters.KindRate, 1, t0), want{"dotnet.gc.collections", "{collection}", telemetry.Sum, true, 1, "gen2"}},
		{rt("loh-size", "B", counters.KindMean, 85000, t0), want{"dotnet.gc.last_collection.heap.size", "By", telemetry.Sum, false, 85000, "loh"}},
		{rt("gc-committed", "MB", counters.KindMean, 12, t0), want{"dotnet.gc.last_collection.memory.committed_size", "By", telemetry.Sum, false, 12e6, ""}},
		{rt("time-in-jit", "ms", counters.KindRate, 250, t0), want{"dotnet.jit.compilation.time", "s", telemetry.Sum, true, 0.25, ""}},
		{rt("methods-jitted-count", "", counters.KindMean, 900, t0), want{"dotnet.jit.compiled_methods", "{method}", telemetry.Sum, true, 900, ""}},
		{rt("time-in-gc", "%", counters.KindMean, 7, t0), want{"systemruntime.time_in_gc", "1", telemetry.Gauge, false, 0.07, ""}},
		{counters.Sample{Time: t0, Provider: "Microsoft.AspNetCore.Hosting", Name: "requests-per-second", Kind: counters.KindRate, Value: 40},
			want{"microsoftaspnetcorehosting.requests_per_second", "", telemetry.Sum, true, 40, ""}},
		{counters.Sample{Time: t0, Provider: "System.Runtime", Meter: true, Name: "dotnet.thread_pool.queue.length", Unit: "{work_item}", Kind: counters.KindUpDown, Value: 3},
			want{"dotnet.thread_pool.queue.length", "{work_item}", telemetry.Sum, false, 3, ""}},
		{counters.Sample{Time: t0, Provider: "System.Runtime", Meter: true, Name: "dotnet.gc.collections", Unit: "{collection}", Kind: counters.KindRate, Value: 1,
			Tags: []counters.Tag{{Key: "gc.heap.generation", Value: "gen0"}}},
			want{"dotnet.gc.collections", "{collection}", telemetry.Sum, true, 1, "gen0"}},
	} {
		m, ok := c.Convert(&tc.s, res)
		if !ok {
			t.Errorf("%d %s: no metric", i, tc.s.Name)
			continue
		}
		w := tc.w
		if m.Name != w.name || m.Unit != w.unit || m.Kind != w.kind || m.Monotonic != w.monotonic || math.Abs(m.Value-w.value) > 1e-12 || m.Resource != res {
			t.Errorf("%d %s: %s %q %v mono=%v %v, want %s %q %v mono=%v %v", i, tc.s.Name, m.Name, m.Unit, m.Kind, m.Monotonic, m.Value, w.name, w.unit, w.kind, w.monotonic, w.value)
		}
		if w.attr != "" && (len(m.Attrs) != 1 || m.Attrs[0].Value.AsString() != w.attr) {
			t.Errorf("%d %s: attrs %v, want gc.heap.generation=%s", i, tc.s.Name, m.Attrs, w.attr)
		}
		if m.Kind == telemetry.Sum && !m.Start.Equal(tc.s.Time.Add(-tc.s.Interval)) && tc.s.Name != "exception-count" {
			t.Errorf("%d %s: start %v", i, tc.s.Name, m.Start)
		}
	}
	// A sample without a value gives nothing, and neither does NaN.
	for _, s := range []counters.Sample{
		{Time: t0, Provider: "P", Name: "gone", Kind: counters.KindGauge, Meter: true, NoValue: true},
		{Time: t0, Provider: "P", Name: "nan", Kind: counters.KindMean, Value: math.NaN()},
	} {
		if m, ok := c.Convert(&s, res); ok {
			t.Errorf("%s: %+v", s.Name, m)
		}
	}
}

func TestProcessResource(t *testing.T) {
	env := map[string]string{
		"OTEL_SERVICE_NAME":        "checkout",
		"OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment.name=prod,k8s.pod.name=from%20otel,bad",
		"POD_NAME":                 "from-downward-api",
		"POD_NAMESPACE":            "shop",
	}
	r := telemetry.ProcessResource(telemetry.Process{PID: 12, Name: "Checkout.Api", RuntimeVersion: "10.0.1"}, func(k string) string { return env[k] })
	for k, v := range map[string]string{"service.name": "checkout", "process.pid": "12", "process.executable.name": "Checkout.Api",
		"process.runtime.name": ".NET", "process.runtime.version": "10.0.1", "deployment.environment.name": "prod",
		"k8s.pod.name": "from otel", "k8s.namespace.name": "shop"} {
		if got := r.String(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if v, _ := r.Get("process.pid"); v.AsInt64() != 12 {
		t.Errorf("process.pid is not an int: %v", v)
	}
}
