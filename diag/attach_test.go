package diag

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
)

// TestAttachAdvice checks the explanation of every HRESULT an attach can
// get, including those the tests cannot provoke on a real runtime, and
// that an AttachError still matches the ipc sentinels.
func TestAttachAdvice(t *testing.T) {
	clsid := ipc.MustParseGUID("2fb05c3a-1410-4825-9389-c5f72ecddf83")
	for _, c := range []struct {
		hr       uint32
		sentinel error
		parts    []string
	}{
		{ipc.HRProfilerAlreadyActive, ipc.ErrProfilerAlreadyActive, []string{"CORPROF_E_PROFILER_ALREADY_ACTIVE", "Only one profiler"}},
		{ipc.HRProfilerDetaching, ipc.ErrProfilerAlreadyActive, []string{"CORPROF_E_PROFILER_DETACHING", "still detaching"}},
		{ipc.HRClassNotAvailable, ipc.ErrClassNotAvailable, []string{"0x80040111", clsid.String(), "Check the CLSID"}},
		{ipc.HRProcNotFound, ipc.ErrEntryPointNotFound, []string{"loaded /p/lib.so", "DllGetClassObject"}},
		{ipc.HRModNotFound, ipc.ErrModuleNotFound, []string{"could not load /p/lib.so", "ldd"}},
		{ipc.HRFail, ipc.ErrFail, []string{"InitializeForAttach returned E_FAIL"}},
		{ipc.HRNotImpl, nil, []string{"returned E_NOTIMPL"}},
		{ipc.HRProfilerNotAttachable, ipc.ErrProfilerNotAttachable, []string{"ICorProfilerCallback3", "startup"}},
		{ipc.HRTimeoutWaitingForConcurrentGC, ipc.ErrTimeout, []string{"CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC", "background GC", "longer attach timeout"}},
		{ipc.HRUnknownCommand, ipc.ErrUnknownCommand, []string{".NET Core 3.0 or later"}},
		{ipc.HRBadEncoding, ipc.ErrBadEncoding, []string{"could not parse the request"}},
		{0x80041234, nil, []string{"an unknown error (HRESULT 0x80041234)", "passes a failing HRESULT from the profiler's InitializeForAttach through unchanged"}},
	} {
		se := &ipc.ServerError{CommandSet: ipc.SetProfiler, CommandID: ipc.CmdAttachProfiler, HRESULT: c.hr}
		err := error(&AttachError{Path: "/p/lib.so", Target: "process 7", Err: fmt.Errorf("wrapped: %w", se), Advice: AttachAdvice(se, "/p/lib.so", clsid)})
		for _, part := range append(c.parts, "attach /p/lib.so to process 7 failed: the runtime answered ") {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("0x%08X: %q lacks %q", c.hr, err, part)
			}
		}
		if c.sentinel != nil && !errors.Is(err, c.sentinel) {
			t.Errorf("0x%08X: errors.Is(err, %v) = false", c.hr, c.sentinel)
		}
		var got *ipc.ServerError
		if !errors.As(err, &got) || got.HRESULT != c.hr {
			t.Errorf("0x%08X: errors.As does not find the *ipc.ServerError", c.hr)
		}
	}
	// An error that is not a runtime answer keeps its own text.
	err := &AttachError{Path: "/p/lib.so", Target: "process 7", Err: errors.New("connection refused"), Advice: AttachAdvice(errors.New("x"), "/p/lib.so", clsid)}
	if want := "attach /p/lib.so to process 7 failed: connection refused. The request did not get an answer from the runtime;"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("transport error: %q, want it to start %q", err, want)
	}
}
