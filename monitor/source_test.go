//go:build unix

package monitor_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	path := filepath.Join(t.TempDir(), "port.sock")
	srv, err := reverse.Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src := monitor.NewReverseSource(srv)
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

// AcceptRuntimes names a runtime that connects and resumes it when asked
// to; without resume it leaves it paused.
func TestReverseSourceAcceptRuntimes(t *testing.T) {
	for _, resume := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "port.sock")
		srv, err := reverse.Listen(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		src := monitor.NewReverseSource(srv)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go src.AcceptRuntimes(ctx, resume)
		app, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, PID: 4243, Suspended: true})
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		go func() { _ = app.ConnectTo(ctx, path) }()
		// Named first, then resumed: wait for the state that is checked.
		for {
			procs, _ := src.Processes(ctx)
			if len(procs) == 1 && procs[0].Name == "dotnet" && (!resume || !app.Suspended()) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("resume %v: the runtime was not named (and resumed): %+v, suspended %v", resume, procs, app.Suspended())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !resume && !app.Suspended() {
			t.Errorf("resume false: the runtime was resumed")
		}
	}
}
