package reverse

import (
	"errors"
	"fmt"
)

// ErrAddressInUse is matched by the error of Listen when another process is
// listening on the address.
var ErrAddressInUse = errors.New("address in use by a live listener")

// ErrRuntimeGone is matched by the error of Runtime.Dial when the runtime
// closed the connection the server was holding for it: it has exited (or was
// killed), and no newer connection arrived.
var ErrRuntimeGone = errors.New("the runtime closed its diagnostic connection; it has probably exited")

// ErrClosed is matched by the errors of Accept and Dial after Close.
var ErrClosed = errors.New("reverse server closed")

// ListenError is the error returned by Listen.
type ListenError struct {
	Addr string // socket path or pipe name
	Err  error
}

func (e *ListenError) Error() string {
	msg := fmt.Sprintf("reverse: listen on %s: %v", e.Addr, e.Err)
	if errors.Is(e.Err, ErrAddressInUse) {
		msg += " (another clrdiag or dotnet-monitor is already waiting for runtimes there; choose another path or stop it)"
	}
	return msg
}

func (e *ListenError) Unwrap() error { return e.Err }

// AdvertiseError describes a connection dropped because its Advertise message
// was missing, malformed or late. The server passes it to Config.Dropped.
type AdvertiseError struct {
	Remote string // the peer's address, often empty for Unix sockets
	Err    error
}

func (e *AdvertiseError) Error() string {
	return fmt.Sprintf("reverse: connection dropped: bad advertise: %v", e.Err)
}

func (e *AdvertiseError) Unwrap() error { return e.Err }
