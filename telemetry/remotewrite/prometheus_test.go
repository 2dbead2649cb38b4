package remotewrite_test

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
	"github.com/clrdiag/clrdiag/telemetry/remotewrite"
)

func start(t *testing.T, cfg remotewrite.Config) *remotewrite.Exporter {
	t.Helper()
	e, err := remotewrite.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// TestPrometheusReceivesRemoteWrite pushes converted counter samples to a
// real Prometheus (remote-write receiver enabled) and reads each series
// back through its query API: names by the OTel-to-Prometheus rules,
// labels from the resource and the attributes, values worked out by hand.
func TestPrometheusReceivesRemoteWrite(t *testing.T) {
	p := realcomp.StartPrometheus(t)
	e := start(t, remotewrite.Config{URL: p.URL + "/api/v1/write", ExternalLabels: map[string]string{"cluster": "test"}})
	res := telemetry.ProcessResource(telemetry.Process{PID: 4242, Name: "Shop.Api"}, func(k string) string {
		return map[string]string{"POD_NAME": "shop-api-7d9", "POD_NAMESPACE": "prod"}[k]
	})
	// Recent timestamps: Prometheus refuses samples too far in the past.
	t0 := time.Now().Add(-10 * time.Second).Truncate(time.Millisecond)
	sec := time.Second
	samples := []counters.Sample{
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate, Value: 1000},
		{Time: t0.Add(sec), Interval: sec, Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate, Value: 2500},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "gen-1-gc-count", Kind: counters.KindRate, Value: 4},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "working-set", Unit: "MB", Kind: counters.KindMean, Value: 57},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Name: "cpu-usage", Unit: "%", Kind: counters.KindMean, Value: 12.5},
		{Time: t0, Interval: sec, Provider: "System.Runtime", Meter: true, Name: "dotnet.exceptions", Unit: "{exception}", Kind: counters.KindRate,
			Value: 2, Total: 17, HasTotal: true, Tags: []counters.Tag{{Key: "error.type", Value: "System.InvalidOperationException"}}},
		{Time: t0, Interval: sec, Provider: "Microsoft.AspNetCore.Hosting", Meter: true, Name: "http.server.request.duration", Unit: "s", Kind: counters.KindHistogram,
			Count: 4, Sum: 0.5, Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 0.1}, {Quantile: 0.95, Value: 0.2}},
			Tags: []counters.Tag{{Key: "http.request.method", Value: "GET"}}},
	}
	conv := telemetry.NewConverter()
	var ms []telemetry.Metric
	for i := range samples {
		if m, ok := conv.Convert(&samples[i], res); ok {
			ms = append(ms, m)
		}
	}
	e.Export(ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(2 * sec)
	for _, w := range []struct {
		query string
		value float64
		label map[string]string
	}{
		{`dotnet_gc_heap_allocated_bytes_total`, 3500, nil},
		{`dotnet_gc_heap_allocated_bytes_total @ ` + fmt.Sprintf("%.3f", float64(t0.UnixMilli())/1e3), 1000, nil},
		{`dotnet_gc_collections_total{gc_heap_generation="gen1"}`, 4, nil},
		{`dotnet_process_memory_working_set_bytes`, 57e6, nil},
		{`process_cpu_utilization_ratio`, 0.125, nil},
		{`dotnet_exceptions_total`, 17, map[string]string{"error_type": "System.InvalidOperationException"}},
		{`http_server_request_duration_seconds{quantile="0.95"}`, 0.2, map[string]string{"otel_scope_name": "Microsoft.AspNetCore.Hosting", "http_request_method": "GET"}},
		{`http_server_request_duration_seconds_count`, 4, nil},
		{`http_server_request_duration_seconds_sum`, 0.5, nil},
	} {
		got, err := p.Query(ctx, w.query, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Errorf("%s: %d series, want 1: %+v", w.query, len(got), got)
			continue
		}
		if math.Abs(got[0].Value-w.value) > 1e-9*math.Max(1, w.value) {
			t.Errorf("%s = %v, want %v", w.query, got[0].Value, w.value)
		}
		labels := map[string]string{"job": "Shop.Api", "pid": "4242", "process_name": "Shop.Api", "k8s_pod_name": "shop-api-7d9",
			"k8s_namespace_name": "prod", "cluster": "test"}
		for k, v := range w.label {
			labels[k] = v
		}
		for k, v := range labels {
			if got[0].Metric[k] != v {
				t.Errorf("%s: label %s = %q, want %q (%v)", w.query, k, got[0].Metric[k], v, got[0].Metric)
			}
		}
		if !strings.HasSuffix(got[0].Metric["instance"], ":4242") {
			t.Errorf("%s: instance %q", w.query, got[0].Metric["instance"])
		}
	}
	if s := e.Stats(); s.Sent != uint64(len(ms)) || s.Failed != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestPrometheusRefusesOutOfOrder: a sample older than what Prometheus
// already has is refused with a 400, which is not retried: the batch is
// counted as failed with Prometheus's own message.
func TestPrometheusRefusesOutOfOrder(t *testing.T) {
	p := realcomp.StartPrometheus(t)
	e := start(t, remotewrite.Config{URL: p.URL + "/api/v1/write", Delivery: telemetry.Delivery{MaxAttempts: 5, InitialBackoff: time.Millisecond}})
	res := telemetry.ProcessResource(telemetry.Process{PID: 1, Name: "a"}, func(string) string { return "" })
	now := time.Now()
	m := telemetry.Metric{Resource: res, Name: "clrdiag.test", Kind: telemetry.Gauge, Time: now, Value: 1}
	e.Export(m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m.Time, m.Value = now.Add(-time.Minute), 2
	e.Export(m)
	err := e.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "400") || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("err = %v, want a 400 sent once", err)
	}
	if s := e.Stats(); s.Sent != 1 || s.Failed != 1 {
		t.Errorf("stats %+v", s)
	}
}
