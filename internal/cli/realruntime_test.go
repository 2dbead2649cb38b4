//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/transport"
)

func startBasic(t *testing.T) *dotnettest.Target {
	t.Helper()
	rt := dotnettest.Find(t)
	return rt.Start(t, rt.Build(t, "Basic"), nil, nil)
}

func TestRealPSFindsTargetNotDeadOne(t *testing.T) {
	live := startBasic(t)
	dead := startBasic(t)
	deadPID := dead.PID
	// SIGKILL leaves the socket file behind: ps must not list the pid.
	if err := syscall.Kill(deadPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-dead.Done()
	if _, err := os.Stat(dead.Socket); err != nil {
		t.Fatalf("expected the killed target's socket to stay behind: %v", err)
	}
	code, out, errOut := run(t, "ps", "--json")
	if code != 0 {
		t.Fatalf("ps exit %d: %s", code, errOut)
	}
	var entries []psEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("ps --json output does not parse: %v\n%s", err, out)
	}
	var found bool
	for _, e := range entries {
		if e.PID == deadPID {
			t.Errorf("ps lists pid %d, killed with its socket left behind", deadPID)
		}
		if e.PID == live.PID {
			found = true
			if e.Socket != live.Socket || e.Name == "" || !strings.Contains(e.CommandLine, "Basic.dll") {
				t.Errorf("entry for the live target = %+v (socket %s)", e, live.Socket)
			}
		}
	}
	if !found {
		t.Fatalf("ps does not list the live target %d:\n%s", live.PID, out)
	}
	// The plain table too.
	code, out, _ = run(t, "ps")
	if code != 0 || !strings.Contains(out, fmt.Sprint(live.PID)) || !strings.Contains(out, "COMMAND LINE") || !strings.Contains(out, "SOCKET") || !strings.Contains(out, live.Socket) {
		t.Fatalf("ps table (exit %d):\n%s", code, out)
	}
}

func TestRealInfoNeedsNET5(t *testing.T) {
	tg := startBasic(t)
	code, out, errOut := run(t, "info", "-p", fmt.Sprint(tg.PID))
	if code != exitRuntime {
		t.Fatalf("info on 3.1: exit %d, want exitRuntime:\n%s", code, out)
	}
	if !strings.Contains(errOut, "needs .NET 5 or later") {
		t.Errorf("info stderr does not say why:\n%s", errOut)
	}
	for _, want := range []string{fmt.Sprint(tg.PID), "Basic.dll", tg.Socket} {
		if !strings.Contains(out, want) {
			t.Errorf("info stdout lacks %q:\n%s", want, out)
		}
	}
	// --json: the operating system's facts, as the monitor gives them.
	code, out, _ = run(t, "info", "-p", fmt.Sprint(tg.PID), "--json")
	var j infoJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != exitRuntime {
		t.Fatalf("info --json on 3.1: exit %d, %v:\n%s", code, err, out)
	}
	if j.PID != uint64(tg.PID) || j.Source != "os" || j.Name != "dotnet" || !strings.Contains(j.CommandLine, "Basic.dll") || j.DiagnosticSocketPath != tg.Socket {
		t.Errorf("info --json on 3.1 = %+v", j)
	}
}

func TestRealDump(t *testing.T) {
	tg := startBasic(t)
	path := filepath.Join(t.TempDir(), "core.mini")
	code, out, errOut := run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", "mini", "-o", path)
	if code != 0 {
		t.Fatalf("dump exit %d: %s %s", code, out, errOut)
	}
	st, err := os.Lstat(path)
	if err != nil || st.Size() == 0 {
		t.Fatalf("dump file: %v (size %v)", err, st)
	}
	// createdump makes it 0644; a dump holds the process's secrets.
	if st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Errorf("dump mode %v, want a regular file 0600", st.Mode())
	}
	if !strings.Contains(out, path) {
		t.Errorf("dump does not say where the dump went: %s", out)
	}
	// The runtime follows a link planted at the path (it overwrote the
	// link's target before the check): refused, the target untouched.
	link := filepath.Join(t.TempDir(), "core.link")
	victim := plantLink(t, link)
	code, _, errOut = run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", "mini", "-o", link)
	if code != exitIO || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("dump onto a link: exit %d %s", code, errOut)
	}
	checkVictim(t, victim)
	// A directory that does not exist is refused before the runtime is
	// asked (3.1 would answer a bare E_FAIL).
	code, _, errOut = run(t, "dump", "-p", fmt.Sprint(tg.PID), "-o", "/nonexistent/dir/x")
	if code != exitUsage || !strings.Contains(errOut, "/nonexistent/dir does not exist") {
		t.Errorf("dump into a missing directory: exit %d %s", code, errOut)
	}
	// The target keeps running.
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)
}

func TestRealDumpRelativePathMadeAbsolute(t *testing.T) {
	tg := startBasic(t)
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	code, _, errOut := run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", "triage", "-o", "rel.dmp")
	if code != 0 {
		t.Fatalf("dump exit %d: %s", code, errOut)
	}
	if st, err := os.Stat(filepath.Join(dir, "rel.dmp")); err != nil || st.Size() == 0 {
		t.Fatalf("relative dump path not resolved against our directory: %v", err)
	}
}

func TestRealBadMagic(t *testing.T) {
	tg := startBasic(t)
	c := diag.NewClient(transport.Endpoint{Network: "unix", Address: tg.Socket, PID: tg.PID}, nil)
	raw := make([]byte, 20)
	copy(raw, "DOTNET_IPC_V2\x00")
	raw[14] = 20 // size
	raw[16], raw[17] = 0x04, 0x00
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.DoRaw(ctx, raw)
	var se *ipc.ServerError
	if !errors.As(err, &se) || se.HRESULT != 0x80131386 {
		t.Fatalf("bad magic: %v, want UNKNOWN_MAGIC", err)
	}
	if !strings.Contains(err.Error(), "UNKNOWN_MAGIC") {
		t.Errorf("error does not name UNKNOWN_MAGIC: %v", err)
	}
}

