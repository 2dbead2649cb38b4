// Package diag is a client for the .NET Diagnostic IPC protocol: it asks a
// running runtime for its process information and environment, sets
// environment variables, writes dumps, attaches profilers, manages startup
// suspension (ResumeRuntime, StartupProfiler, ApplyStartupHook), toggles perf
// maps, and starts and stops EventPipe streams.
//
// # Usage
//
//	c := diag.NewClient(endpoint, nil) // endpoint: a transport.Endpoint or *ipctest.Server
//	info, err := c.ProcessInfo(ctx)
//	if errors.Is(err, ipc.ErrUnknownCommand) {
//		// .NET Core 3.x: no ProcessInfo at all
//	}
//	err = c.WriteDump(ctx, diag.DumpRequest{Path: "/tmp/core.1234"})
//
// Every command opens its own connection through the Dialer, as the
// protocol requires (each connection carries one command). Config.Timeout
// bounds a command (default 30 s) unless the context's deadline is earlier;
// the deadline is set on the connection, and cancelling the context closes
// it, so no call blocks past either. Config.Deadline is one deadline for
// every command of the client, fallbacks included (a tool's --timeout).
// A ProcessInfo reply no runtime sends (bytes left over, pid 0, NUL
// characters in a string) is an *ipc.ProtocolError.
//
// Like the official client, ProcessInfo falls back from ProcessInfo3 to 2
// to 1 and WriteDump from GenerateCoreDump3 to 2 to 1 when the runtime
// answers UNKNOWN_COMMAND. Errors from the runtime are *ipc.ServerError
// values naming the command ("ProcessInfo: this runtime does not support
// it; it needs .NET 5 or later ...") and match the ipc sentinels with
// errors.Is. Malformed or truncated replies give *ipc.ProtocolError.
//
// AttachProfilerRequest.AttachTimeout is sent in milliseconds, which is what
// the protocol documents and the runtime implements; the official .NET
// client sends seconds instead. The runtime passes a profiler's own
// HRESULTs through: AttachAdvice says what each means for an attach, and
// AttachError puts it on one line with the runtime's answer.
//
// StartStream and StartTracing return the connection carrying the nettrace
// stream; it has no deadline and outlives the context, and the caller stops
// the session with StopTracing (a new connection), reads the stream to EOF
// and closes it.
//
// # Concurrency
//
// A Client holds no connection and no mutable state; it is safe for
// concurrent use by multiple goroutines. Note that a runtime handles one
// request at a time, so concurrent commands to the same process queue up.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package diag
