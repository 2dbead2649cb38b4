// Package counters reads live metrics from a .NET process: EventCounters
// of any EventSource and System.Diagnostics.Metrics instruments, turned
// into a stream of typed samples for display, CSV/JSON export and the
// monitor's Prometheus endpoint.
//
// The --counters syntax of dotnet-counters is parsed by ParseSpecs.
package counters
