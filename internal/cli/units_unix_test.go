//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSIUnitsTraceCollect: trace collect's messages give sizes in SI, the
// --max-size it names is the one given, and the size it reports is the
// file's (os.Stat, the second source).
func TestSIUnitsTraceCollect(t *testing.T) {
	_, port := endlessRuntime(t, false, false)
	out := filepath.Join(t.TempDir(), "x.nettrace")
	code, stdout, stderr := run(t, "trace", "collect", "--diagnostic-port", port, "--providers", "Fake-Source", "--max-size", "3MB", "-o", out)
	if code != 6 || !strings.Contains(stderr, "--max-size (3 MB)") {
		t.Fatalf("exit %d, want 6 and the cap said back as 3 MB:\n%s", code, stderr)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 3_000_000 {
		t.Errorf("--max-size 3MB let the file grow to %d bytes (more than 3,000,000)", st.Size())
	}
	checkSI(t, "trace collect", stdout+stderr)
	m := regexp.MustCompile(`cut to its last complete block \(([^)]+)\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no file size in the messages:\n%s", stderr)
	}
	if !near(t, m[1], st.Size()) {
		t.Errorf("the message says %s, the file has %d bytes", m[1], st.Size())
	}
}
