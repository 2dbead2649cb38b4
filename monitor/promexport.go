package monitor

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
)

// This file turns counters samples into Prometheus metrics that follow the
// Prometheus conventions (promtool check metrics, promlint):
//
//   - Units are converted to base units and named by a suffix: MB, KB and B
//     become bytes (_bytes; the runtime's MB are 10^6 bytes), % becomes a
//     ratio (_ratio, value/100), ms, us and ns become seconds (_seconds).
//     Metrics instruments' UCUM units (By, s, {collection}) are named as the
//     OpenTelemetry-to-Prometheus specification says (otlptranslator).
//   - A counter whose source is cumulative is a Prometheus counter (_total).
//     A System.Diagnostics.Metrics counter carries its total since the
//     instrument was created (.NET 8+), exposed as is. An EventCounter's
//     incrementing counter (and a Metrics counter of an older runtime) only
//     sends the increase of each interval: the collector adds the increases
//     up from the moment its session opened, so rate() gives the per-second
//     rate; the total restarts at 0 (a counter reset, which rate() handles)
//     when the session is reopened.
//   - EventCounters' mean counters, Metrics gauges and up-down counters are
//     gauges; Metrics histograms are summaries whose quantiles are those of
//     the last interval and whose _count and _sum add up the intervals'.
//   - EventCounter names keep their provider as a prefix without its dots
//     (systemruntime_cpu_usage_ratio, as dotnet-monitor names them);
//     Metrics instrument names keep their dots as underscores
//     (dotnet_gc_collections_total) and the Meter goes in otel_scope_name.
//   - An EventCounter gauge may not end in _count:
//     "threadpool-thread-count" becomes systemruntime_threadpool_threads.
//     A Meter's instrument keeps its OpenTelemetry name
//     ("dotnet.assembly.count" is dotnet_assembly_count, as the
//     OpenTelemetry Collector exports it), which promlint questions.
//   - HELP names the unit, the kind and the source counter.

// metricSeries is one time series of a process: its latest sample and what
// the collector added up.
type metricSeries struct {
	fam  family // how it is exposed, fixed by its first sample
	last counters.Sample
	// total adds up the increases of a counter without a cumulative value.
	total float64
	// count and sum add up a histogram's intervals.
	count uint64
	sum   float64
	// stale marks a series of a stalled session: not exported until its
	// next sample (what it added up is kept).
	stale bool
}

// add records a sample of the series.
func (s *metricSeries) add(sm counters.Sample) {
	s.stale = false
	s.last = sm
	switch sm.Kind {
	case counters.KindRate:
		if !sm.HasTotal && sm.Value > 0 && !math.IsInf(sm.Value, 0) && !math.IsNaN(sm.Value) {
			s.total += sm.Value
		}
	case counters.KindHistogram:
		if sm.Count > 0 {
			s.count += uint64(sm.Count)
		}
		if !math.IsInf(sm.Sum, 0) && !math.IsNaN(sm.Sum) {
			s.sum += sm.Sum
		}
	}
}

// unitScale converts a value to a base unit: value*mul/div.
type unitScale struct {
	otel     string // the base unit as OpenTelemetry writes it ("By", "s", "1")
	mul, div float64
}

