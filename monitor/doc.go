// Package monitor is a small HTTP API over the .NET processes clrdiag can
// reach, in the spirit of dotnet-monitor: list them, read their information
// and environment, write dumps, stream traces, take heap snapshots, read
// counters and thread stacks, and expose System.Runtime counters to
// Prometheus.
//
// # Routes
//
//	GET  /processes                      discovered processes (JSON)
//	GET  /processes/{pid}                ProcessInfo, or what the OS says on .NET Core 3.1
//	GET  /processes/{pid}/env            the environment (JSON object)
//	POST /processes/{pid}/dump?type=     a dump written to Config.DumpDir (full|heap|mini|triage)
//	GET  /processes/{pid}/trace?duration=&profile=&providers=
//	                                     a nettrace file streamed as it is collected
//	GET  /processes/{pid}/counters?duration=
//	                                     the collector's counter samples over the duration (JSON)
//	GET  /processes/{pid}/stacks?format= the managed stack of every thread (package stacks),
//	                                     JSON or, with format=text, as dotnet-stack prints it
//	GET  /processes/{pid}/gcdump?timeout= a heap snapshot (package gcdump) streamed as a .gcdump file
//	GET  /processes/{pid}/profile?sample=&duration=&format=
//	                                     a profile of the process over the duration: sample wall
//	                                     (default), cpu, alloc, contention or exceptions (package
//	                                     profile's measures), format pprof (default), speedscope,
//	                                     folded or chromium
//	GET  /processes/{pid}/logs?duration=&level=&filter=&format=
//	                                     ILogger messages (package logs) streamed as they come
//	GET  /processes/{pid}/exceptions?duration=&format=&exceptionType=&excludeExceptionType=
//	                                     the exceptions thrown over the duration, one by one with
//	                                     their stacks (package exceptions), at its end
//	GET  /collectionrules[/{name}]?pid=  each collection rule's state per process (see Fleet)
//	GET  /operations[/{id}]?pid=         the rules' artifact actions; DELETE /operations/{id} cancels
//	GET  /pprof/{process}/{profile|alloc|contention|exceptions}?seconds=
//	                                     a gzipped pprof for scrapers; {process} a pid or a name
//	GET  /metrics                        Prometheus exposition (see Metrics)
//	GET  /ui/                            the dashboard, for a browser (see Dashboard)
//	GET  /                               the index of the routes and their parameters (JSON; Routes)
//
// dotnet-monitor's spellings reach the same handlers, the process named by
// ?pid= or ?name=: GET /process, /env, /dump (streams the dump back),
// /trace (profile=Cpu, GcCollect), /livemetrics, /stacks, /gcdump, /logs,
// /exceptions and GET /info; duration is also accepted as durationSeconds. Routes (and
// GET /) say how each differs from dotnet-monitor's. The table of routes
// is routes.go: a route added there is served and listed.
//
// Every route but the dashboard's requires "Authorization: Bearer
// <Config.APIKey>" unless Config.NoAuth is set. Dumps are written only to
// Config.DumpDir, under a name the server makes; no request parameter can
// choose the path.
//
// The runtime serves one diagnostic command at a time, so requests to one
// process are serialized (a per-process queue that honours the request's
// context; a stack snapshot holds its process's turn until the rundown has
// arrived); requests to different processes run concurrently.
//
// A trace is streamed while it is collected and ends with its rundown; the
// session is closed at the latest a stop timeout and DefaultRundownTimeout
// after its duration, and after Config.MaxTraceBytes (1 GiB) whatever the
// runtime still sends (the stream is then cut inside a block). The
// X-Clrdiag-Trace-End trailer says why it ended ("duration reached; rundown
// completed", "size cap reached; ..."). A client that goes away abandons the
// session at once. A stack snapshot's session is capped the same way.
//
// A stack snapshot's warnings (an older runtime's fallbacks, a rundown that
// did not end in DefaultRundownTimeout, a cut stream) are sent as
// X-Clrdiag-Warning response headers. Threads are named only for processes
// reached through a transport.Endpoint with a pid, whose /proc is this
// machine's.
//
// # Metrics
//
// GET /metrics answers at once from the state of a background collector, as
// dotnet-monitor does: the collector reads Config.MetricsCounters
// (System.Runtime and ASP.NET Core's Microsoft.AspNetCore.Hosting by
// default) in every process and keeps the latest sample of each (pid,
// counter, tags). It keeps two sessions (package counters) per process: one
// for the providers' EventCounters, always open and publishing every
// Config.MetricsWindow, and one for their Meters (System.Diagnostics.Metrics,
// .NET 6+; the shared session with dotnet-counters' settings on .NET 8+),
// open only while someone reads the process's values (a scrape, the
// dashboard, a counters request within Config.MetricsIdle): a .NET 8+
// runtime refuses dotnet-counters' private Metrics session while any other
// exists. While a provider's Meter publishes, its EventCounters are left
// out. It re-discovers the processes every Config.DiscoveryInterval: a
// new process gets its sessions, an ended one is dropped with its series.
// Opening or stopping a session takes the process's turn like any request;
// the open session's event stream does not hold it. Each metric is labelled
// pid and process_name. A session that cannot be opened or breaks is
// retried with backoff (from MetricsWindow up to a minute) and one that
// stops publishing is reopened; meanwhile its values are withdrawn,
// clrdiag_collector_up{pid} is 0, clrdiag_collector_errors_total{pid}
// counts the failures and clrdiag_scrape_errors the processes currently
// failing, clrdiag_collector_meters_up whether the Meters session is held.
// clrdiag_discovery_up tells whether the last discovery succeeded. Only a
// .NET Core 3.x session is reopened when it stops publishing (that runtime
// stops every session's counters when one ends); its series are withdrawn
// meanwhile and keep what they added up. Server.Close stops the sessions; Config.NoMetrics turns the
// route and the collector off. Config.Logger (log/slog; nil discards)
// hears when a session is lost, stalls or is reopened.
//
// The exposition follows the Prometheus conventions (promtool check
// metrics and client_golang's promlint pass on it; see promexport.go):
//   - values are in base units named by a suffix: MB (10^6 bytes, as the
//     runtime counts them; .NET Core 3.x rounds them down to whole MB),
//     KB and B become _bytes, % becomes _ratio (value/100), ms _seconds;
//   - EventCounters keep their provider as a prefix without its dots
//     (systemruntime_working_set_bytes, as dotnet-monitor names them);
//     System.Diagnostics.Metrics instruments are named by the
//     OpenTelemetry-to-Prometheus rules (github.com/prometheus/otlptranslator:
//     dotnet.gc.collections -> dotnet_gc_collections_total,
//     dotnet.assembly.count -> dotnet_assembly_count), with the Meter in
//     the otel_scope_name label;
//   - cumulative sources are counters (_total): a Metrics counter's own
//     total (.NET 8+); an EventCounter's incrementing counter only sends
//     per-interval increases, which the collector adds up from the moment
//     its session opened (a restarted session is a counter reset, which
//     rate() handles), so rate() gives the per-second rate;
//   - mean EventCounters, gauges and up-down counters (also the levels
//     .NET 9 and 10 publish as counters: dotnet.thread_pool.thread.count
//     and queue.length) are gauges of the current value; an EventCounter
//     gauge whose name would end in _count gets a plural instead
//     (systemruntime_threadpool_threads); Metrics histograms are summaries
//     (quantiles of the last interval, _count and _sum added up);
//   - HELP gives the display name, the source counter and its unit.
//
// # Hostile clients
//
// Every request first passes a guard, with or without an API key: its Host
// header must be an IP address, localhost (or *.localhost) or one of
// Config.AllowedHosts (421 otherwise), which defeats DNS rebinding; a
// browser request from another origin (Sec-Fetch-Site, else Origin against
// Host, by net/http's CrossOriginProtection) is refused (403) on every
// route, GETs included since traces, counters and stacks start sessions in
// the target; CORS headers are sent only to Config.CORSOrigins. Serve (or
// HTTPServer) bounds connections: at most MaxConns at once (64; at the cap
// a new connection replaces the oldest one not in a request, so idle
// connections cannot lock out a client that asks something), headers
// within ReadHeaderTimeout (10 s), the request within ReadTimeout (30 s),
// idle keep-alive connections closed after IdleTimeout (60 s), short
// routes answered within WriteTimeout (1 min); routes to a process extend
// their deadlines to QueueTimeout + MaxDuration + 3 min, a trace stream
// whose client reads nothing for StreamStallTimeout (30 s) is cut and its
// session closed, and a request waits at most QueueTimeout (30 s) for its
// process's turn before a 503 with Retry-After. Serve serves HTTPS when
// given a certificate. The long-lived counters sessions read with
// counters' stream limits, and keep at most MaxSeriesPerProcess series.
//
// # Dashboard
//
// /ui/ is a page for a browser, written in the project and embedded (no
// framework, no third-party file, nothing fetched from elsewhere): the
// processes (pid, name, command line, runtime version), per process live
// charts of the System.Runtime counters (CPU, memory, allocation rate, GC
// counts, exceptions, thread pool) and actions: a profile of N seconds
// (any measure of package profile: CPU samples, allocations, lock waits,
// exceptions) or a heap snapshot, whose flame graph opens in the page (package viewer,
// mounted under /ui/profiles/{id}/), the stacks of all threads, and a dump
// into Config.DumpDir. The charts read what the /metrics collector keeps
// (the last HistoryLen values of each series, tagged ones included: rates
// per second of the real time each value covers, bytes and seconds in base
// units): the EventCounters of .NET Core 3.1 to 8, the System.Runtime
// Meter's instruments on .NET 9+. The page polls it, and no viewer opens a
// session of its own. Every error, also of a path no route serves, is a
// JSON object {"error": "..."}. Profiles
// and snapshots run as jobs the page polls (/ui/api/jobs/{id}), so no
// request waits for a collection; the last few results are kept. A
// runtime's error is the job's or the request's error, which the page
// shows.
//
// A browser signs in with a cookie instead of the bearer key: the link
// the monitor prints at start, /ui/login?token=TOKEN (Server.DashboardPath;
// the token is made by New and is not the API key), or the API key typed
// into the form at /ui/login, starts a session with an HttpOnly,
// SameSite=Strict cookie (SessionCookie) for SessionLifetime. A page of
// /ui/ without a session is redirected (303) to the form, and the
// dashboard's API answers 401. Requests that change state (POST) need the
// session's CSRF token, which the page holds, in the CSRFHeader header or
// a form's csrf field. Scripts may call /ui/api/ with the bearer key and no
// token. The cookie does not open the REST API. With Config.NoAuth none of
// this applies.
//
// # Fleet
//
// Config.Fleet (a FleetConfig, which LoadFleetConfig reads from the
// monitor's configuration file and the environment) makes the monitor a
// fleet agent (fleet.go): collection rules (package rules) applied to
// every process the Source lists, their artifacts shipped by the egress
// providers (package egress: a directory, S3), and telemetry pushed
// (package telemetry: OTLP metrics, logs and profiles, Prometheus remote
// write, Pyroscope). New builds every provider and exporter first and
// refuses a configuration it cannot run whole (a *rules.ConfigError naming
// each key). The rules' counter triggers and the pushed metrics are fed
// by the /metrics collector's sessions (observeRules, observeSeries; the
// counters the rules name are added to its sessions); the rules' event
// triggers, the OTLP logs and the continuous profiles open sessions of
// their own whose commands take the process's turn, and the rules' actions
// take it around each command they send (rules.Options.Turn). The engine
// and the exporters' counts are on /metrics. CurrentPrivileges and
// Privileges.Notes say what the monitor's user and capabilities reach.
//
// Processes come from a Source: LocalSource discovers the processes of this
// machine (transport.Discover), ReverseSource lists the runtimes connected to
// a reverse server (transport/reverse), for runtimes in other containers that
// connect to a shared socket, named from their ProcessInfo and forgotten
// when they do not connect again after a command; ReverseSource's
// AcceptRuntimes names and resumes each one as it arrives.
//
// ListenAddr reads the URL to serve on (a URL such as http://*:PORT, and
// the other ASP.NET spellings), IsLoopback says whether it is reachable only
// from this machine, and LocalURL is where a browser here finds the server
// (the base of the dashboard link).
//
// The package has no package-level mutable state; its Prometheus collector
// lives on the Server's own registry, and its goroutines end with
// Server.Close.
//
// Stability: the server's Go API serves clrdiag itself and may change
// freely; its HTTP routes are documented in the README and change with
// care.
package monitor
