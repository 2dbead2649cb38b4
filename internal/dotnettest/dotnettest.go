//go:build unix

package dotnettest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options adjust how a target is started.
type Options struct {
	Env    []string // extra KEY=VALUE pairs
	TmpDir string   // the target's TMPDIR (default: inherited)
	// Ready is the stdout line prefix that tells the target is up
	// (default "READY").
	Ready string
	// NoWaitSocket skips waiting for the diagnostic socket to appear.
	NoWaitSocket bool
	// NoWaitReady makes Start return as soon as the process runs, without
	// waiting for its ready line or its socket: a runtime paused at a
	// suspending diagnostic port (DOTNET_DiagnosticPorts=...,suspend)
	// prints nothing until it is resumed. Then WaitReady and WaitSocket
	// wait for them.
	NoWaitReady bool
	// Wrapper, when set, is a command line that runs the runtime, such as
	// {"unshare", "--pid", "--fork", "--mount-proc"}: the target's PID is
	// then the wrapper's, and the socket is not waited for.
	Wrapper []string
	// Credential, when set, runs the target as another user (the test
	// must run as root, and the dll and TmpDir be accessible to that user).
	Credential *syscall.Credential
}

// Target is a running .NET process started by a test.
type Target struct {
	PID    int
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Lines  chan string // stdout lines after the ready line
	Socket string      // the diagnostic socket path
	// ReadyLine is the line that told the target was up ("READY <pid> ...").
	ReadyLine string

	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}

	ready    chan struct{} // closed when the ready line came or cannot come
	readyErr error         // why it cannot come, set before ready is closed
	tmpDir   string        // where the runtime makes its socket
}

// Start runs dll on the runtime, waits for its ready line on stdout and for
// its diagnostic socket, and kills it when the test ends.
func (r *Runtime) Start(t testing.TB, dll string, args []string, opts *Options) *Target {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	ready := opts.Ready
	if ready == "" {
		ready = "READY"
	}
	argv := append([]string{r.Host, dll}, args...)
	if len(opts.Wrapper) > 0 {
		argv = append(append([]string(nil), opts.Wrapper...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(cleanEnv(os.Environ()), "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1", "DOTNET_CLI_TELEMETRY_OPTOUT=1",
		"DOTNET_ROOT="+r.DotnetRoot)
	if opts.TmpDir != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+opts.TmpDir)
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: opts.Credential}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tg := &Target{Cmd: cmd, Stdin: stdin, Lines: make(chan string, 1024), done: make(chan struct{}),
		ready: make(chan struct{}), tmpDir: opts.TmpDir}
	if tg.tmpDir == "" {
		tg.tmpDir = os.TempDir()
	}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		if tg.stderr.Len() < 64<<10 {
			tg.stderr.Write(p)
		}
		return len(p), nil
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("start target: %v", err)
	}
	tg.PID = cmd.Process.Pid
	t.Cleanup(func() { tg.Kill() })
	go func() {
		_ = cmd.Wait()
		close(tg.done)
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		sawReady := false
		for sc.Scan() {
			line := sc.Text()
			if !sawReady {
				if strings.HasPrefix(line, ready) {
					sawReady = true
					tg.ReadyLine = line
					close(tg.ready)
				}
				continue
			}
			select {
			case tg.Lines <- line:
			default: // a test that does not read lines must not block the target
			}
		}
		if !sawReady {
			tg.readyErr = errors.New("target exited before printing its ready line")
			close(tg.ready)
		}
		close(tg.Lines)
	}()
	if opts.NoWaitReady {
		return tg
	}
	tg.WaitReady(t, 60*time.Second)
	if !opts.NoWaitSocket && len(opts.Wrapper) == 0 {
		tg.WaitSocket(t)
	}
	return tg
}

// WaitReady waits for the target's ready line (Start does, unless
// Options.NoWaitReady), for at most timeout.
func (tg *Target) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-tg.ready:
		if tg.readyErr != nil {
			t.Fatalf("%v; stderr:\n%s", tg.readyErr, tg.Stderr())
		}
	case <-time.After(timeout):
		t.Fatalf("target not ready after %v; stderr:\n%s", timeout, tg.Stderr())
	}
}