// baseUnit maps a counter's unit (EventCounter DisplayUnits or a Metrics
// instrument's UCUM unit) to a base unit.
func baseUnit(unit string) unitScale {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "", "count", "#", "{count}":
		return unitScale{"", 1, 1}
	case "b", "by", "byte", "bytes":
		return unitScale{"By", 1, 1}
	case "kb", "kby":
		return unitScale{"By", 1e3, 1}
	case "mb", "mby":
		return unitScale{"By", 1e6, 1}
	case "gb", "gby":
		return unitScale{"By", 1e9, 1}
	case "kib", "kiby":
		return unitScale{"By", 1 << 10, 1}
	case "mib", "miby":
		return unitScale{"By", 1 << 20, 1}
	case "gib", "giby":
		return unitScale{"By", 1 << 30, 1}
	case "%":
		return unitScale{"1", 1, 100}
	case "1", "ratio":
		return unitScale{"1", 1, 1}
	case "s", "sec", "second", "seconds":
		return unitScale{"s", 1, 1}
	case "ms", "msec", "milliseconds":
		return unitScale{"s", 1, 1e3}
	case "us", "μs", "µs", "microseconds":
		return unitScale{"s", 1, 1e6}
	case "ns", "nanoseconds":
		return unitScale{"s", 1, 1e9}
	case "min":
		return unitScale{"s", 60, 1}
	case "h":
		return unitScale{"s", 3600, 1}
	}
	return unitScale{unit, 1, 1}
}

func (u unitScale) apply(v float64) float64 {
	if u.mul != 1 {
		v *= u.mul
	}
	if u.div != 1 {
		v /= u.div
	}
	return v
}

// family is how a series is exposed.
type family struct {
	name  string
	help  string
	kind  prometheus.ValueType // GaugeValue, CounterValue; UntypedValue marks a summary
	unit  unitScale
	scope string // otel_scope_name: the Meter
}

const summaryKind = prometheus.UntypedValue

// familyOf names and types a sample's metric family.
func familyOf(sm *counters.Sample) family {
	f := family{unit: baseUnit(sm.Unit)}
	src := "EventCounter " + sm.Provider + "/" + sm.Name
	name := snake(metricName(sm.Provider) + "_" + sm.Name)
	if sm.Meter {
		src = "instrument " + sm.Name + " of the Meter in otel_scope_name"
		name = snake(sm.Name)
		f.scope = sm.Provider
	}
	var typ otlptranslator.MetricType = otlptranslator.MetricTypeGauge
	var what string
	switch sm.Kind {
	case counters.KindRate:
		f.kind, typ = prometheus.CounterValue, otlptranslator.MetricTypeMonotonicCounter
		if sm.Meter {
			what = "counter; the instrument's total, or the increases added up since clrdiag's session opened where the runtime sends no total (before .NET 8)"
		} else {
			what = "incrementing counter; its per-interval increases added up since clrdiag's session opened"
		}
	case counters.KindHistogram:
		f.kind, typ = summaryKind, otlptranslator.MetricTypeSummary
		what = "histogram; quantiles of the last interval, count and sum added up since clrdiag's session opened"
	case counters.KindUpDown:
		f.kind, what = prometheus.GaugeValue, "up-down counter"
	case counters.KindGauge:
		f.kind, what = prometheus.GaugeValue, "gauge"
	default:
		f.kind, what = prometheus.GaugeValue, "mean over the interval"
	}
	namer := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	built, err := namer.Build(otlptranslator.Metric{Name: name, Unit: f.unit.otel, Type: typ})
	if err != nil || built == "" {
		built = metricName(name)
	}
	if f.kind == prometheus.GaugeValue {
		built = gaugeName(built, !sm.Meter)
	}
	f.name = built

	label := sm.DisplayName
	if label == "" {
		label = sm.Name
	}
	f.help = label + " (" + src + ", " + what
	switch {
	case sm.Unit == "":
	case f.unit.mul != 1 || f.unit.div != 1:
		f.help += "; unit " + sm.Unit + ", exposed in " + unitWord(f.unit.otel)
	default:
		f.help += "; unit " + sm.Unit
	}
	f.help += ")"
	return f
}

func unitWord(otel string) string {
	switch otel {
	case "By":
		return "bytes"
	case "s":
		return "seconds"
	case "1":
		return "a ratio (1 = 100%)"
	}
	return otel
}

