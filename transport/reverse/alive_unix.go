//go:build unix

package reverse

import (
	"net"
	"syscall"
)

// alive reports whether the peer of c has not closed it, without consuming
// data: a non-blocking peek sees end-of-file at once if the runtime exited.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
		return true // never wait
	})
	return err == nil && !closed
}
