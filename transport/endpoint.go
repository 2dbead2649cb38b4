package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Network names used in Endpoint.Network.
const (
	NetworkUnix = "unix" // Unix domain socket; Address is a file path
	NetworkPipe = "pipe" // Windows named pipe; Address is \\.\pipe\NAME
)

// DefaultRetryFor is how long Dial keeps retrying a refused or missing
// endpoint when Dialer.RetryFor is zero. A runtime creates its socket a
// moment before it accepts on it.
const DefaultRetryFor = time.Second

// Endpoint is the address of one runtime's diagnostic server.
//
// Endpoint implements the Dial(ctx) method that the diag package expects of
// a dialer; it dials with the default retry and no recording.
type Endpoint struct {
	Network string // NetworkUnix or NetworkPipe
	Address string // socket path or pipe name
	PID     int    // process id as seen from here, or 0 when unknown

	// CheckPeer makes Dial check, once connected, that the process
	// listening on the socket is PID (SO_PEERCRED, Linux), and refuse the
	// connection with an *UntrustedSocketError otherwise. Discovery sets
	// it on the sockets it checked; an endpoint the caller names itself
	// (--diagnostic-port PATH,connect) is not checked.
	CheckPeer bool
}

func (e Endpoint) String() string {
	if e.PID != 0 {
		return fmt.Sprintf("%s:%s (pid %d)", e.Network, e.Address, e.PID)
	}
	return e.Network + ":" + e.Address
}

// Dial opens one connection to the endpoint, retrying a refused or missing
// endpoint for up to DefaultRetryFor (bounded by ctx). The diagnostic
// protocol carries one command per connection: dial again for the next one.
func (e Endpoint) Dial(ctx context.Context) (net.Conn, error) {
	return Dialer{Endpoint: e}.Dial(ctx)
}

// Dialer dials an Endpoint with options. The zero value of every field other
// than Endpoint is the default. A Dialer is a value: it can be copied and
// used from several goroutines at once.
type Dialer struct {
	// Endpoint to dial.
	Endpoint Endpoint

	// Recorder, when non-nil, wraps each connection: a
	// *record.Recorder (package transport/record) saves every byte sent
	// and received, for later replay.
	Recorder ConnWrapper

	// RetryFor bounds how long a refused or missing endpoint is retried.
	// Zero means DefaultRetryFor; a negative value disables retries. The
	// context's deadline still applies.
	RetryFor time.Duration
}

// ConnWrapper wraps a connection to an endpoint as it is opened.
type ConnWrapper interface {
	Wrap(conn net.Conn, ep Endpoint) (net.Conn, error)
}

// Dial opens one connection. Errors are *OpError.
func (d Dialer) Dial(ctx context.Context) (net.Conn, error) {
	retryFor := d.RetryFor
	if retryFor == 0 {
		retryFor = DefaultRetryFor
	}
	network, address := d.Endpoint.Network, d.Endpoint.Address
	conn, err := dialRetry(ctx, func(ctx context.Context) (net.Conn, error) {
		return dialOnce(ctx, network, address)
	}, retryFor)
	if err != nil {
		return nil, &OpError{Op: "dial " + d.Endpoint.Network, Addr: d.Endpoint.Address, Err: err}
	}
	if d.Endpoint.CheckPeer {
		if err := checkPeer(conn, d.Endpoint); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if d.Recorder != nil {
		rc, err := d.Recorder.Wrap(conn, d.Endpoint)
		if err != nil {
			conn.Close()
			return nil, &OpError{Op: "record", Addr: d.Endpoint.Address, Err: err}
		}
		return rc, nil
	}
	return conn, nil
}

// dialRetry calls dial until it succeeds, fails with an error that is not
// retryable, retryFor elapses, or ctx ends. Backoff starts at 10ms and grows
// by half each attempt, capped at 100ms.
//
// When ctx ends, the error wraps both ctx's error and the last attempt's
// cause (say ENOENT), so that a person sees why the endpoint never
// answered. An attempt that fails because ctx's deadline passed counts as
// ctx ending even while ctx.Err() is still nil: net.Dialer checks the
// deadline against the clock itself and can return its timeout before
// ctx's own timer has fired, which happens on a loaded machine.
func dialRetry(ctx context.Context, dial func(context.Context) (net.Conn, error), retryFor time.Duration) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var giveUp time.Time
	if retryFor > 0 {
		giveUp = time.Now().Add(retryFor)
	}
	wait := 10 * time.Millisecond
	var timer *time.Timer
	var lastErr error // the last failure not caused by ctx ending
	ctxEnded := func(err error) error {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		if lastErr == nil {
			if errors.Is(err, cause) {
				return err // ctx ended before any attempt could fail otherwise
			}
			lastErr = err
		}
		return fmt.Errorf("%w (last attempt: %w)", cause, lastErr)
	}
	for {
		conn, err := dial(ctx)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil || deadlinePassed(ctx, err) {
			return nil, ctxEnded(err)
		}
		lastErr = err
		if retryFor < 0 || !retryable(err) || !time.Now().Add(wait).Before(giveUp) {
			return nil, err
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctxEnded(ctx.Err())
		case <-timer.C:
		}
		wait += wait / 2
		wait = min(wait, 100*time.Millisecond)
	}
}

// deadlinePassed reports whether err is a timeout caused by ctx's deadline
// having passed.
func deadlinePassed(ctx context.Context, err error) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl) &&
		(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded))
}
