// Package profile turns an EventPipe trace into answers: a symbolised
// CPU/thread-time profile from the SampleProfiler's samples, exporters for
// speedscope, Chromium trace-event JSON, pprof and folded stacks, and a
// report of hot methods, threads, garbage collections, exceptions and lock
// contention.
//
//	p, err := profile.Read(f, profile.Config{ManagedOnly: true})
//	if err != nil && p == nil {
//		return err
//	}
//	profile.WritePprof(out, p)
//	profile.BuildReport(p, profile.ReportConfig{Top: 10}).WriteText(os.Stdout)
//
// # Samples and time
//
// Microsoft-DotNETCore-SampleProfiler samples every managed thread about
// once per millisecond; each sample says whether the thread was running
// managed code (Managed) or not (External: blocked, waiting, in native
// code), so the full profile measures wall-clock thread time and the
// ManagedOnly profile approximates CPU time. (Not on .NET Core 3.1: its
// sampler suspends the runtime to take each sample, which labels nearly every
// sample External, even a thread that never leaves managed code; there only
// the full profile, per thread, says where time went.) The period is derived from the
// trace (the median over threads of the mean interval between a thread's
// samples; Windows runtimes often sample every 10-15 ms), and every sample
// weighs one period.
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
// types, not by the trace's length. Method names are decoded only for
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
// the exporters or BuildReport, which may run concurrently on it. The
// package has no global state.
package profile
