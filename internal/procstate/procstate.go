package procstate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ErrStopped is matched (errors.Is) by every *StoppedError.
var ErrStopped = errors.New("the process is stopped")

// StoppedError says that process PID is stopped: it cannot answer, and on
// .NET Core 3.1 a session that a client gives up on while the process is
// stopped makes the runtime crash when the process continues.
type StoppedError struct {
	PID   int
	State byte // 'T' (a stop signal) or 't' (a debugger)
}

func (e *StoppedError) Error() string {
	by := "a stop signal (SIGSTOP, SIGTSTP; Ctrl-Z)"
	if e.State == 't' {
		by = "a debugger (ptrace)"
	}
	return fmt.Sprintf("process %d is stopped by %s (state %c in /proc/%d/stat): its runtime cannot answer, and a session given up while it is stopped can crash a .NET Core 3.1 runtime when it continues", e.PID, by, e.State, e.PID)
}

// Is makes a *StoppedError match ErrStopped.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

// FS is a /proc tree. The zero value reads the host's /proc; tests point
// Root at a fake one.
type FS struct {
	Root string
}

func (p FS) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// State returns the state letter of /proc/PID/stat (R, S, D, T, t, Z...),
// or 0 when it cannot be read (another OS, the process is gone).
func (p FS) State(pid int) byte {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "stat"))
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

// Check returns a *StoppedError when process pid is stopped, nil when it
// runs or its state cannot be read.
func (p FS) Check(pid int) error {
	if s := p.State(pid); s == 'T' || s == 't' {
		return &StoppedError{PID: pid, State: s}
	}
	return nil
}

// Check is FS{}.Check: the host's process pid.
func Check(pid int) error { return FS{}.Check(pid) }
