// Package remotewrite pushes clrdiag's metrics to Prometheus (or anything
// that takes Prometheus remote write 1.0: Mimir, Thanos receive,
// VictoriaMetrics, Grafana Cloud): a snappy-compressed prometheus.WriteRequest
// protobuf POSTed with X-Prometheus-Remote-Write-Version: 0.1.0. The message
// is Prometheus's own prompb type and the compression the snappy library
// Prometheus itself uses.
//
// A telemetry.Metric is named by the OpenTelemetry-to-Prometheus rules
// (github.com/prometheus/otlptranslator, the library Prometheus's OTLP
// receiver uses): dotnet.gc.collections ({collection}, a counter) becomes
// dotnet_gc_collections_total, dotnet.gc.heap.total_allocated (By)
// dotnet_gc_heap_allocated_bytes_total (the rules move a "total" word to
// the _total suffix); a summary becomes NAME
// {quantile=...}, NAME_count and NAME_sum. Labels: job (service.name),
// instance (service.instance.id, else host.name:process.pid), pid,
// process_name, k8s_namespace_name and k8s_pod_name when the resource has
// them, otel_scope_name (the Meter or EventSource), Config.ExternalLabels,
// then the metric's attributes (made Prometheus-safe by the same rules).
//
// Batches are retried on network errors, 5xx answers and 429, with
// backoff; other 4xx answers (an out-of-order sample) drop the batch and
// are reported in Stats.LastError.
package remotewrite
