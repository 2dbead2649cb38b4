package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// errStopped is matched by the error for a target that a signal stopped.
var errStopped = errors.New("the process is stopped")

// stoppedError says that process PID is stopped: it cannot answer, and on
// .NET Core 3.1 a session that a client gives up on while the process is
// stopped makes the runtime crash when the process continues.
type stoppedError struct {
	PID   int
	State byte // 'T' (a stop signal) or 't' (a debugger)
}

func (e *stoppedError) Error() string {
	by := "a stop signal (SIGSTOP, SIGTSTP; Ctrl-Z)"
	if e.State == 't' {
		by = "a debugger (ptrace)"
	}
	return fmt.Sprintf("process %d is stopped by %s (state %c in /proc/%d/stat): its runtime cannot answer, and a session given up while it is stopped can crash a .NET Core 3.1 runtime when it continues", e.PID, by, e.State, e.PID)
}

// Is makes a *stoppedError match errStopped.
func (e *stoppedError) Is(target error) bool { return target == errStopped }

// state returns the state letter of /proc/PID/stat (R, S, D, T, t, Z...),
// or 0 when it cannot be read (another OS, the process is gone).
func (p procFS) state(pid int) byte {
	b, err := p.read(pid, "stat")
	if err != nil {
		return 0
	}
	// pid (comm) S ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// checkRunning returns a *stoppedError when process pid is stopped.
func checkRunning(pid int, proc procFS) error {
	if s := proc.state(pid); s == 'T' || s == 't' {
		return &stoppedError{PID: pid, State: s}
	}
	return nil
}

// stoppedHint is what a failure adds when the process it talked to is
// stopped now.
func stoppedHint(pid int, proc procFS) string {
	if pid <= 0 || checkRunning(pid, proc) == nil {
		return ""
	}
	return "process " + strconv.Itoa(pid) + " is stopped (SIGSTOP or a debugger): it cannot answer until it continues (kill -CONT " + strconv.Itoa(pid) + ")"
}
