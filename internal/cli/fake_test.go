//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

func fakeRuntime(t *testing.T, cfg ipctest.Config) (*ipctest.Server, string) {
	t.Helper()
	srv, err := ipctest.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, srv.Path + ",connect"
}

func TestFakeInfoVersions(t *testing.T) {
	for _, tc := range []struct {
		rt      ipctest.Runtime
		version int
		rid     bool
	}{{ipctest.NET5, 1, false}, {ipctest.NET6, 2, false}, {ipctest.NET8, 3, true}} {
		_, port := fakeRuntime(t, ipctest.Config{Runtime: tc.rt, PID: 4242})
		code, out, errOut := run(t, "info", "--diagnostic-port", port, "--json")
		if code != 0 {
			t.Fatalf("runtime %v: exit %d %s", tc.rt, code, errOut)
		}
		var j infoJSON
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("info --json: %v\n%s", err, out)
		}
		if j.PID != 4242 || j.ProcessInfoVersion != tc.version || (j.RuntimeIdentifier != "") != tc.rid || j.OS == "" || j.Arch == "" || j.CommandLine == "" {
			t.Errorf("runtime %v: %+v", tc.rt, j)
		}
		if tc.version >= 2 && j.ClrProductVersion == "" {
			t.Errorf("runtime %v: no product version: %+v", tc.rt, j)
		}
	}
	// Plain output names the fields.
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8})
	code, out, _ := run(t, "info", "--diagnostic-port", port)
	if code != 0 || !strings.Contains(out, "Runtime version:") || !strings.Contains(out, "ProcessInfo3") {
		t.Fatalf("info: %d\n%s", code, out)
	}
}

func TestFakeEnv(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Environment: []string{"A=1", "PATH=/bin", "EMPTY="}})
	code, out, errOut := run(t, "env", "--diagnostic-port", port, "--json")
	if code != 0 {
		t.Fatalf("env: %d %s", code, errOut)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["A"] != "1" || m["PATH"] != "/bin" {
		t.Fatalf("env --json = %v (%v)\n%s", m, err, out)
	}
	if v, ok := m["EMPTY"]; !ok || v != "" {
		t.Fatalf("empty value lost: %v", m)
	}
	code, out, errOut = run(t, "env", "set", "--diagnostic-port", port, "NEW=x=y")
	if code != 0 {
		t.Fatalf("env set: %d %s %s", code, out, errOut)
	}
	found := false
	for _, kv := range srv.Environment() {
		found = found || kv == "NEW=x=y"
	}
	if !found {
		t.Fatalf("variable not set in the target: %v", srv.Environment())
	}
	code, out, _ = run(t, "env", "--diagnostic-port", port)
	if code != 0 || !strings.Contains(out, "NEW=x=y\n") {
		t.Fatalf("env after set: %s", out)
	}
	if code, _, errOut = run(t, "env", "set", "--diagnostic-port", port, "novalue"); code != exitUsage || !strings.Contains(errOut, "NAME=VALUE") {
		t.Fatalf("env set without '=': %d %s", code, errOut)
	}
	// SetEnvironmentVariable needs .NET 6.
	_, port5 := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET5})
	if code, _, errOut = run(t, "env", "set", "--diagnostic-port", port5, "A=1"); code != exitRuntime || !strings.Contains(errOut, ".NET 6") {
		t.Fatalf("env set on .NET 5: %d %s", code, errOut)
	}
}

func TestFakeResumeAndStartupCommands(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Suspended: true})
	lib := "/opt/prof/libprof.so"
	code, out, errOut := run(t, "startup-profiler", "--diagnostic-port", port, "--profiler", lib, "--clsid", "{8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C}")
	if code != 0 || !strings.Contains(out, "clrdiag resume") {
		t.Fatalf("startup-profiler while suspended: %d %s %s", code, out, errOut)
	}
	code, _, errOut = run(t, "startup-hook", "--diagnostic-port", port, "/opt/hooks/Hook.dll")
	if code != 0 {
		t.Fatalf("startup-hook: %d %s", code, errOut)
	}
	if hooks := srv.StartupHooks(); len(hooks) != 1 || hooks[0] != "/opt/hooks/Hook.dll" {
		t.Fatalf("hooks = %v", hooks)
	}
	if code, _, errOut = run(t, "resume", "--diagnostic-port", port); code != 0 || srv.Suspended() {
		t.Fatalf("resume: %d %s, suspended=%v", code, errOut, srv.Suspended())
	}
	// Once running, both refuse with INVALIDARG and the message says why.
	code, _, errOut = run(t, "startup-profiler", "--diagnostic-port", port, "--profiler", lib, "--clsid", "8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C")
	if code == 0 || !strings.Contains(errOut, "only works while the runtime is paused at startup") {
		t.Fatalf("startup-profiler after resume: %d %s", code, errOut)
	}
	code, _, errOut = run(t, "startup-hook", "--diagnostic-port", port, "/opt/hooks/Hook.dll")
	if code == 0 || !strings.Contains(errOut, "only works while the runtime is paused at startup") {
		t.Fatalf("startup-hook after resume: %d %s", code, errOut)
	}
	// Relative paths are refused before anything is sent.
	n := len(srv.Requests())
	if code, _, errOut = run(t, "startup-hook", "--diagnostic-port", port, "Hook.dll"); code != exitUsage || !strings.Contains(errOut, "absolute path") {
		t.Fatalf("relative hook: %d %s", code, errOut)
	}
	if code, _, _ = run(t, "startup-profiler", "--diagnostic-port", port, "--profiler", "lib.so", "--clsid", "x"); code != exitUsage {
		t.Fatalf("relative profiler: %d", code)
	}
	if len(srv.Requests()) != n {
		t.Fatal("a request was sent for a relative path")
	}
}

