package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// fleetConfig is 20 rules: 16 on System.Runtime counters (4 counters, 4
// rules each, never firing), 2 on a Meter histogram, 2 ASP.NET triggers.
func fleetConfig(b *testing.B) *Config {
	var y strings.Builder
	y.WriteString("CollectionRules:\n")
	names := []string{"cpu-usage", "exception-count", "working-set", "gc-heap-size"}
	for i := range 16 {
		fmt.Fprintf(&y, "  R%d:\n    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: %s, GreaterThan: %d, SlidingWindowDuration: 10s}}\n    Actions: [{Type: CollectDump}]\n",
			i, names[i%4], 1_000_000+i)
	}
	for i := range 2 {
		fmt.Fprintf(&y, "  H%d:\n    Trigger: {Type: EventMeter, Settings: {MeterName: Microsoft.AspNetCore.Hosting, InstrumentName: http.server.request.duration, HistogramPercentile: 95, GreaterThan: %d}}\n    Actions: [{Type: CollectDump}]\n", i, 1000+i)
	}
	y.WriteString("  A0:\n    Trigger: {Type: AspNetRequestCount, Settings: {RequestCount: 100000}}\n    Actions: [{Type: CollectDump}]\n")
	y.WriteString("  A1:\n    Trigger: {Type: AspNetResponseStatus, Settings: {StatusCodes: [500-599], ResponseCount: 100000}}\n    Actions: [{Type: CollectDump}]\n")
	cfg, err := Load([]Source{{Data: []byte(y.String())}}, LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if len(cfg.Rules) != 20 {
		b.Fatalf("%d rules", len(cfg.Rules))
	}
	return cfg
}

// BenchmarkSample is the cost of evaluating one counter sample against a
// monitor watching 50 processes with 20 rules each: the samples of a
// System.Runtime session (the 4 counters that 16 rules watch, and 6 no
// rule watches) round-robin over the processes, plus a Meter histogram.
func BenchmarkSample(b *testing.B) {
	e, err := New(fleetConfig(b), Options{ArtifactDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	const procs = 50
	for pid := 1; pid <= procs; pid++ {
		e.Add(ProcessInfo{PID: pid, Name: fmt.Sprint("app", pid)}, nil)
	}
	names := []string{"cpu-usage", "exception-count", "working-set", "gc-heap-size", "threadpool-thread-count",
		"monitor-lock-contention-count", "alloc-rate", "gen-0-gc-count", "time-in-gc", "assembly-count"}
	var samples []*counters.Sample
	t0 := time.Unix(1_800_000_000, 0)
	for i, n := range names {
		samples = append(samples, &counters.Sample{Time: t0, Provider: "System.Runtime", Name: n, Kind: counters.KindMean, Value: float64(i), Interval: time.Second})
	}
	samples = append(samples, &counters.Sample{Time: t0, Provider: "Microsoft.AspNetCore.Hosting", Name: "http.server.request.duration", Meter: true,
		Kind: counters.KindHistogram, Interval: time.Second, Tags: []counters.Tag{{Key: "http.route", Value: "/api"}},
		Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 1}, {Quantile: 0.95, Value: 2}, {Quantile: 0.99, Value: 3}}})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := samples[i%len(samples)]
		s.Time = t0.Add(time.Duration(i/len(samples)) * time.Second)
		e.Sample(1+i%procs, s)
	}
	b.StopTimer()
	for _, st := range e.Status() {
		if st.Executions != 0 {
			b.Fatalf("a rule fired: %+v", st)
		}
	}
}
