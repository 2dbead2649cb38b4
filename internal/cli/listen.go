package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// resumeOnCloseTimeout bounds the ResumeRuntime that Close sends to a runtime
// still waiting at startup.
const resumeOnCloseTimeout = 3 * time.Second

// dialerFunc adapts a function to diag.Dialer.
type dialerFunc func(ctx context.Context) (net.Conn, error)

func (d dialerFunc) Dial(ctx context.Context) (net.Conn, error) { return d(ctx) }

// stderr is where waiting messages go.
func (f *targetFlags) stderr() io.Writer {
	if f.cmd != nil {
		return f.cmd.ErrOrStderr()
	}
	return io.Discard
}

// reverseAddress makes a listen address absolute, so that the printed
// DOTNET_DiagnosticPorts value works from any directory. Windows pipe names
// stay as they are.
func reverseAddress(addr string) (string, error) {
	if runtime.GOOS == "windows" && (strings.HasPrefix(addr, `\\.\pipe\`) || !strings.ContainsAny(addr, `\/:`)) {
		return addr, nil
	}
	return filepath.Abs(addr)
}

// listenTarget serves a listen-mode --diagnostic-port: it waits for the first
// runtime to connect and returns a target whose commands go through the
// runtime's reconnections.
func (f *targetFlags) listenTarget(ctx context.Context, dp transport.DiagnosticPort) (*target, error) {
	addr, err := reverseAddress(dp.Address)
	if err != nil {
		return nil, usageErrorf("--diagnostic-port %s: %w", dp.Address, err)
	}
	srv, err := reverse.Listen(addr, nil)
	if err != nil {
		return nil, ioError(err) // a socket that cannot be made, as a port in use
	}
	fmt.Fprintf(f.stderr(), "Waiting for a runtime to connect. Start the application with DOTNET_DiagnosticPorts=%s\n", addr)
	rt, err := srv.Accept(ctx)
	if err != nil {
		srv.Close()
		return nil, err
	}
	t := f.reverseTarget(srv, rt, !dp.NoSuspend)
	return t, nil
}

// reverseTarget is a target reached through a reverse server. Started sends
// ResumeRuntime once (unless the port does not suspend); Close sends it too if
// Started was never called, so a runtime is not left paused, then closes the
// server, which removes its socket.
func (f *targetFlags) reverseTarget(srv *reverse.Server, rt *reverse.Runtime, suspends bool) *target {
	ep := transport.Endpoint{Network: transport.NetworkUnix, Address: srv.Addr(), PID: rt.PID}
	if runtime.GOOS == "windows" && !strings.ContainsAny(srv.Addr(), `/:`) {
		ep.Network = transport.NetworkPipe
	}
	var d diag.Dialer = rt
	if f.g != nil && f.g.recorder != nil {
		rec := f.g.recorder
		d = dialerFunc(func(ctx context.Context) (net.Conn, error) {
			c, err := rt.Dial(ctx)
			if err != nil {
				return nil, err
			}
			return rec.Wrap(c, ep)
		})
	}
	client := diag.NewClient(d, f.clientConfig())
	var (
		mu      sync.Mutex
		resumed = !suspends
		closed  bool
	)
	resume := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if resumed {
			return nil
		}
		resumed = true
		err := client.ResumeRuntime(ctx)
		if errors.Is(err, ipc.ErrUnknownCommand) {
			return nil // a runtime without ResumeRuntime does not suspend
		}
		return err
	}
	return &target{
		PID:      rt.PID,
		Endpoint: ep,
		Client:   client,
		Started:  resume,
		Close: func() error {
			mu.Lock()
			done := closed
			closed = true
			mu.Unlock()
			if done {
				return nil
			}
			var err error
			if !rt.Gone() {
				ctx, cancel := context.WithTimeout(context.Background(), resumeOnCloseTimeout)
				err = resume(ctx)
				cancel()
			}
			if errors.Is(err, reverse.ErrRuntimeGone) {
				err = nil
			}
			return errors.Join(err, srv.Close())
		},
	}
}
