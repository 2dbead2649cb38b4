//go:build linux

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
)

// A runtime that does not answer within --duration (a process stopped
// with SIGSTOP, here a fake that never answers): counters collect and
// monitor used to exit 0 with no file and no message. Now: exit 4, a
// message saying no session opened, no file.
func TestCountersNoAnswerWithinDuration(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Fault: faultAll(ipctest.FaultNeverAnswer)})
	out := filepath.Join(t.TempDir(), "c.csv")
	for _, args := range [][]string{
		{"counters", "collect", "--diagnostic-port", port, "--duration", "2s", "-o", out},
		{"counters", "monitor", "--diagnostic-port", port, "--duration", "2s"},
	} {
		t.Run(args[1], func(t *testing.T) {
			begin := time.Now()
			code, _, errOut := run(t, args...)
			checkClass(t, code, exitRuntime, errOut)
			if !strings.Contains(errOut, "no answer from the runtime within --duration 2s") {
				t.Errorf("the message does not say why:\n%s", errOut)
			}
			if d := time.Since(begin); d > 15*time.Second {
				t.Errorf("took %v", d)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a file was left")
			}
		})
	}
}

// fullDisk returns a directory on a full file system (a 1 MB tmpfs, filled),
// or "" when none can be mounted here.
func fullDisk(t *testing.T) string {
	t.Helper()
	dir := smallDisk(t)
	if dir == "" {
		return ""
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{1}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	return dir
}

// A full disk: counters collect used to leave a 0-byte file and say
// "write X: write X: no space left on device". Now: exit 6, the path
// named once, and no empty file left (it says it was removed).
func TestCountersCollectDiskFull(t *testing.T) {
	port, _ := countersRuntime(t)
	dir := fullDisk(t)
	out := filepath.Join(dir, "c.csv")
	if dir == "" {
		t.Log("no tmpfs here (not root?): writing to /dev/full instead")
		out = "/dev/full"
	}
	args := []string{"counters", "collect", "--diagnostic-port", port, "--counters", "Shop,System.Runtime[cpu-usage]", "--duration", "3s", "-o", out}
	if dir == "" {
		args = append(args, "--force")
	}
	code, _, errOut := run(t, args...)
	checkClass(t, code, exitIO, errOut)
	if !strings.Contains(errOut, "no space left on device") {
		t.Errorf("the cause is not named:\n%s", errOut)
	}
	last := strings.TrimSpace(errOut)[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]
	if strings.Count(last, out) != 1 {
		t.Errorf("the path is not named exactly once:\n%s", last)
	}
	if dir != "" {
		if _, err := os.Stat(out); err == nil {
			t.Errorf("the empty file was left")
		}
		if !strings.Contains(errOut, "the empty file was removed") {
			t.Errorf("the message does not say what became of the file:\n%s", errOut)
		}
	} else if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is gone or replaced: %v %v", st, err)
	}
}

// -o DIR writes into the directory with the default name, as the dotnet
// tools do (it used to fail: "a directory is in the way").
func TestCountersCollectIntoDirectory(t *testing.T) {
	port, _ := countersRuntime(t)
	dir := t.TempDir()
	code, _, errOut := run(t, "counters", "collect", "--diagnostic-port", port, "--counters", "Shop", "--duration", "1500ms", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "counter.csv")); err != nil {
		t.Errorf("no counter.csv in the directory: %v", err)
	}
}
