package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/syncbuf"
)

// served is a command that serves until its context ends (trace view,
// monitor), run in the background.
type served struct {
	cancel context.CancelFunc
	done   chan error
	stdout syncbuf.Buffer
	stderr syncbuf.Buffer
}

// startServed runs clrdiag args in the background until the test ends or
// stop is called.
func startServed(t *testing.T, args ...string) *served {
	t.Helper()
	s := &served{done: make(chan error, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: &s.stdout, stderr: &s.stderr, args: args}
	root := newRootCmd(e)
	root.SetArgs(args)
	root.SetOut(&s.stdout)
	root.SetErr(&s.stderr)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// wait waits until re matches the output (stdout then stderr) and returns
// its first submatch; it fails the test if the command ends first.
func (s *served) wait(t *testing.T, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		for _, out := range []string{s.stdout.String(), s.stderr.String()} {
			if m := re.FindStringSubmatch(out); m != nil {
				return m[len(m)-1]
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("the command ended (%v) before printing %s:\n%s%s", err, re, s.stdout.String(), s.stderr.String())
		case <-deadline:
			t.Fatalf("no %s after %v:\n%s%s", re, timeout, s.stdout.String(), s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop cancels the command, as Ctrl-C does, and checks it ends cleanly.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if err := s.stopErr(t); err != nil {
		t.Errorf("the command failed after the interrupt: %v\n%s", err, s.stderr.String())
	}
}

// stopErr cancels the command, as Ctrl-C does, and returns its error.
func (s *served) stopErr(t *testing.T) error {
	t.Helper()
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		t.Errorf("the command did not stop within 30s of the interrupt")
		return nil
	}
}

var viewURL = regexp.MustCompile(`(?m)^(http://127\.0\.0\.1:\d+/ui/flamegraph)$`)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestTraceView(t *testing.T) {
	in := sampleTrace(t)
	s := startServed(t, "trace", "view", in, "--no-browser")
	url := s.wait(t, viewURL, 30*time.Second)
	if !strings.Contains(s.stderr.String(), "7423 samples on 1 threads, weighed by wall time") || !strings.Contains(s.stderr.String(), "nothing is written to disk") {
		t.Errorf("stderr: %s", s.stderr.String())
	}
	code, body := httpGet(t, url)
	if code != 200 || !strings.Contains(body, "stackViewer(") {
		t.Fatalf("flame graph: %d %.300s", code, body)
	}
	base := strings.TrimSuffix(url, "flamegraph")
	if code, body := httpGet(t, base+"top"); code != 200 || !strings.Contains(body, `"Flat":`) {
		t.Errorf("top: %d %.300s", code, body)
	}
	s.stop(t)
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after the interrupt")
	}
}

// A damaged trace: the viewer shows what could be read, then the command
// exits 5.
func TestTraceViewDamaged(t *testing.T) {
	in := sampleTrace(t)
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.nettrace")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServed(t, "trace", "view", cut, "--no-browser")
	url := s.wait(t, viewURL, 30*time.Second)
	if code, body := httpGet(t, url); code != 200 || !strings.Contains(body, "stackViewer(") {
		t.Fatalf("flame graph of the damaged trace: %d", code)
	}
	err = s.stopErr(t)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != exitDamaged || !strings.Contains(s.stderr.String(), "warning: "+cut) {
		t.Errorf("after the interrupt: %v\n%s", err, s.stderr.String())
	}
}

func TestTraceViewErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "none.nettrace")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"trace", "view", "x.nettrace", "--http", "nope"}, exitUsage, `--http "nope": want HOST:PORT`},
		{[]string{"trace", "view", "x.nettrace", "--sample", "heap"}, exitUsage, `unknown --sample "heap": use wall, cpu, alloc, contention or exceptions`},
		{[]string{"trace", "view", "x.gcdump", "--thread", "1"}, exitUsage, "--thread and --managed-only apply to traces"},
		{[]string{"trace", "view", empty}, exitIO, "no such file"},
		{[]string{"trace", "view"}, exitUsage, "accepts 1 arg"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d (want %d): %s", c.args, code, c.code, stderr)
		}
	}
}

func TestBrowserCommand(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		goos string
		env  func(string) string
		name string
		args []string
		ok   bool
	}{
		{"linux", env(), "", nil, false},
		{"linux", env("DISPLAY", ":0"), "xdg-open", nil, true},
		{"linux", env("WAYLAND_DISPLAY", "wayland-0"), "xdg-open", nil, true},
		{"linux", env("BROWSER", "firefox --new-tab"), "firefox", []string{"--new-tab"}, true},
		{"darwin", env(), "open", nil, true},
		{"windows", env(), "cmd", []string{"/c", "start", ""}, true},
	} {
		name, args, ok := browserCommand(c.goos, c.env)
		if name != c.name || !slices.Equal(args, c.args) || ok != c.ok {
			t.Errorf("%s: %q %q %v, want %q %q %v", c.goos, name, args, ok, c.name, c.args, c.ok)
		}
	}
}

// TestTraceViewOpensBrowser checks that the URL is handed to the browser
// ($BROWSER, a script that records its argument), and not with
// --no-browser.
func TestTraceViewOpensBrowser(t *testing.T) {
	if os.PathSeparator != '/' {
		t.Skip("the fake browser is a shell script")
	}
	in := sampleTrace(t)
	dir := t.TempDir()
	got := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1\" >> "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", script)
	s := startServed(t, "trace", "view", in, "--no-browser")
	s.wait(t, viewURL, 30*time.Second)
	s.stop(t)
	if _, err := os.Stat(got); err == nil {
		t.Error("--no-browser opened a browser")
	}
	s = startServed(t, "trace", "view", in)
	url := s.wait(t, viewURL, 30*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(got)
		if strings.TrimSpace(string(b)) == url {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser was given %q, want %s", b, url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
