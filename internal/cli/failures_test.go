//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// The failure classes of the exit-code table, tried on every command that
// talks to a target with the same fakes: each class gives one exit status
// and starts its message with one sentence, whatever the command.

// failCmd is a command of the matrix: its arguments for a target (port)
// and an output path, and what it does.
type failCmd struct {
	name    string
	args    func(port, out string) []string
	session bool // opens an EventPipe session
	writes  bool // writes the output file out
	prints  bool // its result goes to stdout
}

var failCmds = []failCmd{
	{name: "info", prints: true, args: func(p, _ string) []string { return []string{"info", "--diagnostic-port", p} }},
	{name: "env", prints: true, args: func(p, _ string) []string { return []string{"env", "--diagnostic-port", p} }},
	{name: "dump", writes: true, args: func(p, o string) []string { return []string{"dump", "--diagnostic-port", p, "-o", o} }},
	{name: "stack", session: true, prints: true, args: func(p, _ string) []string { return []string{"stack", "--diagnostic-port", p} }},
	{name: "trace collect", session: true, writes: true, args: func(p, o string) []string {
		return []string{"trace", "collect", "--diagnostic-port", p, "--providers", "Fake-Source", "--duration", "30s", "-o", o}
	}},
	{name: "trace stream", session: true, prints: true, args: func(p, _ string) []string {
		return []string{"trace", "stream", "--diagnostic-port", p, "--providers", "Fake-Source", "--duration", "30s"}
	}},
	{name: "counters collect", session: true, writes: true, args: func(p, o string) []string {
		return []string{"counters", "collect", "--diagnostic-port", p, "--duration", "30s", "-o", o}
	}},
	{name: "counters monitor", session: true, prints: true, args: func(p, _ string) []string {
		return []string{"counters", "monitor", "--diagnostic-port", p, "--duration", "30s"}
	}},
	{name: "gcdump collect", session: true, writes: true, args: func(p, o string) []string {
		return []string{"gcdump", "collect", "--diagnostic-port", p, "-o", o}
	}},
	{name: "logs", session: true, prints: true, args: func(p, _ string) []string {
		return []string{"logs", "--diagnostic-port", p, "--duration", "30s"}
	}},
}

// failRuntime is the runtime the fakes of the matrix play: the newest one
// ipctest knows, so that a command added for the newest runtime meets the
// same classes as every other.
var failRuntime = ipctest.Runtimes()[len(ipctest.Runtimes())-1]

// staleSocket leaves a socket file nobody listens on.
func staleSocket(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	return p
}

// hostileRuntime answers every command with reply (header and payload
// built by the caller), on a socket of its own.
func hostileRuntime(t *testing.T, reply func(h ipc.Header) []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hostile.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				m, err := ipc.ReadMessage(c)
				if err != nil {
					return
				}
				_, _ = c.Write(reply(m.Header))
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return p + ",connect"
}

// zeroProcessInfo is a 65,515-byte all-zero OK reply: as ProcessInfo3 it
// decodes to pid 0 and empty strings, with bytes left over.
func zeroProcessInfo(ipc.Header) []byte {
	m, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdOK, make([]byte, ipc.MaxPayloadSize))
	return m
}

