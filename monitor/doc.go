// Package monitor is a small HTTP API over the .NET processes clrdiag can
// reach, in the spirit of dotnet-monitor: list them, read their information
// and environment, write dumps, stream traces, read counters and thread
// stacks, and expose System.Runtime counters to Prometheus.
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
//	                                     counter samples (JSON)
//	GET  /processes/{pid}/stacks?format= the managed stack of every thread (package stacks),
//	                                     JSON or, with format=text, as dotnet-stack prints it
//	GET  /metrics                        Prometheus exposition
//
// Every route requires "Authorization: Bearer <Config.APIKey>" unless
// Config.NoAuth is set. Dumps are written only to Config.DumpDir, under a
// name the server makes; no request parameter can choose the path.
//
// The runtime serves one diagnostic command at a time, so requests to one
// process are serialized (a per-process queue that honours the request's
// context; a stack snapshot holds its process's turn until the rundown has
// arrived); requests to different processes run concurrently.
//
// A stack snapshot's warnings (an older runtime's fallbacks, a rundown that
// did not end in DefaultRundownTimeout, a cut stream) are sent as
// X-Clrdiag-Warning response headers. Threads are named only for processes
// reached through a transport.Endpoint with a pid, whose /proc is this
// machine's.
//
// Processes come from a Source: LocalSource discovers the processes of this
// machine (transport.Discover), ReverseSource lists the runtimes connected to
// a reverse server (transport/reverse), for runtimes in other containers that
// connect to a shared socket.
//
// The package has no package-level mutable state; its Prometheus collector
// lives on the Server's own registry.
package monitor