// gaugeName renames a gauge whose name ends in a suffix Prometheus reserves
// for counters, histograms and summaries: a trailing total, sum or bucket
// is dropped, and, when plural is set (EventCounters), a trailing count
// becomes a plural (threadpool_thread_count -> threadpool_threads). A
// Meter's instrument keeps the name the OpenTelemetry-to-Prometheus rules
// give it (dotnet.assembly.count -> dotnet_assembly_count), the name the
// OpenTelemetry Collector and dotnet-monitor export it under.
func gaugeName(name string, pluralize bool) string {
	n := strings.TrimRight(name, "_")
	for _, suf := range []string{"_total", "_sum", "_bucket"} {
		if t, ok := strings.CutSuffix(n, suf); ok && t != "" {
			return t
		}
	}
	if !pluralize {
		return name
	}
	t, ok := strings.CutSuffix(n, "_count")
	if !ok || t == "" {
		return name
	}
	return plural(t)
}

// plural makes the last word of a snake_case name plural, unless it looks
// like a participle or is already plural (methods_jitted).
func plural(s string) string {
	word := s[strings.LastIndexByte(s, '_')+1:]
	switch {
	case word == "" || word[len(word)-1] >= '0' && word[len(word)-1] <= '9',
		strings.HasSuffix(word, "ed"), strings.HasSuffix(word, "s"):
		return s
	case strings.HasSuffix(word, "y") && len(word) > 1 && !strings.ContainsRune("aeiou", rune(word[len(word)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(word, "x"), strings.HasSuffix(word, "z"), strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "sh"):
		return s + "es"
	}
	return s + "s"
}

// snake writes a name in lower snake case: camelCase words are split
// (MyApp.Requests -> my_app.requests); other characters are left to the
// Prometheus name rules.
func snake(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 4)
	prevLower := false
	for _, r := range s {
		isUpper := r >= 'A' && r <= 'Z'
		if isUpper && prevLower {
			b.WriteByte('_')
		}
		prevLower = r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if isUpper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// seriesMetric builds the metric of one series of a process, or nil when it
// has no value to expose. Labels: pid, process_name, otel_scope_name for
// Meters, then the sample's tags (Prometheus-safe names; a tag that would
// clash with another label is prefixed with tag_).
func seriesMetric(f family, s *metricSeries, p Process) (prometheus.Metric, error) {
	sm := &s.last
	labels := []string{"pid", "process_name"}
	values := []string{strconv.Itoa(p.PID), p.Name}
	if f.scope != "" {
		labels = append(labels, otlptranslator.ScopeNameLabelKey)
		values = append(values, f.scope)
	}
	ln := otlptranslator.LabelNamer{}
	for _, t := range sm.Tags {
		l, err := ln.Build(snake(t.Key))
		if err != nil || l == "" {
			continue
		}
		for slices.Contains(labels, l) || l == "quantile" || l == "le" || strings.HasPrefix(l, "__") {
			l = "tag_" + l
		}
		labels = append(labels, l)
		values = append(values, t.Value)
	}
	switch f.kind {
	case summaryKind:
		qs := make(map[float64]float64, len(sm.Quantiles))
		for _, q := range sm.Quantiles {
			qs[q.Quantile] = f.unit.apply(q.Value)
		}
		desc := prometheus.NewDesc(f.name, f.help, labels, nil)
		return prometheus.NewConstSummary(desc, s.count, f.unit.apply(s.sum), qs, values...)
	case prometheus.CounterValue:
		v := s.total
		if sm.HasTotal {
			v = sm.Total
		}
		if math.IsNaN(v) || v < 0 {
			return nil, nil // not a counter value
		}
		desc := prometheus.NewDesc(f.name, f.help, labels, nil)
		return prometheus.NewConstMetric(desc, prometheus.CounterValue, f.unit.apply(v), values...)
	}
	desc := prometheus.NewDesc(f.name, f.help, labels, nil)
	return prometheus.NewConstMetric(desc, prometheus.GaugeValue, f.unit.apply(sm.Value), values...)
}
