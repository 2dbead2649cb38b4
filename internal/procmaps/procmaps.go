// Package procmaps answers whether a file is mapped into a process, from
// Linux's /proc/PID/maps, and waits for a mapped file to leave the process
// (WaitUnloaded). clrdiag attach uses it to see a profiler library leave
// the target after detach; the profiler tests use it too.
package procmaps

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrExited is returned when the process has no /proc entry any more.
var ErrExited = errors.New("process has exited")

// Mapped reports whether the file at path (compared as given) is mapped
// into process pid.
func Mapped(pid int, path string) (bool, error) {
	if pid <= 0 {
		return false, fmt.Errorf("procmaps: bad pid %d", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("process %d: %w", pid, ErrExited)
		}
		return false, err
	}
	return Has(b, path), nil
}

// Has reports whether a /proc/PID/maps text maps the file path. Pathnames
// may hold spaces; a " (deleted)" suffix is ignored.
func Has(maps []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode pathname
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
		f = strings.TrimSuffix(strings.TrimLeft(f, " "), " (deleted)")
		if f == path {
			return true
		}
	}
	return false
}
