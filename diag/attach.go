package diag

import (
	"errors"
	"fmt"

	"github.com/clrdiag/clrdiag/ipc"
)

// AttachError is a failed AttachProfiler: what the runtime answered, then
// in words what it means and what to do (Advice, AttachAdvice's or the
// caller's own), on one line. It unwraps to the client's error, so
// errors.Is works with the ipc sentinels (ipc.ErrProfilerAlreadyActive...).
type AttachError struct {
	// Path is the profiler library, Target who it was attached to
	// ("process 42").
	Path, Target string
	Err          error
	Advice       string
}

func (e *AttachError) Error() string {
	var se *ipc.ServerError
	if errors.As(e.Err, &se) {
		name, _, ok := ipc.HRESULTInfo(se.HRESULT)
		if !ok {
			name = "an unknown error"
		}
		return fmt.Sprintf("attach %s to %s failed: the runtime answered %s (HRESULT 0x%08X). %s", e.Path, e.Target, name, se.HRESULT, e.Advice)
	}
	return fmt.Sprintf("attach %s to %s failed: %v. %s", e.Path, e.Target, e.Err, e.Advice)
}

func (e *AttachError) Unwrap() error { return e.Err }

// AttachAdvice says in words what an AttachProfiler failure of the profiler
// at path with class clsid means and what to do about it: the runtime
// passes the profiler's own HRESULTs through, which the generic table of
// ipc.HRESULTInfo cannot tell apart from its own.
func AttachAdvice(err error, path string, clsid ipc.GUID) string {
	var se *ipc.ServerError
	if !errors.As(err, &se) {
		return "The request did not get an answer from the runtime; check that the process is a .NET Core 3.0+ process and that you may open its diagnostic socket."
	}
	switch se.HRESULT {
	case ipc.HRProfilerAlreadyActive, ipc.HRProfilerDetaching:
		return "A profiler is already loaded in this process, or one is still detaching. Only one profiler can be loaded at a time, and an attached profiler stays until it requests detach itself or the process exits. If one is detaching, wait until it has been unloaded (at least 300 ms after it asked, 5 s with the default) and retry."
	case ipc.HRClassNotAvailable:
		return fmt.Sprintf("The library loaded, but its DllGetClassObject does not provide the class %s. Check the CLSID against the profiler's documentation.", clsid)
	case ipc.HRProcNotFound:
		return fmt.Sprintf("The target loaded %s, but it does not export DllGetClassObject, so it is not a CoreCLR profiler (or it was built without exporting that symbol).", path)
	case ipc.HRModNotFound:
		return fmt.Sprintf("The target could not load %s: the file does not exist in the target's file system (a container sees its own), is not a shared library, was built for another OS or architecture, or one of its dependencies is missing (check with ldd).", path)
	case ipc.HRFail:
		return "The profiler refused to attach: its InitializeForAttach returned E_FAIL, or the runtime could not start it. Check the profiler's own log and the client data it expects."
	case ipc.HRNotImpl:
		return "The profiler returned E_NOTIMPL. Check the profiler's own log."
	case ipc.HRProfilerNotAttachable:
		return "The profiler cannot be attached to a running process: it does not implement ICorProfilerCallback3, or its InitializeForAttach returned E_NOTIMPL because it supports only loading at startup (CORECLR_ENABLE_PROFILING=1 with CORECLR_PROFILER and CORECLR_PROFILER_PATH)."
	case ipc.HRTimeoutWaitingForConcurrentGC:
		return "The profiler enabled GC events and a background GC did not finish within AttachProfilerRequest.AttachTimeout. Retry, or give a longer attach timeout."
	case ipc.HRBadEncoding:
		return "The runtime could not parse the request. This is a bug in clrdiag or an unexpected runtime version; please report it."
	case ipc.HRUnknownCommand:
		return "This runtime does not support attaching profilers: it needs .NET Core 3.0 or later (and is not Mono)."
	}
	return "The runtime passes a failing HRESULT from the profiler's InitializeForAttach through unchanged: check the profiler's own documentation and log."
}
