//go:build windows

package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"

	"github.com/Microsoft/go-winio"
)

func dialOnce(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case NetworkPipe:
		// Same access and impersonation level as the .NET client. winio waits
		// for a busy pipe until ctx ends.
		return winio.DialPipeAccessImpLevel(ctx, address,
			uint32(syscall.GENERIC_READ|syscall.GENERIC_WRITE), winio.PipeImpLevelImpersonation)
	case NetworkUnix:
		var d net.Dialer
		return d.DialContext(ctx, "unix", address)
	}
	return nil, fmt.Errorf("unknown network %q (want %q or %q)", network, NetworkPipe, NetworkUnix)
}

// retryable reports whether a failed connect may succeed soon: the pipe or
// socket does not exist yet, or is not yet accepting.
func retryable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}
