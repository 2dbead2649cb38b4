// Package pyroscope pushes pprof profiles to Grafana Pyroscope (or Grafana
// Alloy's pyroscope.receive_http) through Pyroscope's HTTP ingestion API:
//
//	POST /ingest?name=APP{label=value,...}&from=UNIX&until=UNIX&format=pprof&spyName=clrdiag
//
// with a multipart/form-data body holding the pprof profile in the file
// field "profile" and, in the file field "sample_type_config", a JSON
// object that tells Pyroscope how to read each of the profile's sample
// types ("units", "aggregation", "display-name", "sampled", "cumulative"),
// as the API reference's "pprof format" section describes and the
// .NET profiler's own Pyroscope sink sends. X-Scope-OrgID selects the
// tenant; Authorization carries basic or bearer credentials.
//
// The application name is the resource's service.name (OTEL_SERVICE_NAME,
// else the process name), made of the characters Pyroscope accepts
// ([A-Za-z0-9_./-], others become '_'); the labels are pod and namespace
// (k8s.pod.name and k8s.namespace.name of the resource, from
// OTEL_RESOURCE_ATTRIBUTES, POD_NAME and POD_NAMESPACE), pid, and
// Config.Labels. Label names keep to [A-Za-z0-9_.]; a ',' '{' '}' in a
// value, which would end it early in Pyroscope's parser, becomes '_'.
// from and until are Unix seconds.
//
// clrdiag's sample types (profile.Profile.Weighted: samples, wall, cpu,
// alloc_objects, alloc_space, contentions, delay, exceptions) get the
// configuration Pyroscope's own defaults and its .NET profiler give their
// counterparts: CPU and wall time are sampled, allocations summed,
// contention shown as mutex_count and mutex_duration.
//
// Profiles are queued (bounded) and each is sent in its own request, with
// retries on network errors, 5xx and 429, backoff and Retry-After.
package pyroscope
