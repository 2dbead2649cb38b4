// Package otlp exports clrdiag's metrics and logs (and, behind
// Config.Profiles, profiles) over OTLP/HTTP with protobuf bodies, to an
// OpenTelemetry Collector or any OTLP endpoint: POST /v1/metrics,
// /v1/logs and /v1development/profiles under Config.Endpoint, with
// Config.Headers on every request (an API key, a tenant).
//
// The messages are the OpenTelemetry protocol's own generated types from
// the "slim" modules, which carry no gRPC dependency
// (go.opentelemetry.io/proto/slim/otlp for metrics and logs, and
// .../otlp/profiles/v1development v0.4.1, the version the collector's
// v0.165 pdata follows, for profiles): no hand-written encoder.
// Records are queued (bounded: a full queue drops and counts), sent in
// batches when BatchSize are waiting or FlushInterval has passed, and a
// batch is retried on network errors and on 429, 502, 503 and 504 (the
// answers OTLP/HTTP calls retryable), with exponential backoff, jitter and
// Retry-After. A partial success (some points rejected) is reported in
// Stats.LastError.
//
// Metrics are grouped by resource (the process) and scope (the Meter or
// EventSource); a telemetry.Metric becomes a Gauge, a cumulative Sum or a
// Summary data point with its attributes. A telemetry.LogRecord becomes a
// LogRecord with its severity number and text, body, event name and
// attributes, under the scope of its logger category.
//
// ExportProfile converts a pprof profile into OTLP profiles (one Profile
// per sample type over a shared dictionary of strings, functions,
// mappings, locations, stacks and label attributes) and sends it at once.
//
// Run the Exporter's Run in a goroutine; cancelling its context sends what
// is queued one last time.
package otlp
