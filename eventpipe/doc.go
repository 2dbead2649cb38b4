// Package eventpipe configures and runs EventPipe sessions in a .NET
// process: providers and their dotnet-trace syntax, profiles, the
// --clrevents keyword map and rundown options, composed into a Plan, and
// the one lifecycle of a session: Start, Drain, done.
//
// Parsing follows dotnet-trace exactly so that command lines carry over:
//
//	plan, err := eventpipe.Compose(eventpipe.Request{
//		Providers: "Microsoft-Windows-DotNETRuntime:0x8001:5,MyEventSource",
//		Profiles:  []string{"dotnet-sampled-thread-time"},
//	})
//
// Keywords are hexadecimal, levels numbers or names, duplicate providers
// are merged (keywords OR'd, most verbose level wins) and explicit
// providers take precedence over those of a profile.
//
// Plan.Config turns a plan into the Config that Start takes; Start falls
// back to older CollectTracing commands on older runtimes with warnings.
//
// # Lifecycle
//
// Session.Drain copies the session's stream to an io.Writer until the
// collection ends (DrainConfig.Duration, a StopReason sent by the caller,
// the stream's own end), then sends StopTracing and copies the rest of the
// stream, the rundown, so the output is a complete trace:
//
//	sess, err := eventpipe.Start(ctx, client, plan.Config())
//	if err != nil { ... }
//	res, err := sess.Drain(ctx, file, eventpipe.DrainConfig{Duration: 30 * time.Second})
//
// A caller that waits for an event (a heap snapshot waits for the end of
// the heap walk) sends StopEvent on DrainConfig.Stop when it sees it, and
// bounds the wait with CollectTimeout, which abandons a collection that
// did not end in time but leaves the stop and the rundown their own bounds.
//
// Every wait is bounded (StopTimeout, RundownTimeout, MaxTime), and so is
// the output (MaxBytes) and what arrives after the stop (MaxRundownBytes,
// 256 MiB by default: a runtime that keeps streaming is cut there,
// RundownTooLarge). Ending ctx abandons the session at once, as StopDamaged
// does. A stream
// that does not start like a nettrace stream and an output that fails stop
// the session and make Drain fail; the DrainResult says why the collection
// ended (StopReason) and how the stream ended (RundownState).
//
// DrainResult.Warnings turns the result into what a person should be told
// (a rundown cut short, a stop not acknowledged, a target that went away),
// as typed DrainWarnings with a sentence each.
//
// A Spool is an io.Writer for Drain that readers can follow while it is
// written (a decoder counting events, a printer); NewTempSpool makes one on
// a temporary file that nothing can leave behind, optionally a ring.
// Session.DrainDecode runs a session while a Consumer decodes the same
// stream (through a Spool, or a pipe at the consumer's pace): the consumer
// can end the collection (StopEvent at a stopping event), and damage it
// finds abandons the session at once. EventFilter.StopAt is such a
// consumer; a Tally's Consumer also counts every event (and the drops) for
// a status line and the trace's summary, stopping at an optional filter.
//
// All functions are safe for concurrent use; no package state is mutable.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package eventpipe
