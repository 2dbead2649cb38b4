package realcomp

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Collector is a running OpenTelemetry Collector: an OTLP/HTTP receiver on
// loopback whose every metric, log record (and profile) is printed by the
// debug exporter at detailed verbosity into the process's log.
type Collector struct {
	*Process
	// Endpoint is the OTLP/HTTP base URL, e.g. http://127.0.0.1:PORT.
	Endpoint string
}

// CollectorOptions says which pipelines to start.
type CollectorOptions struct {
	// Profiles adds a profiles pipeline and starts the collector with
	// --feature-gates=+service.profilesSupport.
	Profiles bool
}

// StartCollector starts the collector built by
// scripts/build-components.sh (or $CLRDIAG_OTELCOL) and waits until it
// accepts OTLP/HTTP.
func StartCollector(t testing.TB, opts CollectorOptions) *Collector {
	t.Helper()
	bin, err := findBinary("CLRDIAG_OTELCOL", "otelcol", false)
	if err != nil {
		Missing(t, "the OpenTelemetry Collector", err.Error()+"; build it with scripts/build-components.sh (the collector builder, v0.165.0)")
	}
	port := FreePort(t)
	dir := t.TempDir()
	pipelines := `    metrics:
      receivers: [otlp]
      exporters: [debug]
    logs:
      receivers: [otlp]
      exporters: [debug]
`
	var args []string
	if opts.Profiles {
		pipelines += `    profiles:
      receivers: [otlp]
      exporters: [debug]
`
		args = append(args, "--feature-gates=+service.profilesSupport")
	}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
%s`, port, pipelines)
	path := writeFile(t, dir, "otelcol.yaml", cfg)
	args = append(args, "--config", path)
	c := &Collector{Process: start(t, "otelcol", bin, args, nil, dir), Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// The receiver answers 405 to a GET once it is listening.
	c.waitHTTP(t, http.MethodGet, c.Endpoint+"/v1/metrics", anyAnswer)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if _, err := c.WaitLog(ctx, func(s string) bool { return strings.Contains(s, "Everything is ready") }); err != nil {
		t.Fatalf("otelcol: %v", err)
	}
	return c
}
