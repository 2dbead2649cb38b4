//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
			interruptReading(t, tc.args, []byte("\x14\x00\x00\x00!FastSerialization.1"), tc.sig)
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an interrupted convert left %s: %v", out, err)
			}
		})
	}
}
