package profilertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, fmt.Errorf("mapped: %w", err)
	}
	return mapsHas(b, want), nil
}

// mapsHas reports whether a /proc/PID/maps text maps the file path.
func mapsHas(maps []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode pathname; the pathname may hold spaces.
		f := sc.Text()
		for range 5 {
			f = strings.TrimLeft(f, " ")
			i := strings.IndexByte(f, ' ')
			if i < 0 {
				f = ""
				break
			}
			f = f[i:]
		}
		f = strings.TrimLeft(f, " ")
		f = strings.TrimSuffix(f, " (deleted)")
		if f == path {
			return true
		}
	}
	return false
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
