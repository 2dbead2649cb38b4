//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// endlessRuntime is a fake runtime whose sessions never end: valid nettrace
// blocks (or junk, not nettrace at all) as fast as the socket takes them,
// before and after StopTracing, until the client closes the connection.
// stopNever makes it never answer StopTracing.
func endlessRuntime(t *testing.T, junk, stopNever bool) (*ipctest.Server, string) {
	t.Helper()
	cfg := ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		if junk {
			b := bytes.Repeat([]byte("not a trace at all, just bytes "), 1<<15)
			for {
				if _, err := s.Stream.Write(b); err != nil {
					return nil
				}
			}
		}
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return nil
		}
		if err := w.AddMetadata(fakeHelloMeta); err != nil {
			return nil
		}
		for i := 0; ; i += 200 {
			if ctx.Err() != nil {
				return nil
			}
			writeFakeEventsTo(w, i, 200)
			if w.Flush() != nil {
				return nil
			}
		}
	}}
	if stopNever {
		cfg.Fault = func(set, id uint8) ipctest.Fault {
			if set == ipc.SetEventPipe && id == ipc.CmdStopTracing {
				return ipctest.FaultNeverAnswer
			}
			return ipctest.FaultNone
		}
	}
	return fakeRuntime(t, cfg)
}

// writeFakeEventsTo is writeFakeEvents without a test to report to (the
// writer's errors end the endless stream).
func writeFakeEventsTo(w *nettrace.Writer, from, n int) {
	for i := from; i < from+n; i++ {
		p, err := nettrace.AppendPayload(nil, fakeHelloMeta.Fields, nettrace.Object{{Name: "index", Value: int32(i)}, {Name: "message", Value: "hello, endless stream"}})
		if err != nil {
			return
		}
		ev := nettrace.Event{Metadata: fakeHelloMeta, ThreadID: 10, CaptureThreadID: 10, SequenceNumber: uint32(i + 1), Timestamp: int64(1000 + i), Payload: p}
		if w.WriteEvent(&ev) != nil {
			return
		}
	}
}

func stopTracingSent(srv *ipctest.Server) bool {
	for _, r := range srv.Requests() {
		if _, ok := r.Request.(*ipc.StopTracingRequest); ok {
			return true
		}
	}
	return false
}

// smallDisk mounts a 1 MB tmpfs for the test (root only); it returns ""
// when that is not possible here.
func smallDisk(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return ""
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("no tmpfs (%v: %s)", err, out)
		return ""
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// A full disk stops the session on the runtime, says what happened (not
// that the target ended the session), keeps the file valid up to its last
// complete block and exits with exitIO.
func TestFakeCollectDiskFull(t *testing.T) {
	srv, port := endlessRuntime(t, false, false)
	dir := smallDisk(t)
	out := filepath.Join(dir, "x.nettrace")
	if dir == "" {
		if runtime.GOOS != "linux" {
			t.Skip("needs a small tmpfs or /dev/full (Linux)")
		}
		t.Log("writing to /dev/full instead of a full tmpfs: the file's validity is not checked")
		out = "/dev/full"
	}
	begin := time.Now()
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "-o", out)
	if code != 6 {
		t.Fatalf("exit %d, want 6:\n%s", code, errOut)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(errOut, "no space left on device") || strings.Contains(errOut, "target ended the session") {
		t.Errorf("the user is not told what happened:\n%s", errOut)
	}
	if !stopTracingSent(srv) {
		t.Errorf("the session was not stopped on the runtime")
	}
	if dir != "" {
		if n := countHello(t, out); n == 0 {
			t.Errorf("no events kept")
		}
	}
}

// An endless stream that is not nettrace is refused from its first bytes:
// exitDamaged, the session stopped, no file left.
func TestFakeCollectNotNettrace(t *testing.T) {
	srv, port := endlessRuntime(t, true, false)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "1h", "-o", out)
	if code != exitDamaged || !strings.Contains(errOut, "not a nettrace stream") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !stopTracingSent(srv) {
		t.Errorf("the session was not stopped on the runtime")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the junk file is left: %v", err)
	}
}

// --max-size bounds the file; the session is stopped and the file is valid.
func TestFakeCollectMaxSize(t *testing.T) {
	srv, port := endlessRuntime(t, false, false)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, _, errOut := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--max-size", "2MB", "-o", out)
	// 2MB is SI (2,000,000 bytes), and the message says it back the same way.
	if code != 6 || !strings.Contains(errOut, "--max-size (2 MB)") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() > 2_000_000 || st.Size() < 1_000_000 {
		t.Fatalf("file: %v %v", st.Size(), err)
	}
	if n := countHello(t, out); n == 0 {
		t.Errorf("no events kept")
	}
	if !stopTracingSent(srv) {
		t.Errorf("the session was not stopped on the runtime")
	}
}

// A second interrupt while the runtime does not answer StopTracing acts
// at once (the stop timeout is a minute): the file is valid, the rundown
// abandoned, and the exit status 0, the trace being what the user asked
// for.
func TestFakeCollectSecondInterruptWhileStopPending(t *testing.T) {
	port := stopNeverAnsweredServer(t, 7)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	r := startCLI("trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--stop-timeout", "1m", "-o", out)
	r.waitSession(t)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r.waitStderr(t, "Press Ctrl-C again")
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	second := time.Now()
	r.wait(t, 20*time.Second)
	if d := time.Since(second); d > 5*time.Second {
		t.Errorf("the second interrupt took %v to act", d)
	}
	if r.code != 0 || !strings.Contains(r.stderr.String(), "rundown abandoned") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr.String())
	}
	if n := countHello(t, out); n != 7 {
		t.Fatalf("%d events kept, want 7", n)
	}
}
