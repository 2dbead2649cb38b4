//go:build unix

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/profilertest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// A runtime that reads the AttachProfiler request and never answers (as
// one whose profiler's InitializeForAttach never returns): attach used to
// wait its fixed 30 s per request whatever the user wanted; --timeout is
// now one deadline for the command, as in the others, and the runtime's own
// attachTimeout (--attach-timeout) fits inside it.
func TestAttachOverallTimeout(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Fault: faultAll(ipctest.FaultNeverAnswer)})
	begin := time.Now()
	code, out, errOut := run(t, "attach", "--diagnostic-port", port, "--profiler", "/opt/prof/libprof.so", "--clsid", profilertest.CLSID, "--timeout", "2s")
	d := time.Since(begin)
	checkClass(t, code, exitRuntime, errOut)
	if strings.Contains(out, "Attached") {
		t.Errorf("stdout claims success: %q", out)
	}
	if d < 2*time.Second || d > 10*time.Second {
		t.Errorf("gave up after %v with --timeout 2s", d)
	}
	for _, want := range []string{"No answer within --timeout 2s", "InitializeForAttach", "Raise --timeout"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q:\n%s", want, errOut)
		}
	}
	// The request was sent once, with the runtime's wait for a background
	// GC at half the deadline (--attach-timeout not given).
	var got []*ipc.AttachProfilerRequest
	for _, r := range srv.Requests() {
		if a, ok := r.Request.(*ipc.AttachProfilerRequest); ok {
			got = append(got, a)
		}
	}
	if len(got) != 1 || got[0].AttachTimeoutMS != 1000 {
		t.Fatalf("AttachProfiler requests %+v; want one with attachTimeout 1000 ms", got)
	}

	// --attach-timeout is sent as given.
	srv, port = fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8})
	code, out, errOut = run(t, "attach", "--diagnostic-port", port, "--profiler", "/opt/prof/libprof.so", "--clsid", profilertest.CLSID, "--attach-timeout", "250ms")
	if code != 0 || !strings.Contains(out, "Attached profiler") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if n := ipctest.CountRequests[*ipc.AttachProfilerRequest](srv); n != 1 {
		t.Fatalf("%d AttachProfiler requests", n)
	}
	for _, r := range srv.Requests() {
		if a, ok := r.Request.(*ipc.AttachProfilerRequest); ok && a.AttachTimeoutMS != 250 {
			t.Errorf("attachTimeout %d ms, want 250", a.AttachTimeoutMS)
		}
	}
}
