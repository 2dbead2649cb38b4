package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/rules"
	"github.com/clrdiag/clrdiag/telemetry"
)

// benchFleetYAML is 20 rules on the System.Runtime counters, none firing
// (16 on 4 counters, 2 on a Meter histogram, 2 on other counters), and
// the metrics pushed over OTLP and remote write (to addresses nothing
// listens on: the exporters are not run, so nothing is sent).
func benchFleetYAML() string {
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
	y.WriteString("  T0:\n    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: threadpool-queue-length, GreaterThan: 1000000}}\n    Actions: [{Type: CollectDump}]\n")
	y.WriteString("  T1:\n    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: time-in-gc, GreaterThan: 1000000}}\n    Actions: [{Type: CollectDump}]\n")
	y.WriteString("Telemetry:\n  Otlp: {Endpoint: \"http://127.0.0.1:9\"}\n  RemoteWrite: {Url: \"http://127.0.0.1:9/api/v1/write\"}\n")
	return y.String()
}

// benchServer is a Server whose collector follows 50 processes (no
// sessions: the benchmark hands it the samples), with the fleet or not.
func benchServer(b *testing.B, withFleet bool) (*Server, []int) {
	b.Helper()
	cfg := Config{NoAuth: true, Source: StaticSource{}, DiscoveryInterval: time.Hour}
	if withFleet {
		p := filepath.Join(b.TempDir(), "monitor.yaml")
		if err := os.WriteFile(p, []byte(benchFleetYAML()), 0o600); err != nil {
			b.Fatal(err)
		}
		fc, err := LoadFleetConfig(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Fleet, cfg.ArtifactDir = fc, b.TempDir()
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// No background discovery: it would forget the processes below.
	s.metrics.stop()
	if s.fleet != nil {
		s.fleet.stop()
	}
	var pids []int
	for pid := 1001; pid <= 1050; pid++ {
		p := Process{PID: pid, Name: fmt.Sprint("app", pid)}
		s.metrics.mu.Lock()
		s.metrics.procs[pid] = &procMetrics{p: p, series: map[seriesKey]*metricSeries{}, meters: map[string]bool{}, cancel: func() {}}
		s.metrics.mu.Unlock()
		if f := s.fleet; f != nil {
			fp := &fleetProc{p: p, cancel: func() {}, ready: true, info: rules.ProcessInfo{PID: pid, Name: p.Name},
				res: telemetry.ProcessResource(telemetry.Process{PID: pid, Name: p.Name}, nil)}
			f.mu.Lock()
			f.procs[pid] = fp
			f.mu.Unlock()
			f.engine.Add(fp.info, nil)
		}
		pids = append(pids, pid)
	}
	return s, pids
}

// benchSamples are the samples of a System.Runtime session: 10 counters
// (4 watched by 16 rules), and an ASP.NET Core histogram.
func benchSamples() []*counters.Sample {
	names := []string{"cpu-usage", "exception-count", "working-set", "gc-heap-size", "threadpool-thread-count",
		"monitor-lock-contention-count", "alloc-rate", "gen-0-gc-count", "time-in-gc", "assembly-count"}
	kinds := []counters.Kind{counters.KindMean, counters.KindRate, counters.KindMean, counters.KindMean, counters.KindMean,
		counters.KindRate, counters.KindRate, counters.KindRate, counters.KindMean, counters.KindMean}
	t0 := time.Unix(1_800_000_000, 0)
	var out []*counters.Sample
	for i, n := range names {
		out = append(out, &counters.Sample{Time: t0, Provider: "System.Runtime", Name: n, DisplayName: n, Kind: kinds[i], Value: float64(i), Interval: time.Second})
	}
	out = append(out, &counters.Sample{Time: t0, Provider: "Microsoft.AspNetCore.Hosting", Name: "http.server.request.duration", Meter: true, Unit: "s",
		Kind: counters.KindHistogram, Interval: time.Second, Tags: []counters.Tag{{Key: "http.route", Value: "/api"}}, Count: 10, Sum: 1,
		Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 1}, {Quantile: 0.95, Value: 2}, {Quantile: 0.99, Value: 3}}})
	return out
}

// BenchmarkMonitorSample is what the monitor does with one counter sample
// of one of 50 processes: the /metrics collector records it, and with
// the fleet (Fleet) the 20 rules of that process evaluate it and the
// telemetry converts it into the series pushed; Baseline is the collector
// alone. Fleet minus Baseline is the cost of the rules and the telemetry
// per sample.
func BenchmarkMonitorSample(b *testing.B) {
	for _, withFleet := range []bool{false, true} {
		name := "Baseline"
		if withFleet {
			name = "Fleet"
		}
		b.Run(name, func(b *testing.B) {
			s, pids := benchServer(b, withFleet)
			samples := benchSamples()
			c := s.metrics
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sm := samples[i%len(samples)]
				sm.Time = time.Unix(1_800_000_000, 0).Add(time.Duration(i/len(samples)/len(pids)) * time.Second)
				pm := c.procs[pids[(i/len(samples))%len(pids)]]
				c.mu.Lock()
				c.record(pm, sm)
				c.mu.Unlock()
			}
			b.StopTimer()
			if e := s.engine(); e != nil {
				for _, st := range e.Status() {
					if st.Executions != 0 {
						b.Fatalf("a rule fired: %+v", st)
					}
				}
				if n := len(e.Status()); n != 50*20 {
					b.Fatalf("%d rule states, want 1000", n)
				}
			}
		})
	}
}
