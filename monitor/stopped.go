package monitor

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/procstate"
	"github.com/clrdiag/clrdiag/transport"
)

// stoppedGuard dials a process only while it is not stopped (SIGSTOP,
// Ctrl-Z, a debugger: T or t in /proc/PID/stat). A stopped runtime answers
// nothing, and on .NET Core 3.1 an EventPipe session that is given up while
// the process is stopped crashes the runtime when the process continues:
// the guard refuses before anything is sent, so no session is ever left
// half-open. It guards every connection (sessions, their stop commands,
// dumps, process info), which also turns a wait of CommandTimeout into an
// immediate answer that says what to do.
type stoppedGuard struct {
	d    diag.Dialer
	pid  int
	proc procstate.FS
}

// Dial implements diag.Dialer.
func (g stoppedGuard) Dial(ctx context.Context) (net.Conn, error) {
	if err := g.proc.Check(g.pid); err != nil {
		return nil, fmt.Errorf("%w; the monitor sends it nothing while it is stopped: continue it (kill -CONT %d) and retry", err, g.pid)
	}
	return g.d.Dial(ctx)
}

// localPID is the pid of p as seen from this machine's /proc, or 0 when p
// is reached some other way (a runtime that connected to a diagnostic port
// may live in another PID namespace, where its pid names another process
// here).
func localPID(p Process) int {
	switch d := p.Dialer.(type) {
	case transport.Endpoint:
		return d.PID
	case *transport.Endpoint:
		return d.PID
	case transport.Dialer:
		return d.Endpoint.PID
	case *transport.Dialer:
		return d.Endpoint.PID
	}
	return 0
}

// dialer is p's dialer, guarded against a stopped process when p's pid is
// one of this machine's.
func dialer(p Process) diag.Dialer {
	if pid := localPID(p); pid > 0 {
		return stoppedGuard{d: p.Dialer, pid: pid}
	}
	return p.Dialer
}

// clientOf is a diagnostic client of p whose commands time out after
// timeout; it refuses at once when p is stopped (stoppedGuard).
func clientOf(p Process, timeout time.Duration) *diag.Client {
	return diag.NewClient(dialer(p), &diag.Config{Timeout: timeout})
}
