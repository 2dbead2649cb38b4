package procmaps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// mapFile maps a new file into this process and returns its path and the
// unmapping.
func mapFile(t *testing.T) (string, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lib.so")
	if err := os.WriteFile(path, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	unmap := func() {
		if !done {
			done = true
			if err := syscall.Munmap(b); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(unmap)
	return path, unmap
}

// TestWaitUnloaded: the wait ends once the mapped file has left the
// process (seen through a symbolic link to it).
func TestWaitUnloaded(t *testing.T) {
	path, unmap := mapFile(t)
	link := filepath.Join(t.TempDir(), "link.so")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	// Unmapped once the wait has seen it mapped.
	took, err := waitUnloaded(context.Background(), os.Getpid(), link, time.Minute, unmap)
	if err != nil || took <= 0 {
		t.Fatalf("WaitUnloaded = %v, %v; want a positive wait, nil", took, err)
	}
	if m, err := Mapped(os.Getpid(), path); err != nil || m {
		t.Fatalf("after the wait: mapped %v, %v", m, err)
	}
}

// TestWaitUnloadedFails: a file never mapped, one that stays past the
// limit, and a context that ends each end the wait with their error.
func TestWaitUnloadedFails(t *testing.T) {
	if _, err := WaitUnloaded(context.Background(), os.Getpid(), "/nonexistent/lib.so", time.Minute); !errors.Is(err, ErrNeverMapped) {
		t.Errorf("never mapped: %v, want ErrNeverMapped", err)
	}
	path, _ := mapFile(t)
	if _, err := WaitUnloaded(context.Background(), os.Getpid(), path, 100*time.Millisecond); !errors.Is(err, ErrStillMapped) {
		t.Errorf("still mapped: %v, want ErrStillMapped", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitUnloaded(ctx, os.Getpid(), path, time.Minute); err != context.Canceled {
		t.Errorf("canceled: %v, want context.Canceled itself", err)
	}
	if _, err := WaitUnloaded(context.Background(), -1, path, time.Minute); err == nil || errors.Is(err, ErrNeverMapped) {
		t.Errorf("bad pid: %v, want Mapped's error", err)
	}
}
