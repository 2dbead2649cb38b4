//go:build unix

package transport

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// staleSocket creates a socket file at path with nobody listening on it, as a
// runtime killed with SIGKILL leaves behind, and sets its mtime.
func staleSocket(t testing.TB, path string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}
