package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
)

// readmeBlock returns the lines of the README's code block that follow the
// line cmd, up to the next command or the block's end.
func readmeBlock(t *testing.T, cmd string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n"+cmd+"\n")
	if !ok {
		t.Fatalf("the README has no line %q", cmd)
	}
	var out []string
	for _, line := range strings.Split(after, "\n") {
		if line == "```" || strings.HasPrefix(line, "clrdiag ") || strings.HasPrefix(line, "go tool ") {
			break
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

// TestREADMEReport: the README's trace report of the Hot capture is what
// trace report prints for it.
func TestREADMEReport(t *testing.T) {
	want := readmeBlock(t, "clrdiag trace report Hot.nettrace --top 4")
	trace := filepath.Join(t.TempDir(), "Hot.nettrace")
	if err := os.WriteFile(trace, testcapture.Load(t, "clrdiag/hot-3.1.2-linux-x64.nettrace"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "trace", "report", trace, "--top", "4")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	if out != want {
		t.Errorf("the README's report differs from trace report's:\n--- README\n%s--- trace report\n%s", want, out)
	}
	// The README's go tool pprof -top rows are those of the same trace.
	code, _, errOut = run(t, "trace", "convert", trace, "--format", "pprof")
	if code != 0 {
		t.Fatalf("convert: exit %d\n%s", code, errOut)
	}
	rows := readmeBlock(t, "go tool pprof -top Hot.pb.gz                     # -sample_index=wall: every sample; =cpu: Managed samples only")
	var check []string
	for _, line := range strings.Split(rows, "\n") {
		if line != "" && line != "..." {
			check = append(check, line)
		}
	}
	goToolPprof(t, strings.TrimSuffix(trace, ".nettrace")+".pb.gz", []string{"-top"}, check...)
}
