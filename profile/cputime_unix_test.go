//go:build unix

package profile

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far, so that
// benchmarks on a shared machine can report CPU time besides wall time
// (wall time there depends on what else runs).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
