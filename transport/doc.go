// Package transport finds the diagnostic endpoints of running .NET processes
// and opens connections to them, with no .NET installed.
//
// A .NET Core 3.0+ runtime serves the Diagnostic IPC protocol on a Unix
// domain socket named $TMPDIR/dotnet-diagnostic-{pid}-{key}-socket (key: the
// process start time, in jiffies on Linux and seconds since the epoch on
// macOS) or, on Windows, on the named pipe \\.\pipe\dotnet-diagnostic-{pid}.
// The protocol carries one command per connection, so callers dial once per
// command.
//
// # Usage
//
//	ep, err := transport.Resolve(ctx, pid, nil) // or Discover, FindByName
//	if err != nil {
//		return err // a *NotFoundError that says what was checked and what to try
//	}
//	conn, err := ep.Dial(ctx)
//
// Endpoint and Dialer have the method Dial(ctx) (net.Conn, error), which is
// what the diag client takes. Dial retries a refused or missing endpoint for
// up to a second (Dialer.RetryFor), because a starting runtime creates its
// socket a moment before it accepts on it, always within the context's
// deadline. Failures are *OpError values whose text explains the usual
// causes: the socket is mode 0600 (run as the target's user or root), a
// refused socket left behind by a killed process, a path over 107 bytes.
//
// An explicit address, as given with --diagnostic-port
// ADDRESS[,connect|,listen][,suspend|,nosuspend], is parsed by
// ParseDiagnosticPort. Listen is the default mode, as in dotnet-trace, but
// only connect mode can be dialed for now: DiagnosticPort.Endpoint returns
// ErrListenNotSupported for a listen port.
//
// # Discovery
//
// Discover lists the processes that publish an endpoint; Resolve finds one
// pid's endpoint; FindByName matches the process name (comm on Linux, so
// "dotnet" for `dotnet app.dll`), and NameOf is the other way round: a
// pid's name, or "" (for a default file name). On Linux discovery:
//
//   - lists our temp dir ($TMPDIR or /tmp, DiscoverConfig.TempDir) once;
//   - keeps only pids that exist in /proc and are not zombies (sockets of
//     killed processes stay behind and are ignored), and per pid the newest socket by mtime, or a
//     dsrouter socket (dotnet-diagnostic-dsrouter-{pid}...) at least as new;
//   - for every other process, reads /proc/PID/environ for its TMPDIR and
//     /proc/PID/status for NSpid, and looks in that TMPDIR, or, for a
//     process in another PID namespace (a container), in
//     /proc/PID/root/TMPDIR for the socket named after its inner pid;
//   - skips any /proc entry it cannot read (kernel threads, other users'
//     processes, processes that exit during the scan) instead of failing.
//
// Set DiscoverConfig.LocalOnly to skip the per-process reads.
//
// # Ownership check
//
// Anyone can create a file named dotnet-diagnostic-PID-...-socket in a
// shared /tmp, for a process of any user. On Linux, discovery therefore uses
// a socket for process PID only when it belongs to that process:
//
//   - its owner is the process's effective or file-system uid (from
//     /proc/PID/status; a socket found through /proc/PID/root is stat'ed
//     there, and both uids are mapped into our user namespace by the kernel);
//   - it was created (ctime, which its owner cannot set back) no earlier
//     than the process started (/proc/stat btime plus starttime, field 22
//     of /proc/PID/stat), less two seconds for clock steps: an older socket is
//     a stale one of an earlier process with that pid, or one made in
//     advance;
//   - a runtime socket whose name does not record the process's start time
//     (the runtime names its socket after it) is not claimed by a process
//     of another PID namespace that has that pid there and that start time:
//     a container sharing our /tmp must not make `ps` list the host's pid 2
//     (kthreadd) with its runtime's socket;
//   - such a socket is also listening in the process's network namespace
//     (/proc/PID/net/unix), when that table is readable: one nobody listens
//     on is stale, left by a runtime that exited (often pid 1 or 2 of an
//     ended container), and is not listed against the host process that
//     now has that pid.
//
// A refused socket that was created before its process or that nobody
// listens on is marked Stale: it is as harmless as one whose process is
// gone, and `clrdiag ps` does not warn about it.
//
// A socket that fails is left out (DiscoverConfig.Untrusted hears why) and
// the process's next best socket is tried, so a planted newer socket does not
// shadow the runtime's; Resolve returns an *UntrustedSocketError (matching
// ErrUntrustedSocket) when none passes. Endpoints that passed have
// CheckPeer set: Dial then asks the kernel which process listens on the
// socket it connected to (SO_PEERCRED, translated into our PID namespace)
// and refuses any other, which also closes the window between discovery
// and each connection. DiscoverConfig.TrustAnySocket turns the check off;
// endpoints named by the caller (--diagnostic-port PATH,connect) are not
// checked. Other systems do not check ownership yet. Other systems
// list the temp dir (macOS, BSDs) or the pipe namespace (Windows) and keep
// the pids that still exist.
//
// # Recording and replay
//
// A Dialer with a Recorder (package transport/record) saves every byte each
// connection writes and reads, for replay without the process.
//
// # Concurrency
//
// Endpoint, Dialer and DiagnosticPort are values safe to copy and share.
// Each returned net.Conn follows the net.Conn rules: one reader
// and one writer may run concurrently, Close unblocks both, and deadlines
// apply. Discovery keeps no state
// between calls; the package has no package-level mutable state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package transport
