//go:build !unix && !windows

package reverse

import (
	"errors"
	"net"
)

func listen(addr string) (net.Listener, func() error, error) {
	return nil, nil, errors.New("reverse diagnostic ports are not supported on this platform")
}
