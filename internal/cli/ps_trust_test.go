//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPSRefusesPlantedSocket: a socket another user made for a root process
// is not listed by ps (which says why on stderr) and not used by -p, unless
// --trust-socket is given.
func TestPSRefusesPlantedSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a socket owned by another user")
	}
	tmp, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	victim := exec.Command("sleep", "600")
	if err := victim.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	path := filepath.Join(tmp, fmt.Sprintf("dotnet-diagnostic-%d-1-socket", victim.Process.Pid))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}

	listed := func(args ...string) (bool, string) {
		code, out, errOut := run(t, append(args, "ps", "--json")...)
		if code != 0 {
			t.Fatalf("ps exit %d: %s", code, errOut)
		}
		var entries []psEntry
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.PID == victim.Process.Pid {
				return true, errOut
			}
		}
		return false, errOut
	}
	if ok, errOut := listed(); ok || !strings.Contains(errOut, "ignored "+path) || !strings.Contains(errOut, "owned by uid 65534, but the process runs as uid 0") {
		t.Errorf("ps lists the planted socket (%v) or does not say why:\n%s", ok, errOut)
	}
	if ok, _ := listed("--trust-socket"); !ok {
		t.Errorf("ps --trust-socket does not list pid %d", victim.Process.Pid)
	}
	code, _, errOut := run(t, "info", "-p", fmt.Sprint(victim.Process.Pid))
	if code != exitNotFound || !strings.Contains(errOut, "refusing diagnostic socket "+path) || !strings.Contains(errOut, "--trust-socket") {
		t.Errorf("info -p on a planted socket: exit %d\n%s", code, errOut)
	}
}
