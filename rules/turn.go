package rules

import (
	"context"
	"net"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
)

// turnTarget takes the process's turn (Options.Turn) around each command
// an action sends, as the monitor's own requests do: opening a session
// takes it, the session's stream does not hold it.
type turnTarget struct {
	t    Target
	pid  int
	turn func(ctx context.Context, pid int) (func(), error)
}

func (tt turnTarget) do(ctx context.Context, fn func() error) error {
	release, err := tt.turn(ctx, tt.pid)
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

func (tt turnTarget) StartTracing(ctx context.Context, req *ipc.CollectTracingRequest) (id uint64, conn net.Conn, err error) {
	err = tt.do(ctx, func() error {
		var e error
		id, conn, e = tt.t.StartTracing(ctx, req)
		return e
	})
	return id, conn, err
}

func (tt turnTarget) StopTracing(ctx context.Context, sessionID uint64) error {
	return tt.do(ctx, func() error { return tt.t.StopTracing(ctx, sessionID) })
}

func (tt turnTarget) ProcessInfo(ctx context.Context) (info *ipc.ProcessInfo, err error) {
	err = tt.do(ctx, func() error {
		var e error
		info, e = tt.t.ProcessInfo(ctx)
		return e
	})
	return info, err
}

func (tt turnTarget) WriteDump(ctx context.Context, req diag.DumpRequest) error {
	return tt.do(ctx, func() error { return tt.t.WriteDump(ctx, req) })
}

func (tt turnTarget) Environment(ctx context.Context) (env []string, err error) {
	err = tt.do(ctx, func() error {
		var e error
		env, e = tt.t.Environment(ctx)
		return e
	})
	return env, err
}

func (tt turnTarget) SetEnvironmentVariable(ctx context.Context, name, value string) error {
	return tt.do(ctx, func() error { return tt.t.SetEnvironmentVariable(ctx, name, value) })
}

func (tt turnTarget) AttachProfiler(ctx context.Context, req diag.AttachProfilerRequest) error {
	return tt.do(ctx, func() error { return tt.t.AttachProfiler(ctx, req) })
}
