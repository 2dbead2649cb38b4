//go:build !unix && !windows

package transport

import (
	"context"
	"fmt"
	"net"
	"runtime"
)

func dialOnce(ctx context.Context, network, address string) (net.Conn, error) {
	return nil, fmt.Errorf("%s on %s/%s: %w", network, runtime.GOOS, runtime.GOARCH, ErrNotSupported)
}

func retryable(err error) bool { return false }