// WaitSocket waits for the diagnostic socket the target's runtime makes in
// its TMPDIR and sets tg.Socket (Start does, unless Options.NoWaitSocket or
// NoWaitReady). A runtime paused at a suspending port has made it already.
func (tg *Target) WaitSocket(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if tg.Socket = ownSocket(tg.tmpDir, tg.PID); tg.Socket != "" {
			return
		}
		select {
		case <-tg.done:
			t.Fatalf("target exited before its diagnostic socket appeared; stderr:\n%s", tg.Stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("diagnostic socket of pid %d did not appear in %s", tg.PID, tg.tmpDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Send writes a command line to the target's standard input.
func (tg *Target) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(tg.Stdin, line+"\n"); err != nil {
		t.Fatalf("send %q to target: %v", line, err)
	}
}

// Expect waits for a stdout line with the given prefix and returns it.
func (tg *Target) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-tg.Lines:
			if !ok {
				t.Fatalf("target exited while waiting for %q; stderr:\n%s", prefix, tg.Stderr())
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-deadline:
			t.Fatalf("no line %q from target within %v; stderr:\n%s", prefix, timeout, tg.Stderr())
		}
	}
}

// Stderr returns what the target wrote to standard error so far.
func (tg *Target) Stderr() string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.stderr.String()
}

// Done is closed when the target has exited.
func (tg *Target) Done() <-chan struct{} { return tg.done }

// Kill ends the target with SIGKILL, waits for it and removes the socket
// file a killed runtime leaves behind, so test runs do not litter TMPDIR.
func (tg *Target) Kill() {
	if tg.Cmd.Process != nil {
		_ = syscall.Kill(-tg.PID, syscall.SIGKILL)
		_ = tg.Cmd.Process.Kill()
	}
	select {
	case <-tg.done:
		if tg.Socket != "" {
			_ = os.Remove(tg.Socket)
		}
	case <-time.After(10 * time.Second):
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// WaitReading waits until the target's main thread is blocked reading its
// standard input (the targets' command loop, in Console.ReadLine), for at
// most timeout. A test that inspects the process's state (stacks, heap
// roots) right after a command's answer line would otherwise catch the
// main thread still on its way back to the loop, with that command's
// temporaries live, which on a loaded machine is likely. It reads
// /proc/PID/task/PID/{syscall,wchan}, so it needs Linux.
func (tg *Target) WaitReading(t testing.TB, timeout time.Duration) {
	t.Helper()
	base := fmt.Sprintf("/proc/%d/task/%d/", tg.PID, tg.PID)
	deadline := time.Now().Add(timeout)
	for {
		if blockedReadingStdin(base) {
			return
		}
		select {
		case <-tg.done:
			t.Fatalf("target exited while waiting for it to read its input; stderr:\n%s", tg.Stderr())
		default:
		}
		if time.Now().After(deadline) {
			wchan, _ := os.ReadFile(base + "wchan")
			sc, _ := os.ReadFile(base + "syscall")
			t.Fatalf("the target's main thread is not blocked reading its input after %v (wchan %q, syscall %q)", timeout, wchan, sc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readSyscall is the number of read(2) on this architecture, for
// /proc/PID/syscall.
var readSyscall = map[string]string{"amd64": "0", "arm64": "63", "386": "3", "arm": "3"}[runtime.GOARCH]

// blockedReadingStdin tells whether the thread whose /proc directory is
// base sleeps in read(0, ...) or in a pipe read.
func blockedReadingStdin(base string) bool {
	if sc, err := os.ReadFile(base + "syscall"); err == nil {
		f := strings.Fields(string(sc))
		if len(f) >= 2 && readSyscall != "" && f[0] == readSyscall && f[1] == "0x0" {
			return true
		}
	}
	if w, err := os.ReadFile(base + "wchan"); err == nil && strings.Contains(string(w), "pipe_read") {
		return true
	}
	return false
}

// ownSocket returns the diagnostic socket in dir that process pid's runtime
// made, or "". Other sockets named after pid are stale ones of exited
// runtimes whose pid was reused (CI machines keep those of killed targets
// in /tmp). On Linux the runtime names its socket after its start time,
// field 22 of /proc/PID/stat; elsewhere the newest socket is taken.
func ownSocket(dir string, pid int) string {
	m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("dotnet-diagnostic-%d-*-socket", pid)))
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 19 {
			name := filepath.Join(dir, fmt.Sprintf("dotnet-diagnostic-%d-%s-socket", pid, fields[19]))
			if slices.Contains(m, name) {
				return name
			}
			return ""
		}
	}
	newest, newestTime := "", time.Time{}
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newestTime) {
			newest, newestTime = p, fi.ModTime()
		}
	}
	return newest
}

// cleanEnv drops the variables that would make the host pick another
// runtime than the one a test asked for.
func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DOTNET_ROOT", "DOTNET_ROLL_FORWARD", "DOTNET_ROLL_FORWARD_TO_PRERELEASE", "DOTNET_MULTILEVEL_LOOKUP":
			continue
		}
		out = append(out, kv)
	}
	return out
}
