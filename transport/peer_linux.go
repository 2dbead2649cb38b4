//go:build linux

package transport

import (
	"fmt"
	"net"
	"syscall"
)

// checkPeer checks that the process that listens on conn's socket is
// ep.PID. The kernel records the listener's credentials at listen(2) and
// translates its pid into our PID namespace (0 when it is not visible from
// here), so a socket made by anyone else, planted at the path after
// discovery checked it, is refused.
func checkPeer(conn net.Conn, ep Endpoint) error {
	refuse := func(format string, args ...any) error {
		return &UntrustedSocketError{PID: ep.PID, Path: ep.Address, Reason: fmt.Sprintf(format, args...)}
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return refuse("the connection does not expose its socket to check the listening process")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return refuse("cannot check the listening process: %v", err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		credErr = err
	}
	if credErr != nil {
		return refuse("cannot check the listening process (SO_PEERCRED): %v", credErr)
	}
	if int(cred.Pid) != ep.PID {
		if cred.Pid == 0 {
			return refuse("the process listening on it (uid %d) is not visible from this PID namespace", cred.Uid)
		}
		return refuse("process %d (uid %d) listens on it, not process %d", cred.Pid, cred.Uid, ep.PID)
	}
	return nil
}
