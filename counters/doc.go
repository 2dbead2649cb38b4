// Package counters reads live metrics from a .NET process: EventCounters
// of any EventSource and System.Diagnostics.Metrics instruments, turned
// into a stream of typed samples for display, CSV/JSON export and the
// monitor's Prometheus endpoint.
//
// The --counters syntax of dotnet-counters is parsed by ParseSpecs. NewPlan
// turns specs into EventPipe providers as dotnet-counters does: each
// EventSource with EventCounterIntervalSec, and one System.Diagnostics.Metrics
// provider (SessionId SHARED on .NET 8+, a GUID before) for the Meters.
// Start opens the session in a process (*diag.Client is a Target) and
// Session.Run calls a function with every Update (a Sample or a Warning)
// until its context ends:
//
//	s, err := counters.Start(ctx, client, counters.Config{})
//	if err != nil { ... }
//	defer s.Close()
//	err = s.Run(ctx, func(u counters.Update) error { ...; return nil })
//
// A rate's Sample carries the real time its increase covers (Elapsed: the
// EventCounters payload's IntervalSec, or the time between the Metrics
// session's collections), and is shown per second (Shown, PerSecond,
// Label's "(Count / 1 sec)"). Up-down counters, and the levels .NET 9 and 10
// publish as counters, are KindUpDown with their current value.
//
// Follow does the same across stalls on .NET Core 3.x: a session that
// published values and stops publishing (Config.StallTimeout) is stopped
// and a new one opened, so the values keep coming; the monitor's /metrics
// and the CLI use it. A later runtime's session is never reopened. A .NET
// Core 3.x runtime keeps one EventCounters interval for all sessions (the
// shortest asked for; sometimes 1 s for the first session of a process):
// when only another interval arrives, the Decoder adopts it with a
// WarnIntervalChanged warning rather than dropping every value.
//
// ReadTrace decodes a saved session file the same way, and Decoder works
// event by event. A provider named without the EventCounters\ prefix is
// read both as a Meter and as an EventSource; once its Meter publishes, its
// EventCounters are dropped. Metrics events of other sessions are ignored;
// limit and error events become warnings, each given once. The Meter and
// instrument tags that BeginInstrumentReporting announces (.NET 8+) are
// kept on the instrument's samples (Sample.MeterTags, InstrumentTags) and
// written by the JSON exporter as dotnet-counters writes them.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how. The terminal view of clrdiag counters monitor
// is not here: it belongs to the CLI (internal/counterview).
package counters
