package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"syscall"
)

// ErrNotSupported reports a transport or feature that this operating system
// (or this build) does not provide, such as Windows named pipes on Linux.
var ErrNotSupported = errors.New("not supported on this platform")

// ErrNotFound is matched (with errors.Is) by every *NotFoundError.
var ErrNotFound = errors.New("no diagnostic endpoint found")

// ErrListenNotSupported is returned by DiagnosticPort.Endpoint for a port in
// listen mode: clrdiag cannot yet wait for a runtime to connect to it.
var ErrListenNotSupported = errors.New("listen-mode diagnostic ports are not supported yet")

// OpError is the error returned by Dial. It names the operation and the
// address and explains the most common causes in its text.
type OpError struct {
	Op   string // "dial" or "replay"
	Addr string // socket path or pipe name
	Err  error  // underlying cause
}

var _ net.Error = (*OpError)(nil)

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("transport: ")
	b.WriteString(e.Op)
	if e.Addr != "" {
		b.WriteString(" ")
		b.WriteString(e.Addr)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if h := e.hint(); h != "" {
		b.WriteString(" (")
		b.WriteString(h)
		b.WriteString(")")
	}
	return b.String()
}

func (e *OpError) hint() string {
	switch {
	case e.Err == nil:
		return ""
	case errors.Is(e.Err, fs.ErrPermission):
		return "the diagnostic socket is mode 0600: run as the target process's user or as root"
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "nothing accepts on this socket: the process may have exited and left a stale socket, " +
			"or its runtime is still starting; run `clrdiag ps` to list live targets"
	case errors.Is(e.Err, fs.ErrNotExist):
		return "the endpoint does not exist: the process may have exited, or it uses another TMPDIR; " +
			"run `clrdiag ps` to list live targets"
	case errors.Is(e.Err, errPathTooLong):
		return "a socket path holds at most 107 bytes: give the target a shorter TMPDIR"
	case errors.Is(e.Err, context.DeadlineExceeded):
		return "the endpoint did not accept in time: check that the process is a running .NET 3.0+ runtime"
	}
	return ""
}

// Unwrap returns the underlying cause.
func (e *OpError) Unwrap() error { return e.Err }

// Timeout reports whether the operation failed because a deadline passed.
func (e *OpError) Timeout() bool {
	if errors.Is(e.Err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// Temporary reports whether retrying may succeed (a refused or missing
// endpoint while a runtime starts). Deprecated in net.Error; kept for it.
func (e *OpError) Temporary() bool { return retryable(e.Err) }

var errPathTooLong = errors.New("socket path too long")

// NotFoundError reports that no diagnostic endpoint could be found for a
// process id or name. Its text lists what was checked and what to try.
type NotFoundError struct {
	PID     int      // the process asked for, or 0 when searching by name
	Name    string   // the name asked for (FindByName), or ""
	Exists  bool     // whether the process itself exists (PID lookups)
	Checked []string // places searched, e.g. "/tmp/dotnet-diagnostic-42-*-socket"
	Notes   []string // problems met on the way, e.g. unreadable /proc files
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	switch {
	case e.Name != "":
		fmt.Fprintf(&b, "transport: no .NET process named %q publishes a diagnostic endpoint", e.Name)
	case !e.Exists:
		fmt.Fprintf(&b, "transport: process %d does not exist (or is not visible from this PID namespace)", e.PID)
	default:
		fmt.Fprintf(&b, "transport: process %d publishes no diagnostic endpoint", e.PID)
	}
	if len(e.Checked) > 0 {
		b.WriteString("; checked: ")
		b.WriteString(strings.Join(e.Checked, ", "))
	}
	if len(e.Notes) > 0 {
		b.WriteString("; problems: ")
		b.WriteString(strings.Join(e.Notes, "; "))
	}
	b.WriteString("; ")
	b.WriteString(strings.Join(e.Hints(), "; "))
	return b.String()
}

// Hints returns what a person should check, one sentence each; Error
// includes them. A CLI can print them as a list.
func (e *NotFoundError) Hints() []string {
	if e.Name == "" && !e.Exists {
		return []string{"run `clrdiag ps` to list .NET processes"}
	}
	return []string{
		"check it is a .NET Core 3.0+ process and DOTNET_EnableDiagnostics is not 0",
		"the socket is mode 0600, so run as the target's user or as root",
		"the target's TMPDIR must match ours, or /proc/PID/environ must be readable to find it",
		"for a process in a container, share its PID namespace (pid: host) and grant CAP_SYS_PTRACE " +
			"so /proc/PID/root is readable, or share its /tmp",
		"a socket path holds at most 107 bytes (sun_path): a long TMPDIR keeps the runtime from creating it",
		"see https://aka.ms/dotnet-diagnostics-port",
	}
}

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }
