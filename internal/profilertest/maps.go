package profilertest

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/clrdiag/clrdiag/internal/procmaps"
)

// Mapped reports whether the library at lib is mapped into process pid, by
// reading /proc/PID/maps (Linux only; elsewhere it returns the open error).
func Mapped(pid int, lib string) (bool, error) {
	if pid <= 0 {
		return false, fmt.Errorf("mapped: bad pid %d", pid)
	}
	want, err := filepath.Abs(lib)
	if err != nil {
		return false, err
	}
	if r, err := filepath.EvalSymlinks(want); err == nil {
		want = r
	}
	m, err := procmaps.Mapped(pid, want)
	if err != nil {
		return false, fmt.Errorf("mapped: %w", err)
	}
	return m, nil
}

// WaitUnmapped polls until lib has left the maps of process pid.
func WaitUnmapped(ctx context.Context, pid int, lib string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := Mapped(pid, lib)
		if err != nil {
			return err
		}
		if !m {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is still mapped in process %d: %w", lib, pid, ctx.Err())
		case <-tick.C:
		}
	}
}
