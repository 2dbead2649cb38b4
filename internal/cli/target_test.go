//go:build unix

package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipctest"
)

// TestDiagnosticPortConnectsToLiveSocket: --diagnostic-port PATH, where a
// runtime already listens, connects (as dotnet-dump) instead of failing to
// listen; an explicit ,listen keeps listen mode and its error.
func TestDiagnosticPortConnectsToLiveSocket(t *testing.T) {
	srv, _ := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, PID: 4242, DumpContent: []byte("core")})
	code, out, errOut := run(t, "info", "--diagnostic-port", srv.Path, "--json")
	if code != 0 || !strings.Contains(out, `"pid": 4242`) || !strings.Contains(errOut, "is a live socket: connecting") {
		t.Fatalf("info: exit %d\n%s\n%s", code, out, errOut)
	}
	dump := filepath.Join(t.TempDir(), "core")
	if code, _, errOut := run(t, "dump", "--diagnostic-port", srv.Path, "-o", dump); code != 0 || len(srv.Dumps()) != 1 {
		t.Fatalf("dump: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "info", "--diagnostic-port", srv.Path+",listen")
	if code != exitIO || !strings.Contains(errOut, "in use") {
		t.Fatalf("explicit listen on a live socket: exit %d %s", code, errOut)
	}
}
