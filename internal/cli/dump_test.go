//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// TestDumpChecksTheDirectory: a dump into a directory that does not exist is
// refused before the runtime is asked (which would answer a bare E_FAIL).
func TestDumpChecksTheDirectory(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8})
	code, _, errOut := run(t, "dump", "--diagnostic-port", port, "-o", "/nonexistent/dir/x")
	if code != exitIO || !strings.Contains(errOut, "the directory /nonexistent/dir does not exist") || len(srv.Dumps()) != 0 {
		t.Fatalf("exit %d, %d dump requests: %s", code, len(srv.Dumps()), errOut)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "dump", "--diagnostic-port", port, "-o", filepath.Join(file, "core"))
	if code != exitIO || !strings.Contains(errOut, "is not a directory") {
		t.Fatalf("file as directory: exit %d %s", code, errOut)
	}
}

// TestDumpDirWritableByTarget: the directory must be writable by the
// target's user, read from /proc/PID/status.
func TestDumpDirWritableByTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	owner, _, _ := fileOwnerOf(t, dir)
	other := owner + 1000
	proc := fakeProc(t, 77, map[string]string{"status": "Name:\tapp\nUid:\t" + itoa(other) + "\t" + itoa(other) + "\t" + itoa(other) + "\t" + itoa(other) +
		"\nGid:\t" + itoa(other) + "\t" + itoa(other) + "\t" + itoa(other) + "\t" + itoa(other) + "\nGroups:\t" + itoa(other) + "\n"})
	p := locateDump(77, filepath.Join(dir, "core"), proc)
	err := checkDumpDir(77, p, proc)
	if err == nil || !strings.Contains(err.Error(), "not writable by the target's user (uid "+itoa(other)+")") {
		t.Fatalf("0755 directory of another user: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := checkDumpDir(77, p, proc); err != nil {
		t.Fatalf("0777 directory: %v", err)
	}
	mine := fakeProc(t, 78, map[string]string{"status": "Uid:\t" + itoa(owner) + "\t" + itoa(owner) + "\t0\t0\nGid:\t0\t0\t0\t0\n"})
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := checkDumpDir(78, locateDump(78, filepath.Join(dir, "core"), mine), mine); err != nil {
		t.Fatalf("the owner's 0700 directory: %v", err)
	}
}

// TestDumpTimeout: --timeout bounds the wait, and the error says how to wait
// longer.
func TestDumpTimeout(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Fault: func(set, id uint8) ipctest.Fault {
		if set == ipc.SetDump {
			return ipctest.FaultNeverAnswer
		}
		return ipctest.FaultNone
	}})
	start := time.Now()
	code, _, errOut := run(t, "dump", "--diagnostic-port", port, "-o", filepath.Join(t.TempDir(), "core"), "--timeout", "300ms")
	if code != exitRuntime || !strings.Contains(errOut, "raise --timeout") {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("gave up after %v with --timeout 300ms", d)
	}
	if code, _, errOut := run(t, "dump", "--diagnostic-port", port, "--timeout", "-1s"); code != exitUsage {
		t.Fatalf("negative timeout: exit %d %s", code, errOut)
	}
}

// TestDumpFailureExplained: the runtime's E_FAIL for a dump is explained
// as a dump failure, with no profiler advice.
func TestDumpFailureExplained(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET6, DumpHRESULT: ipc.HRFail})
	code, _, errOut := run(t, "dump", "--diagnostic-port", port, "-o", filepath.Join(t.TempDir(), "core"))
	if code != exitRuntime || !strings.Contains(errOut, "could not write the dump") || strings.Contains(errOut, "profiler") {
		t.Fatalf("exit %d %s", code, errOut)
	}
}

// A runtime that says it wrote the dump where clrdiag sees no file (another
// mount or PID namespace) is a failure that says where the runtime wrote
// it and why it is not visible, unless --path-in-target says the path is
// the target's.
func TestDumpNotVisible(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8}) // answers OK, writes nothing
	out := filepath.Join(t.TempDir(), "core")
	code, stdout, errOut := run(t, "dump", "--diagnostic-port", port, "-o", out)
	checkClass(t, code, exitIO, errOut)
	for _, want := range []string{"wrote the dump at " + out, "not visible from here", "--path-in-target"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(stdout, "Dump written") {
		t.Errorf("success claimed: %s", stdout)
	}
	code, stdout, errOut = run(t, "dump", "--diagnostic-port", port, "-o", out, "--path-in-target")
	if code != 0 || !strings.Contains(stdout, "in its own file system") {
		t.Errorf("--path-in-target: exit %d\n%s%s", code, stdout, errOut)
	}
}

// -o DIR (an existing directory) writes the dump into it with the default
// name, as the dotnet tools do.
func TestDumpIntoDirectory(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, DumpContent: []byte("core")})
	dir := t.TempDir()
	code, stdout, errOut := run(t, "dump", "--diagnostic-port", port, "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	d := srv.Dumps()
	if len(d) != 1 || filepath.Dir(d[0].Path) != dir || !strings.HasPrefix(filepath.Base(d[0].Path), "core_") {
		t.Fatalf("dump requested at %+v, want %s/core_*", d, dir)
	}
	if st, err := os.Stat(d[0].Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("dump file: %v %v", st, err)
	}
}
