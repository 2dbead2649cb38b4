// Package profile turns an EventPipe trace into answers: a symbolised
// CPU/thread-time profile from the SampleProfiler's samples (the Builder),
// its weighted stacks for each measure (Profile.Weighted, which package
// weighted exports to speedscope, Chromium trace-event JSON, pprof and
// folded stacks), and a report of hot methods, threads, garbage
// collections, exceptions and lock contention (BuildReport).
//
//	format, _ := weighted.LookupFormat("pprof") // the export format registry
//	p, err := profile.Read(f, profile.Config{Timeline: format.Timeline})
//	if err != nil && p == nil {
//		return err
//	}
//	wp, err := p.Weighted(profile.MeasureWall) // generic weighted stacks
//	if err != nil {
//		return err
//	}
//	format.Write(out, wp)
//	profile.BuildReport(p, profile.ReportConfig{Top: 10}).WriteText(os.Stdout)
//
// # Measures
//
// Profile.Weighted gives the profile as a weighted.Profile for each
// measure (wall, cpu, alloc, contention, exceptions; MeasureInfos lists
// them), which every format of package weighted writes. A conversion to
// one measure reads with Config.Measure set, so that the events of the
// other measures cost nothing (the report needs them all).
//
// Read decodes a large trace of short events (past its first 8 MiB, when
// samples and allocation ticks are under a quarter of its events) on every
// core with nettrace.ReadParallel, and feeds the Builder in stream order:
// the profile is the serial read's, byte for byte in every export.
//
// # Samples and time
//
// Microsoft-DotNETCore-SampleProfiler samples every managed thread about
// once per millisecond; each sample says whether the thread was running
// managed code (Managed) or not (External: blocked, waiting, in native
// code, or in a call into the runtime), so the wall measure (every sample)
// is wall-clock thread time and the cpu measure (Managed samples)
// approximates CPU time. .NET Core 3.x suspends the runtime to take each
// sample and labels External a thread caught outside managed code, even in
// a brief call into the runtime: a thread spinning in pure managed code is
// all Managed there, but one whose hot loop calls into the runtime (the Hot
// test target's Stopwatch calls) can be 90% External while it runs. The
// notes (Profile.Notes) say so when it happens, and mark the threads that
// only waited (Thread.Waiting). The period is derived from the trace (the
// median over threads of the mean interval between a thread's samples;
// Windows runtimes often sample every 10-15 ms), and every sample weighs
// one period.
//
// # Symbolisation
//
// EventPipe stacks are lists of return addresses. Method address ranges
// come from MethodLoadVerbose events (methods jitted during the session) and
// from the rundown's MethodDCStart/EndVerbose events (everything already
// loaded, written when the session stops), module names from ModuleLoad and
// ModuleDCEnd. A frame becomes Namespace.Type.Method (the runtime reports
// the declaring type's full name as the method namespace) with its module;
// an address no range covers stays a frame named by its address and is
// counted in SymbolStats, never dropped. Both pointer sizes work.
//
// # Memory and streaming
//
// The rundown arrives after the samples it explains. A Builder therefore
// aggregates samples by unique stack as they stream in and resolves the
// stacks once, in Finish: one pass, so pipes and live sessions work, with
// memory bounded by the number of distinct stacks, methods, threads and
// types, not by the trace's length; Config.MaxStacks and Config.MaxAddresses
// cap those too (DefaultMaxStacks, DefaultMaxAddresses), so that a hostile
// trace of endless new stacks cannot grow them without bound: past a cap, the
// samples of new stacks are counted on one stack named OverCapFrame and
// Profile.Capped and the notes say so. Every step is near-linear in the
// trace: the check of each rundown method against the addresses seen uses a
// log-structured set of sorted runs, not a re-sort per method. Method names are decoded only for
// methods that a stack touches. The optional timeline (Config.Timeline),
// needed for Chromium output and speedscope's time order, grows with the
// number of stack changes and is capped by Config.MaxTimelineRuns.
//
// # Damaged traces
//
// Read returns the profile of everything before damage or truncation along
// with the reader's *nettrace.FormatError. Runtime events whose payload does
// not decode are counted in Profile.DecodeErrors.
//
// # Concurrency
//
// A Builder is used by one goroutine. A finished Profile is not modified by
// the exporters (through Profile.Weighted) or BuildReport, which may run
// concurrently on it. The package has no global state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package profile