func TestFailureClasses(t *testing.T) {
	type class struct {
		name string
		// applies reports whether the class applies to a command (nil:
		// to every command).
		applies func(c failCmd) bool
		// setup returns the port to give.
		setup func(t *testing.T, c failCmd) string
		extra []string // added to the command line
		out   func(t *testing.T) string
		want  func(c failCmd) int
	}
	okOut := func(t *testing.T) string { return filepath.Join(t.TempDir(), "out") }
	classes := []class{
		{name: "usage", extra: []string{"--no-such-flag"},
			setup: func(t *testing.T, c failCmd) string { return "/nonexistent.sock,connect" },
			want:  func(failCmd) int { return exitUsage }},
		{name: "no such endpoint",
			setup: func(t *testing.T, c failCmd) string {
				return filepath.Join(t.TempDir(), "none.sock") + ",connect"
			},
			want: func(failCmd) int { return exitNotFound }},
		{name: "stale socket",
			setup: func(t *testing.T, c failCmd) string { return staleSocket(t) + ",connect" },
			want:  func(failCmd) int { return exitNotFound }},
		{name: "runtime refuses",
			setup: func(t *testing.T, c failCmd) string {
				_, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Fault: faultAll(ipctest.FaultError)})
				return port
			},
			want: func(failCmd) int { return exitRuntime }},
		{name: "runtime never answers",
			setup: func(t *testing.T, c failCmd) string {
				_, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Fault: faultAll(ipctest.FaultNeverAnswer)})
				return port
			},
			extra: nil, // the timeout flag, added below
			want:  func(failCmd) int { return exitRuntime }},
		{name: "impossible reply",
			applies: func(c failCmd) bool { return c.name == "info" },
			setup:   func(t *testing.T, c failCmd) string { return hostileRuntime(t, zeroProcessInfo) },
			want:    func(failCmd) int { return exitRuntime }},
		{name: "damaged stream",
			applies: func(c failCmd) bool { return c.session },
			setup: func(t *testing.T, c failCmd) string {
				_, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Tracing: garbageSession})
				return port
			},
			want: func(failCmd) int { return exitDamaged }},
		{name: "target gone",
			setup: func(t *testing.T, c failCmd) string {
				cfg := ipctest.Config{Runtime: failRuntime, Tracing: exitingSession}
				if !c.session {
					cfg.Fault = faultAll(ipctest.FaultCloseEarly)
				}
				_, port := fakeRuntime(t, cfg)
				return port
			},
			want: func(failCmd) int { return exitTargetGone }},
		{name: "output directory missing",
			applies: func(c failCmd) bool { return c.writes },
			setup: func(t *testing.T, c failCmd) string {
				srv, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Fault: faultAll(ipctest.FaultNeverAnswer)})
				t.Cleanup(func() {
					if n := len(srv.Requests()); n != 0 {
						t.Errorf("the target was sent %d requests before the output path was checked", n)
					}
				})
				return port
			},
			out:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "no", "such", "dir", "out") },
			want: func(failCmd) int { return exitIO }},
	}
	// Full mode tries every class on every command, with the waits of a
	// real run: the transport's second of retries for a missing socket and
	// --timeout 2s for a runtime that never answers. -short, the quick
	// loop, shortens both and tries each class on a third of the commands
	// it applies to (every command still meets a third of the classes).
	cfg, never := mainConfig{}, "2s"
	if testing.Short() {
		cfg, never = mainConfig{dialRetryFor: 50 * time.Millisecond}, "500ms"
	}
	for i, cl := range classes {
		t.Run(cl.name, func(t *testing.T) {
			var cmds []failCmd
			for _, c := range failCmds {
				if cl.applies == nil || cl.applies(c) {
					cmds = append(cmds, c)
				}
			}
			for k, c := range cmds {
				t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
					if testing.Short() && len(cmds) > 2 && (k+i)%3 != 0 {
						t.Skip("-short tries a third of the commands (full mode: all)")
					}
					port := cl.setup(t, c)
					out := okOut(t)
					if cl.out != nil {
						out = cl.out(t)
					}
					args := append(c.args(port, out), cl.extra...)
					if cl.name == "runtime never answers" {
						args = append(args, timeoutFlag(c, never)...)
					}
					begin := time.Now()
					var stdout, stderr bytes.Buffer
					code := mainWith(cfg, args, strings.NewReader(""), &stdout, &stderr)
					checkClass(t, code, cl.want(c), stderr.String())
					if d := time.Since(begin); d > 20*time.Second {
						t.Errorf("took %v", d)
					}
				})
			}
		})
	}
}

// timeoutFlag is the flag that bounds how long c waits for an answer.
func timeoutFlag(c failCmd, d string) []string {
	switch c.name {
	case "gcdump collect":
		return []string{"-t", d}
	}
	return []string{"--timeout", d}
}

// A signal before the work is done exits 130 with its sentence, in every
// command, also while the runtime has not answered.
func TestFailureClassInterrupted(t *testing.T) {
	for _, c := range failCmds {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			srv, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Fault: faultAll(ipctest.FaultNeverAnswer)})
			r := startCLI(c.args(port, filepath.Join(t.TempDir(), "out"))...)
			deadline := time.Now().Add(20 * time.Second)
			for len(srv.Requests()) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no request arrived")
				}
				select {
				case <-r.done:
					t.Fatalf("ended before its request (exit %d):\n%s", r.code, r.stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r.wait(t, 20*time.Second)
			checkClass(t, r.code, exitInterrupted, r.stderr.String())
		})
	}
}

// failingWriter fails every write as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A standard output that cannot be written is a local I/O failure.
func TestFailureClassStdoutFull(t *testing.T) {
	for _, c := range failCmds {
		if !c.prints || c.name == "counters monitor" || c.name == "trace stream" {
			continue // those two print as events arrive: their own tests
		}
		t.Run(c.name, func(t *testing.T) {
			_, port := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, Environment: []string{"A=1"}})
			if c.session {
				t.Skip("needs a session the fake plays: see TestFakeStack")
			}
			var errb bytes.Buffer
			code := Main(c.args(port, ""), strings.NewReader(""), failingWriter{}, &errb)
			checkClass(t, code, exitIO, errb.String())
		})
	}
}

// A stopped target (SIGSTOP) is refused before a session is opened, unless
// --force; no request reaches it.
func TestFailureClassStoppedTarget(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command("sleep", "600")
	child.Env = append(os.Environ(), "TMPDIR="+dir)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := child.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for hostProc.state(pid) != 'T' {
		time.Sleep(5 * time.Millisecond)
	}
	srv, _ := fakeRuntime(t, ipctest.Config{Runtime: failRuntime, PID: pid, Dir: dir})
	for _, c := range failCmds {
		if !c.session {
			continue
		}
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			args := c.args("", filepath.Join(t.TempDir(), "out"))
			for i, a := range args {
				if a == "--diagnostic-port" {
					args[i], args[i+1] = "-p", fmt.Sprint(pid)
				}
			}
			n := len(srv.Requests())
			code, _, stderr := run(t, append([]string{"--trust-socket"}, args...)...)
			checkClass(t, code, exitRuntime, stderr)
			if !strings.Contains(stderr, fmt.Sprintf("process %d is stopped", pid)) || !strings.Contains(stderr, "--force") {
				t.Errorf("the message does not say the process is stopped and what to do:\n%s", stderr)
			}
			if len(srv.Requests()) != n {
				t.Errorf("a request reached the stopped target")
			}
		})
	}
}
