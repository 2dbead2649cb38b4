package cli

import (
	"strconv"

	"github.com/clrdiag/clrdiag/internal/procstate"
)

// errStopped is matched by the error for a target that a signal stopped.
var errStopped = procstate.ErrStopped

// stoppedError says that process PID is stopped (package procstate, which
// the monitor uses too).
type stoppedError = procstate.StoppedError

// state returns the state letter of /proc/PID/stat (R, S, D, T, t, Z...),
// or 0 when it cannot be read (another OS, the process is gone).
func (p procFS) state(pid int) byte { return procstate.FS{Root: p.root}.State(pid) }

// checkRunning returns a *stoppedError when process pid is stopped.
func checkRunning(pid int, proc procFS) error { return procstate.FS{Root: proc.root}.Check(pid) }

// stoppedHint is what a failure adds when the process it talked to is
// stopped now.
func stoppedHint(pid int, proc procFS) string {
	if pid <= 0 || checkRunning(pid, proc) == nil {
		return ""
	}
	return "process " + strconv.Itoa(pid) + " is stopped (SIGSTOP or a debugger): it cannot answer until it continues (kill -CONT " + strconv.Itoa(pid) + ")"
}
