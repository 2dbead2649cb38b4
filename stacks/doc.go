// Package stacks takes a snapshot of the managed stacks of every thread of a
// live .NET process, as dotnet-stack does, with no .NET installed.
//
// Capture runs a very short SampleProfiler session (Config.Duration, 10 ms
// by default), stops it, waits for the rundown the runtime then sends (it
// names every loaded method, so it can take seconds in a large application)
// and keeps the first sample of each thread, symbolised with the rundown by
// package profile. The runtime's sampler may not have run yet when so short a
// session stops, so a session without samples is retried for ten times as
// long, up to Config.Attempts sessions.
//
// The session's bytes are spooled to a temporary file (Config.TempDir) while
// the rundown arrives; nothing else is written. On Unix the file is removed
// from its directory as soon as it is made, so nothing is left behind even
// when the process is killed. The session runs eventpipe's lifecycle
// (Session.Drain): each wait is bounded (StopTimeout, RundownTimeout) and so
// is the spool (Config.MaxBytes, 1 GiB by default); a runtime that answers
// with something other than a nettrace stream is refused at once.
//
// Thread names are not in EventPipe. On Linux, when Config.PID is the
// target's process id as seen by this machine's /proc, FromProfile reads the
// names the runtime gave its OS threads (.NET Core 3.1 gives none); the
// snapshot's NamesNote says why names are missing.
//
// Progress and recoverable problems (a retry, a slow or missing rundown, a
// cut stream) are reported to Config.Notify as Notes; failures are returned
// as errors: *Error for a failed step, ErrNoSamples and ErrEndedEarly
// (wrapped) for sessions that produced nothing usable.
//
// The package has no package-level mutable state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package stacks
