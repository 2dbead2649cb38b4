package transport

import (
	"errors"
	"fmt"
)

// ErrUntrustedSocket is matched (with errors.Is) by every
// *UntrustedSocketError.
var ErrUntrustedSocket = errors.New("diagnostic socket does not belong to the process")

// UntrustedSocketError reports a socket named after a process that fails the
// ownership check: it is owned by another user than the process's, it was
// created before the process started (a stale socket of an earlier process
// with that pid, or one planted in advance), it belongs to a process of
// another PID namespace that has the same pid there, or it was replaced
// since discovery checked it. Anyone can create a file named
// dotnet-diagnostic-PID-...-socket in a shared /tmp; a client that trusted it
// would send dumps, traces and profiler attach requests to whoever made it.
type UntrustedSocketError struct {
	PID    int    // the process the socket is named after, as seen from here
	Path   string // the socket
	Reason string // why it is refused, e.g. "owned by uid 1000, but the process runs as uid 0"

	// Stale is set when the socket is most likely left over by a runtime
	// that has exited, its pid since reused: it was created before the
	// process started, or nobody listens on it and its name records
	// another start time. Such a socket is as harmless as one whose
	// process is gone, which discovery skips silently; a listing such as
	// `clrdiag ps` need not warn about it.
	Stale bool
}

func (e *UntrustedSocketError) Error() string {
	return fmt.Sprintf("transport: refusing diagnostic socket %s for process %d: %s "+
		"(anyone can create a socket with that name in a shared temp dir; if you know it is the target's, "+
		"accept it deliberately with DiscoverConfig.TrustAnySocket, clrdiag --trust-socket)", e.Path, e.PID, e.Reason)
}

// Is reports whether target is ErrUntrustedSocket.
func (e *UntrustedSocketError) Is(target error) bool { return target == ErrUntrustedSocket }
