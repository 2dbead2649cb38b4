//go:build linux

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/profilertest"
	"github.com/clrdiag/clrdiag/ipc"
)

// runCLI runs clrdiag with args and stdin and returns the exit status and
// both outputs.
func runCLI(stdin []byte, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, bytes.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func wantOutput(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, got)
		}
	}
}

func TestAttachHelp(t *testing.T) {
	code, out, _ := runCLI(nil, "attach", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantOutput(t, "attach --help", out, "--profiler", "--clsid", "--data-file", "--wait-detach",
		"background GC", "one deadline for the whole request", "--attach-timeout", "absolute path",
		"--timeout duration", "(default 1m0s)")
}

// TestAttachArgumentErrors checks the errors clrdiag gives before it sends
// anything (no process is contacted: pid 1 is never a .NET process here, and
// these checks come first).
func TestAttachArgumentErrors(t *testing.T) {
	lib := "/opt/prof/libprof.so"
	clsid := profilertest.CLSID
	dataFile := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(dataFile, make([]byte, 70000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		parts []string
	}{
		{"no profiler", []string{"-p", "1", "--clsid", clsid}, []string{"--profiler PATH is required"}},
		{"relative path", []string{"-p", "1", "--profiler", "libprof.so", "--clsid", clsid},
			[]string{`"libprof.so" is a relative path`, "resolves nothing", "pass an absolute path"}},
		{"no clsid", []string{"-p", "1", "--profiler", lib}, []string{"--clsid GUID is required"}},
		{"bad clsid", []string{"-p", "1", "--profiler", lib, "--clsid", "2fb05c3a-1410-4825-9389"}, []string{"--clsid", "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"}},
		{"both data flags", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--data", "x", "--data-file", dataFile},
			[]string{"only one of --data and --data-file"}},
		{"missing data file", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--data-file", dataFile + ".none"},
			[]string{"--data-file", "no such file"}},
		{"data too large", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--data-file", dataFile},
			[]string{"more than 65515 bytes is too large", "at most"}},
		{"negative timeout", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--timeout", "-1s"}, []string{"--timeout -1s"}},
		{"negative attach timeout", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--attach-timeout", "-1s"}, []string{"--attach-timeout -1s"}},
		{"attach timeout beyond the deadline", []string{"-p", "1", "--profiler", lib, "--clsid", clsid, "--timeout", "5s", "--attach-timeout", "5s"},
			[]string{"--attach-timeout 5s is not shorter than --timeout 5s", "raise --timeout"}},
		{"wait-detach with a port", []string{"--diagnostic-port", "/tmp/x", "--profiler", lib, "--clsid", clsid, "--wait-detach"},
			[]string{"--wait-detach needs the process id"}},
		{"no target", []string{"--profiler", lib, "--clsid", clsid}, []string{"no target process"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(nil, append([]string{"attach"}, c.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want exitUsage; stdout %q stderr %q", code, out, errs)
			}
			wantOutput(t, "stderr", errs, c.parts...)
		})
	}
}

// attachTarget is a real .NET process that never loaded a profiler at
// startup, with the profiler's log wired up.
type attachTarget struct {
	tg  *dotnettest.Target
	log string
	pid string
}

func startAttachTarget(t *testing.T, rt *dotnettest.Runtime) *attachTarget {
	t.Helper()
	dll := rt.Build(t, "Basic")
	logPath := filepath.Join(t.TempDir(), "profiler.log")
	tg := rt.Start(t, dll, nil, &dotnettest.Options{Env: []string{
		profilertest.LogEnv + "=" + logPath, "CORECLR_ENABLE_PROFILING=0",
	}})
	return &attachTarget{tg: tg, log: logPath, pid: fmt.Sprint(tg.PID)}
}

func (a *attachTarget) events(t *testing.T) []profilertest.Event {
	t.Helper()
	evs, err := profilertest.ReadLog(a.log)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func (a *attachTarget) ping(t *testing.T) {
	t.Helper()
	a.tg.Send(t, "ping")
	a.tg.Expect(t, "PONG", 10*time.Second)
}

// TestAttachCommand drives 'clrdiag attach' against every runtime: every
// refusal gets its own explanation and exit status 1, the client data arrives
// byte for byte, --wait-detach sees the library leave, and a second profiler
// is refused while one is attached.
func TestAttachCommand(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testAttachCommand)
}

func testAttachCommand(t *testing.T, rt *dotnettest.Runtime) {
	lib := profilertest.Build(t, profilertest.Standard)
	noEntry := profilertest.Build(t, profilertest.NoEntry)
	a := startAttachTarget(t, rt)
	base := func(path string, extra ...string) []string {
		return append([]string{"attach", "-p", a.pid, "--profiler", path, "--clsid", profilertest.CLSID}, extra...)
	}

	for _, c := range []struct {
		name  string
		args  []string
		parts []string
	}{
		{"wrong CLSID", []string{"attach", "-p", a.pid, "--profiler", lib, "--clsid", "{0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0}"},
			[]string{"CLASS_E_CLASSNOTAVAILABLE", "0x80040111", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "Check --clsid"}},
		{"no DllGetClassObject", base(noEntry), []string{"ERROR_PROC_NOT_FOUND", "0x8007007F", "does not export DllGetClassObject"}},
		{"missing file", base("/nonexistent/libprof.so"), []string{"warning: /nonexistent/libprof.so does not exist in the file system of process", "ERROR_MOD_NOT_FOUND", "0x8007007E", "could not load /nonexistent/libprof.so"}},
		{"profiler fails", base(lib, "--data", "fail"), []string{"E_FAIL", "0x80004005", "InitializeForAttach returned E_FAIL"}},
		{"profiler not implemented", base(lib, "--data", "notimpl"), []string{"CORPROF_E_PROFILER_NOT_ATTACHABLE", "0x80131368", "ICorProfilerCallback3", "E_NOTIMPL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(nil, c.args...)
			t.Logf("stderr:\n%s", errs)
			if code != exitRuntime {
				t.Fatalf("exit %d, want exitRuntime; stdout %q stderr %q", code, out, errs)
			}
			wantOutput(t, "stderr", errs, c.parts...)
			if strings.Contains(out, "Attached") {
				t.Errorf("stdout claims success: %q", out)
			}
			a.ping(t)
		})
	}
	if m, err := profilertest.Mapped(a.tg.PID, lib); err != nil || m {
		t.Fatalf("after the refusals the profiler is mapped=%v (%v)", m, err)
	}

	t.Run("relative path is refused before sending", func(t *testing.T) {
		before := len(a.events(t))
		code, _, errs := runCLI(nil, base("libclrdiagprof.so")...)
		if code != exitUsage {
			t.Fatalf("exit %d, want exitUsage: %s", code, errs)
		}
		wantOutput(t, "stderr", errs, "relative path", "absolute")
		if n := len(a.events(t)); n != before {
			t.Fatalf("the profiler logged %d events although nothing should have been sent", n-before)
		}
	})

	t.Run("attach, detach, wait-detach", func(t *testing.T) {
		data := append([]byte("detach\n"), 0, 1, 2, 0xfe, 0xff, '\n', 0)
		file := filepath.Join(t.TempDir(), "data.bin")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		before := len(a.events(t))
		code, out, errs := runCLI(nil, base(lib, "--data-file", file, "--wait-detach", "--wait-timeout", "20s")...)
		if code != 0 {
			t.Fatalf("exit %d: stdout %q stderr %q", code, out, errs)
		}
		wantOutput(t, "stdout", out, "Attached profiler "+lib, fmt.Sprintf("%d bytes of client data", len(data)), "The profiler detached", "left process "+a.pid)
		evs := a.events(t)[before:]
		ev, ok := profilertest.Last(evs, "initialize-for-attach")
		if !ok {
			t.Fatalf("no initialize-for-attach in %v", profilertest.Names(evs))
		}
		if got, err := ev.ClientData(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("profiler got % x (%v), want % x", got, err, data)
		}
		if profilertest.Count(evs, "detach-succeeded") != 1 {
			t.Fatalf("events %v lack detach-succeeded", profilertest.Names(evs))
		}
		if m, err := profilertest.Mapped(a.tg.PID, lib); err != nil || m {
			t.Fatalf("after --wait-detach the profiler is mapped=%v (%v)", m, err)
		}
		a.ping(t)
	})

	t.Run("largest client data one message carries", func(t *testing.T) {
		// 65535-byte message: 20 header, u32 timeout, 16 CLSID, u32 + UTF-16
		// path with its NUL, u32 data length, then the data.
		room := 65535 - 20 - 4 - 16 - 4 - 2*(len(lib)+1) - 4
		data := append([]byte("detach\n"), bytes.Repeat([]byte{0xA5, 0x00, '\n'}, room)...)[:room]
		file := filepath.Join(t.TempDir(), "big.bin")
		if err := os.WriteFile(file, append(data, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI(nil, base(lib, "--data-file", file)...)
		if code != exitUsage {
			t.Fatalf("%d bytes: exit %d, want exitUsage: %s", room+1, code, errs)
		}
		wantOutput(t, "stderr", errs, fmt.Sprintf("%d bytes is too large", room+1), fmt.Sprintf("at most %d bytes", room))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		before := len(a.events(t))
		code, out, errs := runCLI(nil, base(lib, "--data-file", file, "--wait-detach")...)
		if code != 0 {
			t.Fatalf("%d bytes: exit %d: stdout %q stderr %q", room, code, out, errs)
		}
		ev, _ := profilertest.Last(a.events(t)[before:], "initialize-for-attach")
		if got, err := ev.ClientData(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("profiler got %d bytes (%v), want the %d sent", len(got), err, len(data))
		}
	})

	t.Run("stdin data, profiler stays, wait-detach times out", func(t *testing.T) {
		data := []byte("stay\nsettings=\x00\x01\xff")
		before := len(a.events(t))
		start := time.Now()
		code, out, errs := runCLI(data, base(lib, "--data-file", "-", "--wait-detach", "--wait-timeout", "800ms")...)
		if code != exitFailure {
			t.Fatalf("exit %d, want 1: stdout %q stderr %q", code, out, errs)
		}
		if time.Since(start) < 800*time.Millisecond {
			t.Fatalf("gave up after %v, before --wait-timeout", time.Since(start))
		}
		wantOutput(t, "stdout", out, "Attached profiler", fmt.Sprintf("%d bytes of client data", len(data)))
		wantOutput(t, "stderr", errs, "still loaded in process "+a.pid, "RequestProfilerDetach")
		ev, _ := profilertest.Last(a.events(t)[before:], "initialize-for-attach")
		if got, err := ev.ClientData(); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("profiler got % x (%v), want % x", got, err, data)
		}
		a.ping(t)
	})

	t.Run("second profiler is refused", func(t *testing.T) {
		code, out, errs := runCLI(nil, base(lib, "--data", "detach")...)
		if code != exitRuntime {
			t.Fatalf("exit %d, want exitRuntime: stdout %q stderr %q", code, out, errs)
		}
		wantOutput(t, "stderr", errs, "CORPROF_E_PROFILER_ALREADY_ACTIVE", "0x8013136A", "Only one profiler")
		if m, err := profilertest.Mapped(a.tg.PID, lib); err != nil || !m {
			t.Fatalf("the attached profiler is gone after the refused second attach: mapped=%v (%v)", m, err)
		}
		a.ping(t)
	})
}

// TestAttachErrorText: the answers whose fix is a flag name it
// (--clsid, --attach-timeout); every other one is diag.AttachAdvice's
// (diag's TestAttachAdvice checks each HRESULT).
func TestAttachErrorText(t *testing.T) {
	clsid := ipc.MustParseGUID(profilertest.CLSID)
	answer := func(hr uint32) error {
		return fmt.Errorf("wrapped: %w", &ipc.ServerError{CommandSet: ipc.SetProfiler, CommandID: ipc.CmdAttachProfiler, HRESULT: hr})
	}
	wantOutput(t, "class not available", explainAttach(answer(ipc.HRClassNotAvailable), "/p/lib.so", clsid),
		"does not provide the class "+profilertest.CLSID+". Check --clsid against the profiler's documentation.")
	wantOutput(t, "GC timeout", explainAttach(answer(ipc.HRTimeoutWaitingForConcurrentGC), "/p/lib.so", clsid),
		"background GC did not finish within --attach-timeout. Retry, or give a longer --attach-timeout (and --timeout).")
	for _, err := range []error{answer(ipc.HRModNotFound), answer(ipc.HRProfilerAlreadyActive), answer(0x80041234), errors.New("connection refused")} {
		if got, want := explainAttach(err, "/p/lib.so", clsid), diag.AttachAdvice(err, "/p/lib.so", clsid); got != want {
			t.Errorf("%v: %q, want diag.AttachAdvice's %q", err, got, want)
		}
	}
}
