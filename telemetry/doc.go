// Package telemetry is the data model the exporters in its subpackages
// send to the systems teams already run, and the conversion of clrdiag's
// counter samples into it:
//
//   - telemetry/otlp: OTLP/HTTP protobuf metrics and logs (and, behind
//     Config.Profiles, profiles) to an OpenTelemetry Collector or any OTLP
//     endpoint;
//   - telemetry/remotewrite: Prometheus remote write 1.0;
//   - telemetry/pyroscope: pprof profiles pushed to Pyroscope's /ingest.
//
// A Metric is one data point of one series, shaped as OpenTelemetry shapes
// it: a gauge, a sum (monotonic or not, cumulative from Start) or a summary
// (count, sum and quantiles). A LogRecord is one log record. Both point to
// the Resource (the process: service.name, process.pid, k8s.pod.name, ...)
// they belong to; exporters group records by that pointer, so give every
// record of one process the same *Resource.
//
// Converter turns counters.Sample values into Metrics named by the
// OpenTelemetry semantic conventions where one exists: the System.Runtime
// Meter's instruments (.NET 9+) already carry those names
// (dotnet.gc.heap.total_allocated, ...), and the legacy System.Runtime
// EventCounters are mapped to the same names where they measure the same
// thing (alloc-rate adds up into dotnet.gc.heap.total_allocated, gen-0-size
// is dotnet.gc.last_collection.heap.size{gc.heap.generation=gen0}, ...),
// in base units (bytes, seconds, ratios). Other EventCounters keep their
// provider as a prefix (systemruntime.gc_heap_size), the way clrdiag's
// /metrics names them. See Converter for the table.
//
// The package has no package-level mutable state; a Converter keeps the
// running totals of the series it has seen.
package telemetry
