package remotewrite

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/internal/push"
	"github.com/golang/snappy"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/prompb"
)

// Config configures an Exporter. URL is required; the zero value of every
// other field is the default.
type Config struct {
	// URL is the remote-write endpoint, e.g.
	// "http://prometheus:9090/api/v1/write".
	URL string
	// Headers are sent with every request (a tenant: X-Scope-OrgID).
	Headers map[string]string
	// Username and Password send HTTP basic authentication; BearerToken
	// an Authorization: Bearer header.
	Username, Password string
	BearerToken        string
	// ExternalLabels are added to every series (cluster="prod").
	ExternalLabels map[string]string
	// Delivery is the queue, batch and retry configuration.
	Delivery telemetry.Delivery
}

// Exporter pushes metrics by remote write. Its methods are safe for
// concurrent use.
type Exporter struct {
	cfg      Config
	delivery push.Config
	header   http.Header
	external []prompb.Label
	queue    *push.Queue[telemetry.Metric]
}

// New checks the configuration and makes an Exporter; start its Run.
func New(cfg Config) (*Exporter, error) {
	u, err := url.Parse(cfg.URL)
	if cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remotewrite: URL %q is not an http or https URL (e.g. http://prometheus:9090/api/v1/write)", cfg.URL)
	}
	e := &Exporter{cfg: cfg, delivery: cfg.Delivery.WithDefaults(), header: http.Header{}}
	if err := push.SetHeaders(e.header, cfg.Headers); err != nil {
		return nil, fmt.Errorf("remotewrite: %w", err)
	}
	if err := push.SetAuth(e.header, cfg.Username, cfg.Password, cfg.BearerToken); err != nil {
		return nil, fmt.Errorf("remotewrite: %w", err)
	}
	e.header.Set("Content-Type", "application/x-protobuf")
	e.header.Set("Content-Encoding", "snappy")
	e.header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	e.header.Set("User-Agent", "clrdiag")
	ln := otlptranslator.LabelNamer{}
	for k, v := range cfg.ExternalLabels {
		name, err := ln.Build(k)
		if err != nil {
			return nil, fmt.Errorf("remotewrite: external label %q: %w", k, err)
		}
		e.external = append(e.external, prompb.Label{Name: name, Value: v})
	}
	e.queue = push.NewQueue(e.delivery, e.send)
	return e, nil
}

// Run sends batches until ctx ends, then sends what is queued one last
// time and returns.
func (e *Exporter) Run(ctx context.Context) { e.queue.Run(ctx) }

// Export queues metrics and reports how many a full queue dropped.
func (e *Exporter) Export(ms ...telemetry.Metric) (dropped int) { return e.queue.Add(ms...) }

// Flush sends everything queued (Run must be running) and returns the last
// failed batch's error.
func (e *Exporter) Flush(ctx context.Context) error { return e.queue.Flush(ctx) }

// Stats counts what the exporter did.
func (e *Exporter) Stats() telemetry.Stats { return e.queue.Stats() }

// retryable is remote write's rule: 5xx and 429 are retried, other 4xx
// answers never.
func retryable(status int) bool { return status >= 500 || status == http.StatusTooManyRequests }

func (e *Exporter) send(ctx context.Context, ms []telemetry.Metric) error {
	req := &prompb.WriteRequest{Timeseries: e.Series(ms)}
	raw, err := req.Marshal()
	if err != nil {
		return fmt.Errorf("remotewrite: marshal: %w", err)
	}
	_, err = push.Post(ctx, e.delivery, push.Request{URL: e.cfg.URL, Body: snappy.Encode(nil, raw), Header: e.header, Retryable: retryable})
	if err != nil {
		return fmt.Errorf("remotewrite: %w", err)
	}
	return nil
}

