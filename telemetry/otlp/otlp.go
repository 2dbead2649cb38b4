package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/internal/push"
	collogspb "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Config configures an Exporter. Endpoint is required unless the per-signal
// URLs are all given; the zero value of every other field is the default.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL, e.g. "http://collector:4318";
	// the signal paths (/v1/metrics, /v1/logs, /v1development/profiles)
	// are added to it.
	Endpoint string
	// MetricsURL, LogsURL and ProfilesURL, when given, are used as they
	// are instead of Endpoint plus the signal path.
	MetricsURL, LogsURL, ProfilesURL string
	// Headers are sent with every request.
	Headers map[string]string
	// Gzip compresses request bodies (Content-Encoding: gzip).
	Gzip bool
	// Profiles enables the profiles signal (still in development in OTLP;
	// a collector accepts it only with --feature-gates=+service.profilesSupport).
	Profiles bool
	// Delivery is the queue, batch and retry configuration.
	Delivery telemetry.Delivery
}

// ConfigFromEnv reads the standard OTLP exporter variables:
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_{METRICS,LOGS}_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS (k=v,k=v, values percent-decoded) and
// OTEL_EXPORTER_OTLP_COMPRESSION (gzip). getenv is os.Getenv when nil.
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{
		Endpoint:   getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		MetricsURL: getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
		LogsURL:    getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"),
		Gzip:       getenv("OTEL_EXPORTER_OTLP_COMPRESSION") == "gzip",
	}
	if h := telemetry.ParseResourceAttributes(getenv("OTEL_EXPORTER_OTLP_HEADERS")); len(h) > 0 {
		c.Headers = map[string]string{}
		for _, kv := range h {
			c.Headers[string(kv.Key)] = kv.Value.AsString()
		}
	}
	return c
}

// Exporter sends metrics and logs over OTLP/HTTP. Its methods are safe for
// concurrent use.
type Exporter struct {
	cfg      Config
	delivery push.Config
	header   http.Header
	metrics  *push.Queue[telemetry.Metric]
	logs     *push.Queue[telemetry.LogRecord]
}

// New checks the configuration and makes an Exporter; start its Run.
func New(cfg Config) (*Exporter, error) {
	var err error
	if cfg.MetricsURL, err = signalURL(cfg.MetricsURL, cfg.Endpoint, "/v1/metrics"); err != nil {
		return nil, err
	}
	if cfg.LogsURL, err = signalURL(cfg.LogsURL, cfg.Endpoint, "/v1/logs"); err != nil {
		return nil, err
	}
	if cfg.Profiles {
		if cfg.ProfilesURL, err = signalURL(cfg.ProfilesURL, cfg.Endpoint, "/v1development/profiles"); err != nil {
			return nil, err
		}
	}
	e := &Exporter{cfg: cfg, delivery: cfg.Delivery.WithDefaults(), header: http.Header{}}
	if err := push.SetHeaders(e.header, cfg.Headers); err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	e.header.Set("Content-Type", "application/x-protobuf")
	if cfg.Gzip {
		e.header.Set("Content-Encoding", "gzip")
	}
	e.metrics = push.NewQueue(e.delivery, e.sendMetrics)
	e.logs = push.NewQueue(e.delivery, e.sendLogs)
	return e, nil
}

func signalURL(explicit, endpoint, path string) (string, error) {
	u := explicit
	if u == "" {
		if endpoint == "" {
			return "", errors.New("otlp: no endpoint: give Config.Endpoint (e.g. http://localhost:4318) or OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		u = strings.TrimRight(endpoint, "/") + path
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return "", fmt.Errorf("otlp: endpoint %q is not an http or https URL", u)
	}
	return u, nil
}

// Run sends batches until ctx ends, then sends what is queued one last
// time (bounded by the delivery Timeout) and returns.
func (e *Exporter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e.metrics.Run(ctx) }()
	go func() { defer wg.Done(); e.logs.Run(ctx) }()
	wg.Wait()
}

// ExportMetrics queues metrics and reports how many a full queue dropped.
func (e *Exporter) ExportMetrics(ms ...telemetry.Metric) (dropped int) { return e.metrics.Add(ms...) }

// ExportLogs queues log records and reports how many a full queue dropped.
func (e *Exporter) ExportLogs(ls ...telemetry.LogRecord) (dropped int) { return e.logs.Add(ls...) }

// Flush sends everything queued (Run must be running) and returns the
// last failed batch's error.
func (e *Exporter) Flush(ctx context.Context) error {
	return errors.Join(e.metrics.Flush(ctx), e.logs.Flush(ctx))
}

// MetricsStats and LogsStats count what the exporter did with each signal.
func (e *Exporter) MetricsStats() telemetry.Stats { return e.metrics.Stats() }

// LogsStats counts what the exporter did with log records.
func (e *Exporter) LogsStats() telemetry.Stats { return e.logs.Stats() }

func (e *Exporter) sendMetrics(ctx context.Context, ms []telemetry.Metric) error {
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: MetricsProto(ms)}
	body, err := e.post(ctx, e.cfg.MetricsURL, req)
	if err != nil {
		return err
	}
	var resp colmetricspb.ExportMetricsServiceResponse
	if err := proto.Unmarshal(body, &resp); err == nil {
		if ps := resp.GetPartialSuccess(); ps != nil && (ps.RejectedDataPoints > 0 || ps.ErrorMessage != "") {
			return fmt.Errorf("otlp: %s rejected %d of the data points: %s", e.cfg.MetricsURL, ps.RejectedDataPoints, ps.ErrorMessage)
		}
	}
	return nil
}

func (e *Exporter) sendLogs(ctx context.Context, ls []telemetry.LogRecord) error {
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: LogsProto(ls)}
	body, err := e.post(ctx, e.cfg.LogsURL, req)
	if err != nil {
		return err
	}
	var resp collogspb.ExportLogsServiceResponse
	if err := proto.Unmarshal(body, &resp); err == nil {
		if ps := resp.GetPartialSuccess(); ps != nil && (ps.RejectedLogRecords > 0 || ps.ErrorMessage != "") {
			return fmt.Errorf("otlp: %s rejected %d of the log records: %s", e.cfg.LogsURL, ps.RejectedLogRecords, ps.ErrorMessage)
		}
	}
	return nil
}

// post marshals m and sends it with retries; it returns the answer's body.
func (e *Exporter) post(ctx context.Context, u string, m proto.Message) ([]byte, error) {
	body, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("otlp: marshal: %w", err)
	}
	if e.cfg.Gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		body = b.Bytes()
	}
	resp, err := push.Post(ctx, e.delivery, push.Request{URL: u, Body: body, Header: e.header})
	if err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	return resp, nil
}
