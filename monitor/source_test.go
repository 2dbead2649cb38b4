//go:build unix

package monitor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// Runtimes that connect to the monitor's diagnostic port are named from
// their ProcessInfo, as local processes are (issue 31: they had no name),
// and one that exits in the middle of a command, without connecting again,
// leaves the list at the next attempt to reach it (it stayed listed, and
// requests to it waited forever).
func TestReverseSourceNamesAndForgets(t *testing.T) {
	path, srv, src := newReverseSource(t)
	src.ReconnectTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	app, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	appCtx, appExit := context.WithCancel(ctx)
	connected := make(chan error, 1)
	go func() { connected <- app.ConnectTo(appCtx, path) }()
	rt, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src.Identify(ctx, rt)
	procs, err := src.Processes(ctx)
	if err != nil || len(procs) != 1 {
		t.Fatalf("processes %+v %v", procs, err)
	}
	if p := procs[0]; p.PID != 4242 || p.Name != "dotnet" || p.CommandLine != "/usr/bin/dotnet app.dll" {
		t.Fatalf("process %+v, want pid 4242 named dotnet with its command line", p)
	}
	// A command takes the runtime's connection; the runtime exits before
	// answering, so it never connects again.
	c, err := rt.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	appExit()
	<-connected
	began := time.Now()
	_, err = procs[0].Dialer.Dial(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not connect again within 300ms") {
		t.Fatalf("dial a runtime that exited: %v", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the dial took %v", d)
	}
	if procs, _ := src.Processes(ctx); len(procs) != 0 {
		t.Errorf("a runtime that exited is still listed: %+v", procs)
	}
}

// newReverseSource listens on a socket in a temporary directory and
// returns its path, the server (closed when the test ends) and a
// ReverseSource of it.
func newReverseSource(t *testing.T) (string, *reverse.Server, *monitor.ReverseSource) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "port.sock")
	srv, err := reverse.Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return path, srv, monitor.NewReverseSource(srv)
}

// AcceptRuntimes names a runtime that connects and resumes it when asked
// to; without resume it leaves it paused.
func TestReverseSourceAcceptRuntimes(t *testing.T) {
	for _, resume := range []bool{true, false} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			path, _, src := newReverseSource(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			app, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, PID: 4243, Suspended: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			accepted := make(chan struct{})
			go func() {
				defer close(accepted)
				src.AcceptRuntimes(ctx, resume)
			}()
			connected := make(chan struct{})
			go func() {
				defer close(connected)
				_ = app.ConnectTo(ctx, path)
			}()
			// Deferred last, run first: end AcceptRuntimes and the
			// runtime's connection before the server and the app close.
			defer func() { cancel(); <-accepted; <-connected }()
			// Named first, then resumed (or not): wait for the state
			// that is checked.
			for {
				procs, _ := src.Processes(ctx)
				if len(procs) == 1 && procs[0].Name == "dotnet" {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("the runtime was not named: %+v", procs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if resume {
				for app.CountCommand(ipc.SetProcess, ipc.CmdResumeRuntime) == 0 || app.Suspended() {
					if ctx.Err() != nil {
						t.Fatalf("the runtime was not resumed: %d ResumeRuntime, suspended %v", app.CountCommand(ipc.SetProcess, ipc.CmdResumeRuntime), app.Suspended())
					}
					time.Sleep(20 * time.Millisecond)
				}
				return
			}
			// Without resume, nothing should come: watch for a while
			// longer than AcceptRuntimes takes to send a ResumeRuntime
			// once the runtime is named (a few milliseconds).
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if n := app.CountCommand(ipc.SetProcess, ipc.CmdResumeRuntime); n != 0 || !app.Suspended() {
					t.Fatalf("resume false: the runtime got %d ResumeRuntime, suspended %v", n, app.Suspended())
				}
			}
		})
	}
}