func TestFakePerfMap(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8})
	if code, _, errOut := run(t, "perfmap", "enable", "--diagnostic-port", port, "--type", "jitdump"); code != 0 || srv.PerfMap() != ipc.PerfMapJitDump {
		t.Fatalf("perfmap enable: %d %s %v", code, errOut, srv.PerfMap())
	}
	if code, _, errOut := run(t, "perfmap", "disable", "--diagnostic-port", port); code != 0 || srv.PerfMap() != ipc.PerfMapDisabled {
		t.Fatalf("perfmap disable: %d %s %v", code, errOut, srv.PerfMap())
	}
	if code, _, errOut := run(t, "perfmap", "enable", "--diagnostic-port", port, "--type", "bogus"); code != exitUsage || !strings.Contains(errOut, "perfmap or jitdump") {
		t.Fatalf("bad type: %d %s", code, errOut)
	}
	_, port6 := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET6})
	if code, _, errOut := run(t, "perfmap", "enable", "--diagnostic-port", port6); code != exitRuntime || !strings.Contains(errOut, "needs .NET 8 or later") {
		t.Fatalf("perfmap on .NET 6: %d %s", code, errOut)
	}
}

func TestFakeDump(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, DumpContent: []byte("core")})
	out := filepath.Join(t.TempDir(), "core")
	code, stdout, errOut := run(t, "dump", "--diagnostic-port", port, "--type", "heap", "--crashreport", "-o", out)
	if code != 0 {
		t.Fatalf("dump: %d %s %s", code, stdout, errOut)
	}
	d := srv.Dumps()
	if len(d) != 1 || d[0].Path != out || d[0].Type != ipc.DumpWithHeap {
		t.Fatalf("dump requests = %+v", d)
	}
	// A failing createdump: the runtime's own message reaches the user.
	_, port2 := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, DumpHRESULT: 0x80004005, DumpMessage: "Problem launching createdump (may not have execute permissions)"})
	code, _, errOut = run(t, "dump", "--diagnostic-port", port2, "-o", out+"2")
	if code != exitRuntime || !strings.Contains(errOut, "may not have execute permissions") {
		t.Fatalf("failing dump: %d %s", code, errOut)
	}
	if code, _, errOut = run(t, "dump", "--diagnostic-port", port, "--type", "huge"); code != exitUsage || !strings.Contains(errOut, "full, heap, mini or triage") {
		t.Fatalf("bad type: %d %s", code, errOut)
	}
}

func TestFakeRecordReplay(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, PID: 777})
	dir := filepath.Join(t.TempDir(), "rec")
	code, live, errOut := run(t, "--record-ipc", dir, "info", "--diagnostic-port", port, "--json")
	if code != 0 {
		t.Fatalf("recorded info: %d %s", code, errOut)
	}
	files, _ := os.ReadDir(dir)
	if len(files) == 0 {
		t.Fatal("nothing recorded")
	}
	srv.Close() // the process is gone; the recording answers
	code, replayed, errOut := run(t, "--replay-ipc", dir, "info", "--json")
	if code != 0 {
		t.Fatalf("replayed info: %d %s", code, errOut)
	}
	var a, b infoJSON
	if err := json.Unmarshal([]byte(live), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(replayed), &b); err != nil {
		t.Fatal(err)
	}
	a.DiagnosticSocketPath = "" // a replay has no socket
	if a != b || b.PID != 777 {
		t.Fatalf("replay differs:\n%+v\nvs\n%+v", a, b)
	}
}

func TestSelectionErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"info"}, "give -p PID, -n NAME or --diagnostic-port"},
		{[]string{"info", "-p", "1", "-n", "x"}, "only one of"},
		{[]string{"info", "-p", "-5"}, "positive"},
		{[]string{"info", "--diagnostic-port", "/nonexistent-dir/x.sock"}, "listen on /nonexistent-dir/x.sock"},
		{[]string{"--record-ipc", "a", "--replay-ipc", "b", "info"}, "cannot be used together"},
	} {
		code, _, errOut := run(t, tc.args...)
		want := exitUsage
		if strings.HasPrefix(tc.want, "listen on") {
			want = exitIO // a socket that cannot be made
		}
		if code != want || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exitUsage and %q", tc.args, code, errOut, tc.want)
		}
	}
}
