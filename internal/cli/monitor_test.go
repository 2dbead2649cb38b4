//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// monBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type monBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *monBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *monBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMonitorAddr(t *testing.T) {
	for in, want := range map[string]string{"http://127.0.0.1:52323": "127.0.0.1:52323", "localhost:1": "localhost:1", "http://[::1]:80": "[::1]:80",
		"http://*:52323": ":52323", "http://+:52325/": ":52325", "HTTP://localhost:2": "localhost:2"} {
		if got, err := monitorAddr(in); err != nil || got != want {
			t.Errorf("monitorAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"https://x:1", "nohost", "http://x", "http://a:1;http://b:2", "http://a:99999", "http://a:1/path"} {
		if _, err := monitorAddr(bad); err == nil {
			t.Errorf("monitorAddr(%q) accepted", bad)
		}
	}
}

// clrdiag monitor in listen mode: a runtime connecting to the shared socket
// is resumed and served over HTTP with the API key.
func TestMonitorListenMode(t *testing.T) {
	path := shortSocket(t)
	f := connectingRuntime(t, ipctest.Config{PID: 4545, Suspended: true}, path)
	var stderr monBuffer
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

// TestMonitorStartErrors: a port in use names the flag to change; a
// --dump-dir that does not exist is refused at start.
func TestMonitorStartErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := "http://" + ln.Addr().String()
	code, _, errOut := run(t, "monitor", "--no-auth", "--no-metrics", "--urls", busy)
	if code != exitUsage || !strings.Contains(errOut, "already in use") || !strings.Contains(errOut, "--urls") {
		t.Errorf("port in use: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "monitor", "--no-auth", "--no-metrics", "--urls", "http://127.0.0.1:0", "--dump-dir", "/nonexistent/dumps")
	if code != exitUsage || !strings.Contains(errOut, "--dump-dir /nonexistent/dumps does not exist") {
		t.Errorf("missing --dump-dir: exit %d %s", code, errOut)
	}
}
