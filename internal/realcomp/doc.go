// Package realcomp starts the real third-party components the egress and
// telemetry tests talk to, each on free loopback ports, waits until each is
// ready, and stops it when the test ends:
//
//   - an S3-compatible object store (versitygw, built from the Go module
//     proxy by scripts/build-components.sh into .cache/components),
//     with an access key and secret so that requests are SigV4-signed;
//   - an OpenTelemetry Collector built with the collector's builder from
//     scripts/components/otelcol-builder.yaml (OTLP receiver, debug
//     exporter), whose detailed debug output the tests read back;
//   - Debian's prometheus, started with its remote-write receiver.
//
// A binary is looked up in an environment variable first (CLRDIAG_S3SERVER,
// CLRDIAG_OTELCOL, CLRDIAG_PROMETHEUS), then in the components cache
// ($CLRDIAG_CACHE/components, else .cache/components at the module root),
// then (prometheus) on PATH. A missing component fails the test when
// CI=true and skips it, saying how to get it, otherwise.
//
// Every component's output goes to a log file in the test's temporary
// directory; a failed test prints its last lines. Processes are stopped
// (interrupt, then kill after 10 s) by t.Cleanup. The package has no
// package-level mutable state.
package realcomp
