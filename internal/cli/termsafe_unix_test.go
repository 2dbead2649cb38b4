//go:build unix

package cli

import (
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// TestHostileProcessTextEscaped: a target's command line and environment
// reach the terminal escaped.
func TestHostileProcessTextEscaped(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{ProcessInfo: ipc.ProcessInfo{CommandLine: "dotnet app.dll" + hostile},
		Environment: []string{"EVIL=" + hostile, "MULTI=a\nFAKE=forged"}})
	for _, args := range [][]string{{"info"}, {"info", "--json"}, {"env"}, {"env", "--json"}} {
		code, out, errOut := run(t, append(args, "--diagnostic-port", port)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") {
			t.Errorf("%v: raw control characters reach the terminal:\n%q", args, out)
		}
		if args[0] == "env" && strings.Contains(out, "\nFAKE=forged") {
			t.Errorf("%v: a newline in a value forges a variable line:\n%s", args, out)
		}
	}
}
