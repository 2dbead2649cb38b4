//go:build unix

package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"
)

// maxUnixPath is the longest socket path connect(2) accepts: sun_path holds
// 108 bytes on Linux including the terminating NUL (104 on macOS and the BSDs).
const maxUnixPath = 107

func dialOnce(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case NetworkUnix:
		if len(address) > maxUnixPath {
			return nil, fmt.Errorf("%w: %d bytes", errPathTooLong, len(address))
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", address)
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			// OpError wraps the same op and address again; keep the cause.
			return nil, oe.Err
		}
		return conn, err
	case NetworkPipe:
		return nil, fmt.Errorf("named pipes: %w", ErrNotSupported)
	}
	return nil, fmt.Errorf("unknown network %q (want %q or %q)", network, NetworkUnix, NetworkPipe)
}

// retryable reports whether a failed connect may succeed soon: the socket is
// not created yet, or created but not yet accepting, or its backlog is full.
func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, syscall.EAGAIN)
}