// Series turns metrics into remote-write time series: one per series, its
// samples in time order, labels sorted by name.
func (e *Exporter) Series(ms []telemetry.Metric) []prompb.TimeSeries {
	var out []prompb.TimeSeries
	index := map[string]int{}
	add := func(labels []prompb.Label, t int64, v float64) {
		slices.SortFunc(labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
		labels = slices.CompactFunc(labels, func(a, b prompb.Label) bool { return a.Name == b.Name })
		var key strings.Builder
		for _, l := range labels {
			key.WriteString(l.Name)
			key.WriteByte(0)
			key.WriteString(l.Value)
			key.WriteByte(0)
		}
		i, ok := index[key.String()]
		if !ok {
			i = len(out)
			index[key.String()] = i
			out = append(out, prompb.TimeSeries{Labels: labels})
		}
		out[i].Samples = append(out[i].Samples, prompb.Sample{Value: v, Timestamp: t})
	}
	namer := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	for i := range ms {
		m := &ms[i]
		var typ otlptranslator.MetricType = otlptranslator.MetricTypeGauge
		switch {
		case m.Kind == telemetry.Summary:
			typ = otlptranslator.MetricTypeSummary
		case m.Kind == telemetry.Sum && m.Monotonic:
			typ = otlptranslator.MetricTypeMonotonicCounter
		case m.Kind == telemetry.Sum:
			typ = otlptranslator.MetricTypeNonMonotonicCounter
		}
		name, err := namer.Build(otlptranslator.Metric{Name: m.Name, Unit: m.Unit, Type: typ})
		if err != nil || name == "" {
			continue
		}
		base := e.labels(m)
		t := m.Time.UnixMilli()
		with := func(name string, extra ...prompb.Label) []prompb.Label {
			l := make([]prompb.Label, 0, len(base)+1+len(extra))
			l = append(l, prompb.Label{Name: "__name__", Value: name})
			l = append(l, base...)
			return append(l, extra...)
		}
		if m.Kind != telemetry.Summary {
			if !math.IsNaN(m.Value) {
				add(with(name), t, m.Value)
			}
			continue
		}
		for _, q := range m.Quantiles {
			add(with(name, prompb.Label{Name: "quantile", Value: strconv.FormatFloat(q.Quantile, 'g', -1, 64)}), t, q.Value)
		}
		add(with(name+"_count"), t, float64(m.Count))
		add(with(name+"_sum"), t, m.SumValue)
	}
	for i := range out {
		slices.SortStableFunc(out[i].Samples, func(a, b prompb.Sample) int { return int(a.Timestamp - b.Timestamp) })
	}
	return out
}

// labels are a metric's labels other than __name__: the resource's, the
// scope, the external labels, then the attributes; the first of two
// labels of the same name wins.
func (e *Exporter) labels(m *telemetry.Metric) []prompb.Label {
	var out []prompb.Label
	have := map[string]bool{"__name__": true, "quantile": true}
	put := func(name, value string) {
		if name == "" || value == "" || have[name] {
			return
		}
		have[name] = true
		out = append(out, prompb.Label{Name: name, Value: value})
	}
	r := m.Resource
	put("job", r.String("service.name"))
	if id := r.String("service.instance.id"); id != "" {
		put("instance", id)
	} else if h, pid := r.String("host.name"), r.String("process.pid"); h != "" || pid != "" {
		put("instance", strings.Trim(h+":"+pid, ":"))
	}
	put("pid", r.String("process.pid"))
	put("process_name", r.String("process.executable.name"))
	put("k8s_namespace_name", r.String("k8s.namespace.name"))
	put("k8s_pod_name", r.String("k8s.pod.name"))
	put(otlptranslator.ScopeNameLabelKey, m.Scope)
	for _, l := range e.external {
		put(l.Name, l.Value)
	}
	ln := otlptranslator.LabelNamer{}
	for _, kv := range m.Attrs {
		name, err := ln.Build(string(kv.Key))
		if err != nil {
			continue
		}
		put(name, kv.Value.String())
	}
	return out
}
