//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/ipctest"
	httpmon "github.com/clrdiag/clrdiag/monitor"
)

func TestMonitorAddr(t *testing.T) {
	for in, want := range map[string]string{"http://127.0.0.1:52323": "127.0.0.1:52323", "localhost:1": "localhost:1", "http://[::1]:80": "[::1]:80",
		"http://*:52323": ":52323", "http://+:52325/": ":52325", "HTTP://localhost:2": "localhost:2", "https://x:1": "x:1", "HTTPS://x:2": "x:2"} {
		if got, tls, err := monitorAddr(in); err != nil || got != want || tls != strings.HasPrefix(strings.ToLower(in), "https") {
			t.Errorf("monitorAddr(%q) = %q, %v, %v; want %q", in, got, tls, err, want)
		}
	}
	for _, bad := range []string{"ftp://x:1", "nohost", "http://x", "http://a:1;http://b:2", "http://a:99999", "http://a:1/path"} {
		if _, _, err := monitorAddr(bad); err == nil {
			t.Errorf("monitorAddr(%q) accepted", bad)
		}
	}
}

// clrdiag monitor in listen mode: a runtime connecting to the shared socket
// is resumed and served over HTTP with the API key.
func TestMonitorListenMode(t *testing.T) {
	path := ipctest.SocketPath(t)
	f := connectingRuntime(t, ipctest.Config{PID: 4545, Suspended: true}, path)
	var stderr syncbuf.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr}
	cmd := newMonitorCmd(e)
	cmd.SetArgs([]string{"--urls", "127.0.0.1:0", "--api-key", "k3y", "--diagnostic-port", path})
	cmd.SetErr(&stderr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("monitor: %v", err)
		}
	}()
	re := regexp.MustCompile(`Listening on (http://\S+)`)
	var base string
	deadline := time.Now().Add(10 * time.Second)
	for base == "" && time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if base == "" || !strings.Contains(stderr.String(), "DOTNET_DiagnosticPorts="+path) {
		t.Fatalf("monitor did not start:\n%s", stderr.String())
	}
	get := func(p, key string) (int, string) {
		req, _ := http.NewRequest("GET", base+p, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/processes", ""); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	var procs []struct{ PID int }
	for time.Now().Before(deadline) {
		code, body := get("/processes", "k3y")
		if code != 200 {
			t.Fatalf("/processes: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &procs); err != nil {
			t.Fatal(err)
		}
		if len(procs) == 1 && !f.Suspended() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(procs) != 1 || procs[0].PID != 4545 || f.Suspended() {
		t.Fatalf("processes %v, suspended %v", procs, f.Suspended())
	}
	if code, body := get("/processes/4545", "k3y"); code != 200 || !strings.Contains(body, `"pid": 4545`) {
		t.Fatalf("info: %d %s", code, body)
	}
}

// TestMonitorStartErrors: a port in use names the flag to change and is a
// local I/O failure (exit 6, as a file that cannot be created; it was 2);
// a --dump-dir that does not exist, or that every user may write (its help
// says writable only by its owner), is refused at start.
func TestMonitorStartErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := "http://" + ln.Addr().String()
	code, _, errOut := run(t, "monitor", "--no-auth", "--no-metrics", "--urls", busy)
	if code != exitIO || !strings.Contains(errOut, "already in use") || !strings.Contains(errOut, "--urls") {
		t.Errorf("port in use: exit %d %s", code, errOut)
	}
	// dotnet-monitor's verb.
	code, _, errOut = run(t, "monitor", "collect", "--no-auth", "--no-metrics", "--urls", busy)
	if code != exitIO || !strings.Contains(errOut, "already in use") {
		t.Errorf("monitor collect: exit %d %s", code, errOut)
	}
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "monitor", "--no-auth", "--no-metrics", "--urls", "http://127.0.0.1:0", "--dump-dir", open)
	if code != exitUsage || !strings.Contains(errOut, "writable by every user") {
		t.Errorf("world-writable --dump-dir: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "monitor", "--no-auth", "--no-metrics", "--urls", "http://127.0.0.1:0", "--dump-dir", "/nonexistent/dumps")
	if code != exitUsage || !strings.Contains(errOut, "--dump-dir /nonexistent/dumps does not exist") {
		t.Errorf("missing --dump-dir: exit %d %s", code, errOut)
	}
}

// startMonitor runs 'clrdiag monitor' with args until the test ends and
// returns its stderr once it listens, and a channel that yields its exit
// error if it ended before listening (nil channel otherwise).
func startMonitor(t *testing.T, args ...string) (*syncbuf.Buffer, <-chan error) {
	t.Helper()
	var stderr syncbuf.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr}
	cmd := newMonitorCmd(e)
	cmd.SetArgs(append([]string{"--no-metrics"}, args...))
	cmd.SetErr(&stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var exited error
	var ended bool
	t.Cleanup(func() {
		cancel()
		if !ended {
			<-done
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "Listening on"); time.Sleep(5 * time.Millisecond) {
		select {
		case exited = <-done:
			ended = true
			res := make(chan error, 1)
			res <- exited
			return &stderr, res
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("monitor did not start:\n%s", stderr.String())
		}
	}
	return &stderr, nil
}

// listenAddr returns the address the monitor printed.
func listenAddr(t *testing.T, stderr string) string {
	t.Helper()
	_, after, ok := strings.Cut(stderr, "Listening on ")
	if !ok {
		t.Fatalf("no address in:\n%s", stderr)
	}
	u, _, _ := strings.Cut(after, "\n")
	return u
}

// get requests path with the key and returns the status.
func getWithKey(t *testing.T, base, path, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMonitorAPIKeySources: the key comes from a file, the environment or
// the command line (which warns that it is visible), never from two; the
// generated key file is 0600.
func TestMonitorAPIKeySources(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	code, _, errOut := run(t, "monitor", "generatekey", "-o", keyFile)
	if code != 0 {
		t.Fatalf("generatekey: %d %s", code, errOut)
	}
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(keyFile)
	fileKey := strings.TrimSpace(string(b))
	if len(fileKey) < 20 {
		t.Fatalf("generated key %q is short", fileKey)
	}
	if code, out, _ := run(t, "monitor", "generatekey"); code != 0 || len(strings.TrimSpace(out)) < 20 || strings.TrimSpace(out) == fileKey {
		t.Errorf("generatekey to stdout: %d %q", code, out)
	}

	stderr, _ := startMonitor(t, "--urls", "127.0.0.1:0", "--api-key-file", keyFile)
	base := listenAddr(t, stderr.String())
	if getWithKey(t, base, "/processes", fileKey) != 200 || getWithKey(t, base, "/processes", "wrong") != 401 {
		t.Errorf("key from --api-key-file not enforced")
	}
	if strings.Contains(stderr.String(), fileKey) || strings.Contains(stderr.String(), "warning") {
		t.Errorf("monitor with a key file printed the key or a warning:\n%s", stderr.String())
	}

	t.Setenv(monitorKeyEnv, "env-key-0123456789abcdef")
	stderr, _ = startMonitor(t, "--urls", "127.0.0.1:0")
	if base := listenAddr(t, stderr.String()); getWithKey(t, base, "/processes", "env-key-0123456789abcdef") != 200 {
		t.Errorf("key from %s not used", monitorKeyEnv)
	}
	if _, done := startMonitor(t, "--urls", "127.0.0.1:0", "--api-key-file", keyFile); done == nil || !isUsage(<-done) {
		t.Errorf("two key sources accepted")
	}
	os.Unsetenv(monitorKeyEnv)

	stderr, _ = startMonitor(t, "--urls", "127.0.0.1:0", "--api-key", "short")
	if s := stderr.String(); !strings.Contains(s, "visible to every user") || !strings.Contains(s, "5 characters") {
		t.Errorf("--api-key gave no warning:\n%s", s)
	}
	os.Chmod(keyFile, 0o644)
	stderr, _ = startMonitor(t, "--urls", "127.0.0.1:0", "--api-key-file", keyFile)
	if !strings.Contains(stderr.String(), "readable by other users") {
		t.Errorf("a world-readable key file gave no warning:\n%s", stderr.String())
	}
}

func isUsage(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Code == exitUsage
}

// TestMonitorPlainHTTPWarning: serving beyond loopback without TLS warns;
// https needs a certificate.
func TestMonitorPlainHTTPWarning(t *testing.T) {
	stderr, _ := startMonitor(t, "--urls", "0.0.0.0:0", "--api-key", "0123456789abcdefgh")
	if !strings.Contains(stderr.String(), "plain HTTP") {
		t.Errorf("no plain-HTTP warning for 0.0.0.0:\n%s", stderr.String())
	}
	stderr, _ = startMonitor(t, "--urls", "127.0.0.1:0", "--api-key", "0123456789abcdefgh")
	if strings.Contains(stderr.String(), "plain HTTP") {
		t.Errorf("plain-HTTP warning for loopback:\n%s", stderr.String())
	}
	if _, done := startMonitor(t, "--urls", "https://127.0.0.1:0"); done == nil || !isUsage(<-done) {
		t.Error("https without a certificate accepted")
	}
}

// TestMonitorRoutesDocumented: every route of the server is in the README
// and in 'clrdiag monitor --help'.
func TestMonitorRoutesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, help, _ := run(t, "monitor", "--help")
	for _, rt := range httpmon.Routes() {
		if !strings.Contains(string(readme), "`"+rt.Method+" "+rt.Path) {
			t.Errorf("README does not document %s %s", rt.Method, rt.Path)
		}
		if !strings.Contains(help, rt.Method+" "+rt.Path) && !strings.Contains(help, rt.Method+"  "+rt.Path) {
			t.Errorf("monitor --help does not list %s %s", rt.Method, rt.Path)
		}
	}
}
