//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// connectingRuntime starts a fake runtime that connects to path like one
// started with DOTNET_DiagnosticPorts=path,connect.
func connectingRuntime(t *testing.T, cfg ipctest.Config, path string) *ipctest.Server {
	f, _ := ipctest.StartConnecting(t, cfg, path)
	return f
}

func TestListenInfo(t *testing.T) {
	path := ipctest.SocketPath(t)
	connectingRuntime(t, ipctest.Config{Runtime: ipctest.NET8, PID: 4343}, path)
	code, out, errOut := run(t, "info", "--diagnostic-port", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "Waiting for a runtime to connect. Start the application with DOTNET_DiagnosticPorts=" + path + "\n"
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr %q, want %q", errOut, want)
	}
	var j infoJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.PID != 4343 || j.DiagnosticSocketPath != path {
		t.Fatalf("info: %+v, %v\n%s", j, err, out)
	}
}

func TestListenTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name    string
		port    string // suffix
		started bool
		resumes int
	}{
		{"started resumes", "", true, 1},
		{"close resumes a runtime never started", "", false, 1},
		{"nosuspend never resumes", ",nosuspend", true, 0},
		{"explicit listen and suspend", ",listen,suspend", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ipctest.SocketPath(t)
			f := connectingRuntime(t, ipctest.Config{PID: 77, Suspended: true}, path)
			tf := &targetFlags{port: path + tc.port}
			tg, err := tf.resolve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tg.PID != 77 {
				t.Fatalf("pid %d", tg.PID)
			}
			for range 2 {
				if _, err := tg.Client.ProcessInfo(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if !f.Suspended() {
				t.Fatal("resumed before Started")
			}
			if tc.started {
				if err := tg.started(ctx); err != nil {
					t.Fatal(err)
				}
				if err := tg.started(ctx); err != nil { // idempotent
					t.Fatal(err)
				}
			}
			if err := tg.close(); err != nil {
				t.Fatal(err)
			}
			if got := f.CountCommand(ipc.SetProcess, ipc.CmdResumeRuntime); got != tc.resumes {
				t.Fatalf("%d ResumeRuntime requests, want %d", got, tc.resumes)
			}
			if f.Suspended() != (tc.resumes == 0) {
				t.Fatalf("suspended = %v after close", f.Suspended())
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("socket not removed: %v", err)
			}
			if err := tg.close(); err != nil {
				t.Fatalf("second close: %v", err)
			}
		})
	}
}

func TestListenCancelled(t *testing.T) {
	path := ipctest.SocketPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	tf := &targetFlags{port: path}
	if _, err := tf.resolve(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("resolve with no runtime: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestReverseAddressAbsolute(t *testing.T) {
	got, err := reverseAddress("rel.sock")
	if err != nil || !filepath.IsAbs(got) || filepath.Base(got) != "rel.sock" {
		t.Fatalf("reverseAddress = %q, %v", got, err)
	}
}
