//go:build linux

package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGCDumpStopsOnSignal: the snapshot commands that read a file stop on
// SIGINT and SIGTERM with exit 130, here while they wait for standard
// input that never ends (the start of a .gcdump, then nothing).
func TestGCDumpStopsOnSignal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.folded")
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"gcdump", "paths", "-", "--type", "App.Item"}, syscall.SIGINT},
		{[]string{"gcdump", "report", "-"}, syscall.SIGTERM},
		{[]string{"gcdump", "convert", "-", "--format", "folded", "-o", out}, syscall.SIGINT},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			a, _ := json.Marshal(tc.args)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "CLRDIAG_TEST_MAIN_ARGS="+string(a))
			pr, stdin, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			cmd.Stdin = pr
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			pr.Close()
			if _, err := stdin.Write([]byte("\x14\x00\x00\x00!FastSerialization.1")); err != nil {
				t.Fatal(err)
			}
			// Once clrdiag has read it, it is in the command (and handles
			// signals).
			deadline := time.Now().Add(30 * time.Second)
			for {
				n, err := pipeBuffered(stdin)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("clrdiag never read its standard input")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
					t.Fatalf("after %v: %v, stderr %q; want exit %d", tc.sig, err, stderr.String(), exitInterrupted)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 30s after %v; stderr %q", tc.sig, stderr.String())
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an interrupted convert left %s: %v", out, err)
			}
		})
	}
}
