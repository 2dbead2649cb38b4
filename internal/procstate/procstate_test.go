package procstate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func fakeStat(t *testing.T, stat string) FS {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "42", "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	return FS{Root: root}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		stat    string
		state   byte
		stopped bool
		by      string
	}{
		{"42 (dotnet) S 1 42 42 0 -1", 'S', false, ""},
		{"42 (dotnet) R 1 42 42 0 -1", 'R', false, ""},
		{"42 (dotnet) T 1 42 42 0 -1", 'T', true, "stop signal"},
		{"42 (dotnet) t 1 42 42 0 -1", 't', true, "debugger"},
		// comm may hold spaces and parentheses: the last ')' ends it.
		{"42 (a) T (b) S 1 42", 'S', false, ""},
		{"42 (x) R) T 1 42", 'T', true, "stop signal"},
		{"42 (cut", 0, false, ""},
		{"", 0, false, ""},
	} {
		fs := fakeStat(t, c.stat)
		if got := fs.State(42); got != c.state {
			t.Errorf("%q: state %q, want %q", c.stat, got, c.state)
		}
		err := fs.Check(42)
		if (err != nil) != c.stopped {
			t.Errorf("%q: Check = %v, want stopped %v", c.stat, err, c.stopped)
			continue
		}
		if err == nil {
			continue
		}
		var se *StoppedError
		if !errors.Is(err, ErrStopped) || !errors.As(err, &se) || se.PID != 42 {
			t.Errorf("%q: %v does not match ErrStopped/StoppedError{PID: 42}", c.stat, err)
		}
		if !strings.Contains(err.Error(), "process 42 is stopped by") || !strings.Contains(err.Error(), c.by) {
			t.Errorf("%q: message %q", c.stat, err)
		}
	}
	if s := (FS{Root: t.TempDir()}).State(42); s != 0 {
		t.Errorf("a missing process reads as %q", s)
	}
	if err := Check(0); err != nil {
		t.Errorf("pid 0: %v", err)
	}
}

// This test process runs: the host's /proc says so.
func TestCheckSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc here")
	}
	if s := (FS{}).State(os.Getpid()); s != 'R' && s != 'S' {
		t.Errorf("this process reads as state %q", s)
	}
	if err := Check(os.Getpid()); err != nil {
		t.Error(err)
	}
}