func TestRealEnvNeedsNET5(t *testing.T) {
	tg := startBasic(t)
	code, _, errOut := run(t, "env", "-p", fmt.Sprint(tg.PID))
	if code == 0 || !strings.Contains(errOut, ".NET 5") {
		t.Fatalf("env on 3.1: exit %d, %s", code, errOut)
	}
}

func TestRealNameSelection(t *testing.T) {
	tg := startBasic(t)
	// Every dotnet target is named "dotnet": -n must refuse to guess when
	// there are several, and pick the one when it is alone.
	procs, err := transport.FindByName(context.Background(), "dotnet", nil)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "dump", "-n", "dotnet", "--type", "mini", "-o", filepath.Join(t.TempDir(), "n.core"))
	if len(procs) == 1 {
		if code != 0 || procs[0].PID != tg.PID {
			t.Fatalf("dump -n dotnet: exit %d %s %s", code, out, errOut)
		}
	} else if code == 0 || !strings.Contains(errOut, "pick one with -p") {
		t.Fatalf("several dotnet processes: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "dump", "-n", "no-such-process-name")
	if code != exitNotFound || !strings.Contains(errOut, `no .NET process is named "no-such-process-name"`) || !strings.Contains(errOut, fmt.Sprint(tg.PID)) {
		t.Fatalf("unknown name: exit %d %s", code, errOut)
	}
	// The app's own name: a 'dotnet Basic.dll' process is named dotnet.
	code, _, errOut = run(t, "dump", "-n", "Basic")
	if code != exitNotFound || !strings.Contains(errOut, fmt.Sprintf("pid %d (", tg.PID)) || !strings.Contains(errOut, "named dotnet") {
		t.Fatalf("-n Basic: exit %d %s", code, errOut)
	}
}

// TestRealStartupCommandsNeedNewerRuntime: .NET Core 3.1 does not know
// StartupProfiler (it answers BAD_ENCODING) nor ApplyStartupHook; the
// message says which runtime is needed, not to retry.
func TestRealStartupCommandsNeedNewerRuntime(t *testing.T) {
	tg := startBasic(t)
	pid := fmt.Sprint(tg.PID)
	code, _, errOut := run(t, "startup-profiler", "-p", pid, "--profiler", "/opt/prof/libprof.so", "--clsid", "8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C")
	if code != exitRuntime || !strings.Contains(errOut, "startup-profiler needs .NET 6 or later") || strings.Contains(errOut, "retry") {
		t.Errorf("startup-profiler on 3.1: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "startup-hook", "-p", pid, "/opt/hooks/Hook.dll")
	if code != exitRuntime || !strings.Contains(errOut, "startup-hook needs .NET 8 or later") {
		t.Errorf("startup-hook on 3.1: exit %d %s", code, errOut)
	}
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)
}

// TestRealCompletePID: -p and -n complete from the live .NET processes.
func TestRealCompletePID(t *testing.T) {
	tg := startBasic(t)
	_, out, _ := run(t, "__complete", "stack", "-p", "")
	if !strings.Contains(out, fmt.Sprintf("%d\tdotnet ", tg.PID)) || !strings.Contains(out, "Basic.dll") {
		t.Errorf("-p completions lack pid %d:\n%s", tg.PID, out)
	}
	_, out, _ = run(t, "__complete", "dump", "-n", "")
	if !strings.Contains(out, "dotnet\tpid ") || !strings.Contains(out, fmt.Sprint(tg.PID)) {
		t.Errorf("-n completions lack dotnet (pid %d):\n%s", tg.PID, out)
	}
}

// TestRealRecordReplay: sessions with the real 3.1 runtime (a stack
// snapshot, counters, a trace) recorded and replayed give the same output
// with the process gone.
func TestRealRecordReplay(t *testing.T) {
	tg := startBasic(t)
	pid := fmt.Sprint(tg.PID)
	type rc struct {
		name string
		args []string
		file string // output file compared instead of stdout
	}
	for _, c := range []rc{
		{"stack", []string{"stack"}, ""},
		{"counters collect", []string{"counters", "collect", "--duration", "2s", "--refresh-interval", "1", "-o", "OUT"}, "OUT"},
		{"trace collect", []string{"trace", "collect", "--profile", "gc-collect", "--duration", "1s", "-o", "OUT"}, "OUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "rec")
			with := func(suffix string) []string {
				var out []string
				for _, a := range c.args {
					if a == "OUT" {
						a = filepath.Join(dir, "out."+suffix)
					}
					out = append(out, a)
				}
				return out
			}
			code, live, errOut := run(t, append(append([]string{"--record-ipc", rec}, with("live")...), "-p", pid)...)
			if code != 0 {
				t.Fatalf("recorded: exit %d %s", code, errOut)
			}
			code, replayed, errOut := run(t, append([]string{"--replay-ipc", rec}, with("replay")...)...)
			if code != 0 {
				t.Fatalf("replayed: exit %d %s", code, errOut)
			}
			if c.file == "" {
				if live != replayed || live == "" {
					t.Errorf("stdout differs:\n%s\nvs\n%s", live, replayed)
				}
				return
			}
			a, err1 := os.ReadFile(filepath.Join(dir, "out.live"))
			b, err2 := os.ReadFile(filepath.Join(dir, "out.replay"))
			if err1 != nil || err2 != nil || len(a) == 0 || string(a) != string(b) {
				t.Errorf("outputs differ: %v %v, %d and %d bytes", err1, err2, len(a), len(b))
			}
		})
	}
}
