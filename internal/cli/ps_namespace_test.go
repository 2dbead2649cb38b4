//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
)

// TestRealPSOtherPIDNamespace: a runtime in a new PID namespace, where it is
// pid 2, shares ps's temp dir, next to the socket of an earlier runtime that
// was pid 2 there (stale, and newer, so checked first). ps lists the live
// runtime under its host pid with "2 in its namespace" and never lists host
// pid 2 (kthreadd) against either socket; it warns about the live runtime's
// socket claimed by host pid 2, and not about the stale one.
func TestRealPSOtherPIDNamespace(t *testing.T) {
	dotnettest.NeedPIDNamespace(t)
	tmp, err := os.MkdirTemp("", "psns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	earlier := filepath.Join(tmp, "dotnet-diagnostic-2-12345-socket")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: earlier, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	future := time.Now().Add(time.Hour)
	os.Chtimes(earlier, future, future)

	rt := dotnettest.Find(t)
	// sh stays pid 1 (the command is not its last), so the runtime is pid 2.
	tg := rt.Start(t, rt.Build(t, "Basic"), nil, &dotnettest.Options{TmpDir: tmp,
		Wrapper: []string{"unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", `"$@"; exit $?`, "sh"}})
	var sock string
	for deadline := time.Now().Add(20 * time.Second); sock == ""; {
		m, _ := filepath.Glob(filepath.Join(tmp, "dotnet-diagnostic-2-*-socket"))
		for _, p := range m {
			if p != earlier {
				sock = p
			}
		}
		if sock == "" {
			if time.Now().After(deadline) {
				t.Fatalf("no socket of pid 2 in %s; stderr: %s", tmp, tg.Stderr())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	code, out, errOut := run(t, "ps", "--json")
	if code != 0 {
		t.Fatalf("ps exit %d: %s", code, errOut)
	}
	var entries []psEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("ps --json output does not parse: %v\n%s", err, out)
	}
	var inner *psEntry
	for i, e := range entries {
		if e.PID == 2 {
			t.Errorf("ps lists host pid 2 with %s", e.Socket)
		}
		// Other tests' namespaced runtimes may be listed too (packages
		// run in parallel), with the same socket name when they started
		// in the same clock tick: ours is the one with our socket, seen
		// directly or through /proc/PID/root.
		if e.Socket == sock || strings.HasSuffix(e.Socket, "/root"+sock) {
			inner = &entries[i]
		}
	}
	if inner == nil || inner.NamespacePID != 2 || !strings.Contains(inner.CommandLine, "Basic.dll") {
		t.Fatalf("ps --json = %s; want the runtime with socket %s, pid 2 in its namespace", out, sock)
	}
	if !strings.Contains(errOut, "ignored "+sock+" for process 2: the socket belongs to process "+fmt.Sprint(inner.PID)) {
		t.Errorf("ps does not say why host pid 2 is not listed with %s (the runtime is pid %d):\n%s\n%s", sock, inner.PID, errOut, out)
	}
	if strings.Contains(errOut, earlier) {
		t.Errorf("ps warns about the stale socket %s:\n%s", earlier, errOut)
	}
	first := out
	code, out, _ = run(t, "ps")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d (2 in its namespace)", inner.PID)) {
		t.Errorf("ps table (exit %d) does not show the runtime as pid 2 in its namespace:\n%s\nps --json:\n%s", code, out, first)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "2" {
			t.Errorf("ps table lists host pid 2: %s", line)
		}
	}
}
