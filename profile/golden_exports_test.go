package profile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

// goldenRuns caps the timeline of the golden files, so that the formats that
// draw time (Chromium, speedscope's time order) stay small enough to read in
// review; the cap itself is part of what they show (the timeline note).
const goldenRuns = 300

// goldenCaptures are the committed captures with CPU samples: .NET 5 on
// macOS (one thread, every sample Managed), the .NET Core 3.0 preview on
// Windows (13 threads, no rundown), the truncated 3.0 trace (damaged; 15
// threads, 5 waiting) and clrdiag's own .NET Core 3.1.2 capture of the Hot
// target (a worker burning CPU, the main thread waiting in
// Console.ReadLine).
var goldenCaptures = []string{
	"perfview/only_managed_samples.nettrace.zip",
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
	"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace",
	"clrdiag/hot-3.1.2-linux-x64.nettrace",
}

// TestGoldenExports compares every export format (pprof as the text of go
// tool pprof -raw) and the text report of the CPU profile of each capture
// with testdata/golden, so that any change to an output shows in review.
// Rerun with -update to rewrite them.
func TestGoldenExports(t *testing.T) {
	for _, rel := range goldenCaptures {
		p, err := Read(bytes.NewReader(capture(t, rel)), Config{Timeline: true, MaxTimelineRuns: goldenRuns})
		var fe *nettrace.FormatError
		if p == nil || (err != nil && !errors.As(err, &fe)) {
			t.Fatalf("%s: %v", rel, err)
		}
		base := strings.TrimSuffix(filepath.Base(rel), ".zip")
		for _, m := range []string{MeasureWall, MeasureCPU} {
			wp := weightedOf(t, p, m)
			for _, f := range weighted.Formats() {
				name := base + "." + m + f.Suffix
				var b bytes.Buffer
				if f.Name == "pprof" {
					if m != MeasureWall {
						continue // the same file but for the default type
					}
					pp, err := wp.Pprof()
					if err != nil {
						t.Fatal(err)
					}
					name = base + ".pprof.txt"
					b.WriteString(pp.String())
				} else if err := f.Write(&b, wp); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				checkGolden(t, name, b.Bytes())
			}
		}
		var b bytes.Buffer
		if err != nil {
			b.WriteString("read: " + err.Error() + "\n")
		}
		if err := BuildReport(p, ReportConfig{Top: 15}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, base+".report.txt", b.Bytes())
	}
}

// checkGolden compares got with testdata/golden/name, or writes it with
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Errorf("%v (run with -update to create it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (rerun with -update if the change is intended):\n%s", golden, testcapture.LineDiff(string(want), string(got)))
	}
}
