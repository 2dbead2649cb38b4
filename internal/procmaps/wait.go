package procmaps

import (
	"context"
	"errors"
	"path/filepath"
	"time"
)

var (
	// ErrNeverMapped is returned by WaitUnloaded when the file is not
	// mapped at the first look, so its unloading cannot be observed (the
	// process may see it under another path, e.g. in a container).
	ErrNeverMapped = errors.New("the file is not mapped into the process")
	// ErrStillMapped is returned by WaitUnloaded when the file is still
	// mapped once its limit has passed.
	ErrStillMapped = errors.New("the file is still mapped into the process")
)

// pollInterval is how often WaitUnloaded reads /proc/PID/maps.
const pollInterval = 25 * time.Millisecond

// WaitUnloaded polls /proc/PID/maps until the file at path (its symbolic
// links resolved), which must be mapped at the first look, has left process
// pid, for at most limit, and returns how long it waited. It fails with
// ErrNeverMapped, ErrStillMapped, ctx's error (unwrapped) when ctx ends
// first, or Mapped's error.
func WaitUnloaded(ctx context.Context, pid int, path string, limit time.Duration) (time.Duration, error) {
	return waitUnloaded(ctx, pid, path, limit, nil)
}

// waitUnloaded is WaitUnloaded; seen, when set, is called once the file was
// found mapped the first time (tests unmap it then).
func waitUnloaded(ctx context.Context, pid int, path string, limit time.Duration, seen func()) (time.Duration, error) {
	want := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		want = r
	}
	start := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	mapped := false
	for {
		m, err := Mapped(pid, want)
		if err != nil {
			return time.Since(start), err
		}
		switch {
		case !m && mapped:
			return time.Since(start), nil
		case !m:
			return 0, ErrNeverMapped
		case !mapped:
			mapped = true
			if seen != nil {
				seen()
			}
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-deadline.C:
			return time.Since(start), ErrStillMapped
		case <-tick.C:
		}
	}
}
