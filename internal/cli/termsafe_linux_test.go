//go:build linux

package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostilePSEscaped: a process that put escape sequences in its argv
// is listed by ps with them escaped.
func TestHostilePSEscaped(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	tmp, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	cmd := &exec.Cmd{Path: sleep, Args: []string{"sleep" + hostile, "600"}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	l, err := net.Listen("unix", filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-1-socket", cmd.Process.Pid)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, args := range [][]string{{"ps"}, {"ps", "--json"}} {
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		if !strings.Contains(out, fmt.Sprint(cmd.Process.Pid)) {
			t.Fatalf("%v does not list pid %d:\n%s", args, cmd.Process.Pid, out)
		}
		if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") {
			t.Errorf("%v: raw control characters reach the terminal:\n%q", args, out)
		}
	}
	if _, out, _ := run(t, "ps"); !strings.Contains(out, "sleep"+hostileEscaped+" 600") {
		t.Errorf("ps does not show the escaped command line:\n%s", out)
	}
}
