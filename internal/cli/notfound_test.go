package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/transport"
)

// fakeProc writes a /proc/PID tree with the given files.
func fakeProc(t *testing.T, pid int, files map[string]string) procFS {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procFS{root: root}
}

func TestExplainNotFound(t *testing.T) {
	const coreclr = "7f00-7f10 r-xp 0 08:01 1 /usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.0/libcoreclr.so\n"
	nf := &transport.NotFoundError{PID: 42, Exists: true, Checked: []string{"/tmp/dotnet-diagnostic-42-*-socket"}}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"not .NET", map[string]string{"comm": "nginx\n", "maps": "5600-5700 r-xp 0 08:01 1 /usr/sbin/nginx\n"}, "process 42 (nginx) is not a .NET process"},
		{"unreadable map", map[string]string{"comm": "app\n", "maps": ""}, "memory map is not readable: run clrdiag as the process's user or as root"},
		{"diagnostics off", map[string]string{"comm": "app\n", "maps": coreclr, "environ": "A=1\x00DOTNET_EnableDiagnostics=0\x00"}, "DOTNET_EnableDiagnostics=0"},
		{"no socket", map[string]string{"comm": "app\n", "maps": coreclr, "environ": "A=1\x00"}, "is a .NET process but publishes no diagnostic endpoint (checked /tmp/dotnet-diagnostic-42-*-socket)"},
	} {
		err := explainNotFound(nf, nil, fakeProc(t, 42, tc.files))
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != exitNotFound || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want exitNotFound and %q", tc.name, err, tc.want)
		}
		if len(err.Error()) > 300 {
			t.Errorf("%s: %d-character message, want one short cause: %s", tc.name, len(err.Error()), err)
		}
	}
	gone := explainNotFound(&transport.NotFoundError{PID: 43}, nil, fakeProc(t, 42, nil))
	if !strings.Contains(gone.Error(), "process 43 does not exist") {
		t.Errorf("missing process: %v", gone)
	}
}

func TestNameNotFound(t *testing.T) {
	procs := []transport.Process{
		{PID: 10, Name: "dotnet", CommandLine: "dotnet /app/target.dll --port 1"},
		{PID: 11, Name: "dotnet", CommandLine: "dotnet /app/other.dll"},
		{PID: 12, Name: "api", CommandLine: "/app/api"},
	}
	err := explainNotFound(&transport.NotFoundError{Name: "target"}, procs, hostProc)
	if !strings.Contains(err.Error(), "pid 10 (dotnet /app/target.dll --port 1) runs it") || !strings.Contains(err.Error(), "named dotnet") {
		t.Errorf("-n target: %v", err)
	}
	err = explainNotFound(&transport.NotFoundError{Name: "nosuch"}, procs, hostProc)
	if !strings.Contains(err.Error(), "the .NET processes are: api (12), dotnet (10, 11)") || !strings.Contains(err.Error(), "'dotnet app.dll' are named dotnet") {
		t.Errorf("-n nosuch: %v", err)
	}
	if err := nameNotFound("x", nil); !strings.Contains(err.Error(), "sees no .NET process at all") {
		t.Errorf("no processes: %v", err)
	}
}
