//go:build linux

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopTarget sends SIGSTOP to pid and waits until /proc says it stopped.
func stopTarget(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); hostProc.state(pid) != 'T'; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop (state %c)", pid, hostProc.state(pid))
		}
	}
}

// A real .NET Core 3.1 target stopped with SIGSTOP. Starting an EventPipe
// session in it and giving up crashed its runtime (SIGSEGV) when it was
// continued, 4 times in 5; counters exited 0 with nothing. Every command
// that opens a session now refuses at once (exit 4) and sends nothing, so
// the process continues unharmed; with --force the session waits for the
// process to continue and is then opened and closed properly.
func TestRealStoppedTarget(t *testing.T) {
	tg := startBasic(t)
	pid := fmt.Sprint(tg.PID)
	stopTarget(t, tg.PID)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"trace", "collect", "-p", pid, "--duration", "2s", "-o", filepath.Join(dir, "t.nettrace")},
		{"stack", "-p", pid},
		{"counters", "collect", "-p", pid, "--duration", "3s", "-o", filepath.Join(dir, "c.csv")},
		{"counters", "monitor", "-p", pid, "--duration", "3s"},
		{"gcdump", "collect", "-p", pid, "-o", filepath.Join(dir, "h.gcdump")},
	} {
		begin := time.Now()
		code, _, errOut := run(t, args...)
		checkClass(t, code, exitRuntime, errOut)
		if !strings.Contains(errOut, "process "+pid+" is stopped") || !strings.Contains(errOut, "kill -CONT "+pid) {
			t.Errorf("%v: the message does not say the process is stopped and what to do:\n%s", args[:2], errOut)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("%v: took %v to refuse", args[:2], d)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}

	// --force: the session starts once the process continues.
	out := filepath.Join(dir, "forced.nettrace")
	r := startCLI("trace", "collect", "-p", pid, "--force", "--duration", "2s", "-o", out)
	r.waitStderr(t, "the session starts once it continues")
	time.Sleep(time.Second) // the request is pending in the stopped runtime
	if err := syscall.Kill(tg.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 90*time.Second)
	if r.code != 0 {
		t.Fatalf("trace collect --force: exit %d\n%s", r.code, r.stderr.String())
	}
	if evs, _ := readTrace(t, out); len(evs) == 0 {
		t.Error("the forced trace holds no events")
	}

	// The runtime survived: it answers a new session and its own input.
	time.Sleep(500 * time.Millisecond)
	select {
	case <-tg.Done():
		t.Fatalf("the target died after SIGCONT:\n%s", tg.Stderr())
	default:
	}
	if code, out, errOut := run(t, "stack", "-p", pid); code != 0 || !strings.Contains(out, "Basic") {
		t.Errorf("stack after SIGCONT: exit %d\n%s%s", code, out, errOut)
	}
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)
}
