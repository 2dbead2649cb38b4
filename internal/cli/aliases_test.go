//go:build unix

package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// TestVerbAliases: 'dump collect' and 'stack report' run the same command
// as 'dump' and 'stack' (dotnet-dump's and dotnet-stack's verbs).
func TestVerbAliases(t *testing.T) {
	srv, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, DumpContent: []byte("core")})
	out := filepath.Join(t.TempDir(), "core")
	if code, _, errOut := run(t, "dump", "collect", "--diagnostic-port", port, "--type", "mini", "-o", out); code != 0 {
		t.Fatalf("dump collect: exit %d %s", code, errOut)
	}
	if d := srv.Dumps(); len(d) != 1 || d[0].Path != out || d[0].Type != ipc.DumpNormal {
		t.Fatalf("dump collect sent %+v", d)
	}
	_, sport := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}})
	code, stack, errOut := run(t, "stack", "report", "--diagnostic-port", sport)
	if code != 0 || !strings.Contains(stack, "App!App.Program.Main") {
		t.Fatalf("stack report: exit %d\n%s\n%s", code, stack, errOut)
	}
	if code, _, errOut := run(t, "dump", "colect"); code != exitUsage || !strings.Contains(errOut, "did you mean 'collect'") {
		t.Errorf("dump colect: exit %d %s", code, errOut)
	}
}

// TestPSAliases: 'trace ps' and 'counters ps' are 'clrdiag ps'.
func TestPSAliases(t *testing.T) {
	for _, g := range []string{"trace", "counters"} {
		code, got, errOut := run(t, g, "ps", "--json")
		if code != 0 || !strings.HasPrefix(got, "[") {
			t.Errorf("%s ps: exit %d %q %s", g, code, got, errOut)
		}
		if _, help, _ := run(t, g, "--help"); !strings.Contains(help, "same as 'clrdiag ps'") {
			t.Errorf("%s --help does not list ps:\n%s", g, help)
		}
	}
}

// TestColonBooleans: --flag:value works for boolean flags, as in
// dotnet-trace (--resume-runtime:false); other flags keep their value.
func TestColonBooleans(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	root := newRootCmd(e)
	args := colonBools(root, []string{"trace", "collect", "--resume-runtime:false", "--show-child-io:true", "--providers:X:1", "--", "app", "--x:false"})
	want := []string{"trace", "collect", "--resume-runtime=false", "--show-child-io=true", "--providers:X:1", "--", "app", "--x:false"}
	if strings.Join(args, " ") != strings.Join(want, " ") {
		t.Fatalf("colonBools = %q, want %q", args, want)
	}
	cmd, rest, err := root.Find(append(args[:4:4], args[5:]...)) // without --providers:X:1
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	if v, _ := cmd.Flags().GetBool("resume-runtime"); v {
		t.Error("--resume-runtime:false left the flag true")
	}
	if v, _ := cmd.Flags().GetBool("show-child-io"); !v {
		t.Error("--show-child-io:true left the flag false")
	}
	// A bad value is cobra's usage error.
	if code, _, errOut := run(t, "trace", "collect", "--resume-runtime:maybe", "--", "x"); code != exitUsage || !strings.Contains(errOut, "resume-runtime") {
		t.Errorf("--resume-runtime:maybe: exit %d %s", code, errOut)
	}
}

// TestReportTopN: dotnet-trace's 'report FILE topN -n N' spelling.
func TestReportTopN(t *testing.T) {
	in := sampleTrace(t)
	count := func(args ...string) int {
		code, out, errOut := run(t, append([]string{"trace", "report", in, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		return strings.Count(out, `"method":`)
	}
	if n := count("topN", "-n", "1"); n != 1 {
		t.Errorf("topN -n 1 listed %d methods", n)
	}
	if n := count("--number", "2"); n != 2 {
		t.Errorf("--number 2 listed %d methods", n)
	}
	if n := count("topN"); n != 4 { // the trace has 4 methods, fewer than the default 5
		t.Errorf("topN without -n listed %d methods, want 4", n)
	}
	// dotnet-trace's topN lists 5 by default: on clrdiag's Hot capture,
	// which has more methods than that (all of them without topN).
	hot := filepath.Join("..", "..", "testdata", "captures", "clrdiag", "hot-3.1.2-linux-x64.nettrace")
	in = hot
	all := count()
	if n := count("topN"); n != 5 || all <= 5 {
		t.Errorf("topN on the Hot capture listed %d methods (of %d), want 5", n, all)
	}
	in = sampleTrace(t)
	if code, _, errOut := run(t, "trace", "report", in, "bottomN"); code != exitUsage || !strings.Contains(errOut, "topN") {
		t.Errorf("report FILE bottomN: exit %d %s", code, errOut)
	}
}
