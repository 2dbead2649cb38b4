//go:build windows

package reverse

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/Microsoft/go-winio"
)

// pipePrefix starts every named pipe path.
const pipePrefix = `\\.\pipe\`

// ownerOnly allows the pipe to its creator's user, SYSTEM and administrators.
const ownerOnly = "D:P(A;;GA;;;OW)(A;;GA;;;SY)(A;;GA;;;BA)"

// listen creates a named pipe for \\.\pipe\NAME or a bare NAME, and an AF_UNIX
// socket for a path.
func listen(addr string) (net.Listener, func() error, error) {
	if strings.HasPrefix(addr, pipePrefix) || !strings.ContainsAny(addr, `\/:`) {
		name := addr
		if !strings.HasPrefix(name, pipePrefix) {
			name = pipePrefix + name
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		c, err := winio.DialPipeContext(ctx, name)
		cancel()
		if err == nil {
			c.Close()
			return nil, nil, ErrAddressInUse
		}
		ln, err := winio.ListenPipe(name, &winio.PipeConfig{SecurityDescriptor: ownerOnly})
		if err != nil {
			return nil, nil, err
		}
		// A pipe disappears with its last handle.
		return ln, func() error { return nil }, nil
	}
	if _, err := os.Lstat(addr); err == nil {
		c, err := net.DialTimeout("unix", addr, time.Second)
		if err == nil {
			c.Close()
			return nil, nil, ErrAddressInUse
		}
		if !errors.Is(err, syscall.Errno(10061)) && !errors.Is(err, fs.ErrNotExist) { // WSAECONNREFUSED
			// Unknown state: keep the file.
			return nil, nil, err
		}
		if err := os.Remove(addr); err != nil {
			return nil, nil, err
		}
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, func() error { return os.Remove(addr) }, nil
}
