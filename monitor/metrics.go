package monitor

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/prometheus/client_golang/prometheus"
)

// collector exposes the System.Runtime counters of every process at scrape
// time: it listens to each process (concurrently) for Config.MetricsWindow
// and reports the last value of each counter.
type collector struct{ s *Server }

// Describe sends nothing: the metrics depend on the processes found at
// scrape time, so the collector is unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

var scrapeErrorsDesc = prometheus.NewDesc("clrdiag_scrape_errors", "Processes whose counters could not be read in this scrape.", nil, nil)

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.MetricsWindow*4)
	defer cancel()
	procs, err := s.cfg.Source.Processes(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(scrapeErrorsDesc, err)
		return
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	for _, p := range procs {
		wg.Go(func() {
			unlock, err := s.lock(ctx, p.PID)
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			defer unlock()
			samples, err := collectCounters(ctx, diag.NewClient(p.Dialer, &diag.Config{Timeout: s.cfg.CommandTimeout}), s.cfg.MetricsWindow)
			if err != nil && len(samples) == 0 {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			for _, m := range lastValues(samples, p) {
				ch <- m
			}
		})
	}
	wg.Wait()
	ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, float64(failed))
}

// lastValues turns the last sample of each counter into a gauge labelled with
// the process.
func lastValues(samples []counters.Sample, p Process) []prometheus.Metric {
	type key struct{ name, tags string }
	last := map[key]counters.Sample{}
	var order []key
	for _, sm := range samples {
		k := key{sm.Provider + "/" + sm.Name, sm.TagString()}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = sm
	}
	out := make([]prometheus.Metric, 0, len(order))
	for _, k := range order {
		sm := last[k]
		labels := []string{"pid", "process_name"}
		values := []string{strconv.Itoa(p.PID), p.Name}
		for _, t := range sm.Tags {
			labels = append(labels, metricName(t.Key))
			values = append(values, t.Value)
		}
		help := sm.DisplayName
		if help == "" {
			help = sm.Name
		}
		desc := prometheus.NewDesc(metricName(sm.Provider)+"_"+metricName(sm.Name), help, labels, nil)
		m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, sm.Value, values...)
		if err != nil {
			m = prometheus.NewInvalidMetric(desc, err)
		}
		out = append(out, m)
	}
	return out
}

// metricName maps a provider or counter name to a Prometheus name:
// System.Runtime + cpu-usage -> systemruntime_cpu_usage.
func metricName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.':
			// System.Runtime -> systemruntime, as dotnet-monitor does
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "_" + name
	}
	return name
}
