//go:build linux

package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// A collection the target ends (it exits mid-collection) keeps what
// arrived and exits 0 with a note, the same in every collecting command:
// trace exited 0 and counters 4 before.
func TestCollectionsEndedByTheTarget(t *testing.T) {
	// A trace session that sends 5 events and ends (the process exits).
	traceEnds := func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return err
		}
		if err := w.AddMetadata(fakeHelloMeta); err != nil {
			return err
		}
		writeFakeEventsTo(w, 0, 5)
		return w.Flush()
	}
	// A counters session that publishes its values and ends.
	countersEnd := func(ctx context.Context, s *ipctest.TracingSession) error {
		sid := ""
		for _, p := range s.Request.Providers {
			for _, kv := range strings.Split(p.Args, ";") {
				if v, ok := strings.CutPrefix(kv, "SessionId="); ok {
					sid = v
				}
			}
		}
		_, err := s.Stream.Write(metricsStream(t, sid))
		return err
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		tracing func(context.Context, *ipctest.TracingSession) error
		args    []string
		say     string
	}{
		{"trace collect", traceEnds, []string{"trace", "collect", "--providers", "Fake-Source", "--duration", "1m", "-o", filepath.Join(dir, "t.nettrace")}, "the target ended the session"},
		{"trace stream", traceEnds, []string{"trace", "stream", "--providers", "Fake-Source", "--duration", "1m"}, "The target ended the session"},
		{"counters collect", countersEnd, []string{"counters", "collect", "--counters", "Shop", "--duration", "1m", "-o", filepath.Join(dir, "c.csv")}, "The target process exited or closed the connection"},
		{"counters monitor", countersEnd, []string{"counters", "monitor", "--counters", "Shop", "--duration", "1m"}, "The target process exited or closed the connection"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: tc.tracing})
			begin := time.Now()
			code, _, errOut := run(t, append(tc.args, "--diagnostic-port", port)...)
			if code != 0 || !strings.Contains(errOut, tc.say) {
				t.Errorf("exit %d, want 0 and %q:\n%s", code, tc.say, errOut)
			}
			if d := time.Since(begin); d > 30*time.Second {
				t.Errorf("took %v: the end of the session was not noticed", d)
			}
		})
	}
	if n := countHello(t, filepath.Join(dir, "t.nettrace")); n != 5 {
		t.Errorf("trace: %d events kept, want 5", n)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c.csv")); !strings.Contains(string(b), "Shop") {
		t.Errorf("counters: the values are not kept:\n%s", b)
	}
	// A heap snapshot cut short is no snapshot: the target went away.
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(gcdumptest.Leaky(20), gcdumptest.Options{Exit: true, NoGCEnd: true})})
	code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", port, "-o", filepath.Join(dir, "h.gcdump"))
	checkClass(t, code, exitTargetGone, errOut)
	if _, err := os.Stat(filepath.Join(dir, "h.gcdump")); err == nil {
		t.Error("a snapshot file was left")
	}
}

// A stale socket (nobody listens) named after a live process: exit 3, as
// any missing endpoint (it was 1 when the socket was accepted), and the
// refusal names the flag, not the library's option.
func TestStaleSocketOfALiveProcess(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command("sleep", "600")
	child.Env = append(os.Environ(), "TMPDIR="+dir)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := child.Process.Pid
	p := filepath.Join(dir, fmt.Sprintf("dotnet-diagnostic-%d-%d-socket", pid, time.Now().UnixMilli()))
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	code, _, errOut := run(t, "info", "-p", fmt.Sprint(pid))
	checkClass(t, code, exitNotFound, errOut)
	if strings.Contains(errOut, "TrustAnySocket") || !strings.Contains(errOut, "--trust-socket") {
		t.Errorf("the refusal names the library's option, or not the flag:\n%s", errOut)
	}
	code, _, errOut = run(t, "--trust-socket", "info", "-p", fmt.Sprint(pid))
	checkClass(t, code, exitNotFound, errOut)
	if !strings.Contains(errOut, "connection refused") {
		t.Errorf("the cause is not named:\n%s", errOut)
	}
}
