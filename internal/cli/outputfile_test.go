//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/weighted"
)

// plantLink puts a symbolic link to a file holding "precious" at path and
// returns the file.
func plantLink(t *testing.T, path string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return victim
}

func checkVictim(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the link's target was written: %q, %v", b, err)
	}
}

func sessionsStarted(srv *ipctest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if _, ok := r.Request.(*ipc.CollectTracingRequest); ok {
			n++
		}
	}
	return n
}

// TestCollectOutputRule: trace collect refuses an existing file or a link
// at -o before it starts a session, replaces it with --force (removing the
// link, not writing through it), and creates the trace 0600.
func TestCollectOutputRule(t *testing.T) {
	srv, port := collectingServer(t, ipctest.NET8, nil, wellBehaved)
	dir := t.TempDir()
	out := filepath.Join(dir, "x.nettrace")
	victim := plantLink(t, out)
	collect := func(extra ...string) (int, string) {
		code, _, errOut := run(t, append([]string{"trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--duration", "100ms", "-o", out}, extra...)...)
		return code, errOut
	}
	code, errOut := collect()
	if code != exitIO || !strings.Contains(errOut, "symbolic link") || !strings.Contains(errOut, "--force") {
		t.Errorf("collect onto a link: exit %d\n%s", code, errOut)
	}
	if n := sessionsStarted(srv); n != 0 {
		t.Errorf("%d sessions started for an output that cannot be written", n)
	}
	checkVictim(t, victim)
	if code, errOut = collect("--force"); code != 0 {
		t.Fatalf("collect --force: exit %d\n%s", code, errOut)
	}
	checkVictim(t, victim)
	fi, err := os.Lstat(out)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("trace file: %v %v; want a regular file, mode 0600", fi.Mode(), err)
	}
	if n := countHello(t, out); n != 8 {
		t.Errorf("%d events in the trace", n)
	}
	// Now a regular file is there: refused again without --force, kept.
	before, _ := os.ReadFile(out)
	if code, errOut = collect(); code != exitIO || !strings.Contains(errOut, "already exists") {
		t.Errorf("collect onto an existing trace: exit %d\n%s", code, errOut)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Error("the existing trace was changed")
	}
	// --format: the converted file is checked before the session too.
	y := filepath.Join(dir, "y.nettrace")
	folded, _ := weighted.LookupFormat("folded")
	os.WriteFile(convertedName(y, folded), []byte("old"), 0o644)
	n := sessionsStarted(srv)
	if code, errOut = collect("-o", y, "--format", "folded"); code != exitIO || !strings.Contains(errOut, "y.folded") {
		t.Errorf("collect --format onto an existing converted file: exit %d\n%s", code, errOut)
	}
	if sessionsStarted(srv) != n || exists(y) {
		t.Error("a session was started, or the trace written, for a conversion that cannot be written")
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestConvertOutputRule: trace convert and counters collect follow the same
// rule.
func TestConvertOutputRule(t *testing.T) {
	in := writeHostileTrace(t)
	out := filepath.Join(t.TempDir(), "p.folded")
	victim := plantLink(t, out)
	code, _, errOut := run(t, "trace", "convert", "--format", "folded", "-o", out, in)
	if code != exitIO || !strings.Contains(errOut, "--force") {
		t.Errorf("convert onto a link: exit %d\n%s", code, errOut)
	}
	checkVictim(t, victim)
	if code, _, errOut = run(t, "trace", "convert", "--format", "folded", "--force", "-o", out, in); code != 0 {
		t.Fatalf("convert --force: exit %d\n%s", code, errOut)
	}
	checkVictim(t, victim)
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("converted file: %v, %v", fi, err)
	}
}

// TestDumpOutputRule: dump refuses a link planted at -o (the runtime would
// follow it), and --force removes it first.
func TestDumpOutputRule(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, DumpContent: []byte("core")})
	out := filepath.Join(t.TempDir(), "core")
	victim := plantLink(t, out)
	code, _, errOut := run(t, "dump", "--diagnostic-port", port, "-o", out)
	if code != exitIO || !strings.Contains(errOut, "symbolic link") || len(srv.Dumps()) != 0 {
		t.Errorf("dump onto a link: exit %d, %d dumps requested\n%s", code, len(srv.Dumps()), errOut)
	}
	if code, _, errOut = run(t, "dump", "--diagnostic-port", port, "--force", "-o", out); code != 0 || len(srv.Dumps()) != 1 {
		t.Errorf("dump --force: exit %d\n%s", code, errOut)
	}
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link is still there, or no dump replaced it: %v %v", fi, err)
	}
	checkVictim(t, victim)
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"dotnet":             "dotnet",
		"../../etc/cron.d/x": "_._.._etc_cron.d_x",
		"a\\b:c d\x1b[2J":    "a_b_c_d_[2J",
		".hidden":            "_hidden",
		"Служба":             "Служба",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}
