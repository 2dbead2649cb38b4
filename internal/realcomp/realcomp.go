package realcomp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartTimeout bounds how long a component may take to become ready.
const StartTimeout = 60 * time.Second

// Missing reports a component that is not there: under CI=true the test
// fails, otherwise it is skipped with how to get the component.
func Missing(t testing.TB, what, how string) {
	t.Helper()
	msg := fmt.Sprintf("%s is not available: %s", what, how)
	if os.Getenv("CI") == "true" {
		t.Fatalf("real-component test cannot run (CI=true, so this fails instead of skipping): %s", msg)
	}
	t.Skipf("SKIPPING real-component test: %s", msg)
}

// CacheDir is where built components are kept: $CLRDIAG_CACHE/components,
// else .cache/components at the module root.
func CacheDir() string {
	if c := os.Getenv("CLRDIAG_CACHE"); c != "" {
		return filepath.Join(c, "components")
	}
	return filepath.Join(moduleRoot(), ".cache", "components")
}

func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	// internal/realcomp/realcomp.go -> the module root.
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// findBinary looks for a component's binary: envVar, then CacheDir()/name,
// then PATH when onPath.
func findBinary(envVar, name string, onPath bool) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s=%s is not a file", envVar, p)
		}
		return p, nil
	}
	p := filepath.Join(CacheDir(), name)
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, nil
	}
	if onPath {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s in %s (or %s)", name, CacheDir(), envVar)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is a started component.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// start runs bin with args, its output appended to a log file in a
// temporary directory, and registers its stop with t.Cleanup.
func start(t testing.TB, name, bin string, args, env []string, dir string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("%s log: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s (%s): %v", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("last lines of %s's log (%s):\n%s", name, logPath, p.tail(40))
		}
	})
	return p
}

// Stop interrupts the process and kills it if it is still running after
// 10 s. It is safe to call more than once.
func (p *Process) Stop() {
	p.stop.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Log returns everything the process has written so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

func (p *Process) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLog waits until the process's output satisfies ok, and returns it. It
// fails when ctx ends first or the process exits.
func (p *Process) WaitLog(ctx context.Context, ok func(log string) bool) (string, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s := p.Log()
		if ok(s) {
			return s, nil
		}
		if exited, err := p.Exited(); exited {
			return s, fmt.Errorf("%s exited (%v) before its output showed what was waited for", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("%s: %w waiting for its output", p.Name, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitHTTP polls url until ready accepts the answer, the process exits, or
// StartTimeout passes.
func (p *Process) waitHTTP(t testing.TB, method, url string, ready func(*http.Response) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, method, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			ok := ready(resp)
			last = resp.Status
			resp.Body.Close()
			if ok {
				return
			}
		} else {
			last = err.Error()
		}
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited before it was ready (%v); its log:\n%s", p.Name, err, p.tail(40))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready at %s after %v (last: %s); its log:\n%s", p.Name, url, StartTimeout, last, p.tail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// anyAnswer is a readiness check that accepts any HTTP answer.
func anyAnswer(*http.Response) bool { return true }

// writeFile writes a configuration file into dir.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
