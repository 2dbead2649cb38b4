//go:build unix

package transport

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestLiveSocket: a socket something listens on is live; a socket file
// nobody listens on any more, a regular file and a missing path are not.
func TestLiveSocket(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	live := filepath.Join(dir, "live")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: live, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !LiveSocket(ctx, live) {
		t.Errorf("%s: a listening socket is not live", live)
	}

	stale := filepath.Join(dir, "stale")
	ls, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ls.SetUnlinkOnClose(false)
	ls.Close()
	if st, err := os.Stat(stale); err != nil || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the closed socket's file is gone (%v): the test needs it", err)
	}
	if LiveSocket(ctx, stale) {
		t.Errorf("%s: a socket nobody listens on is live", stale)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(dir, "missing")} {
		if LiveSocket(ctx, p) {
			t.Errorf("%s is live", p)
		}
	}
}
