package profile

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/weighted"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenMeasures are the event measures of the real captures that have
// their events: objver4 (.NET Core 3.0, 35 458 GCAllocationTick V3 and 8
// lock waits), net6.0.9 (one GCAllocationTick V4, with its object size)
// and the truncated 3.0 counters trace (9 ContentionStart, no stops).
var goldenMeasures = []struct {
	capture  string
	measures []string
}{
	{"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip", []string{MeasureAlloc, MeasureContention}},
	{"misc/net6.0.9-windows.nettrace", []string{MeasureAlloc}},
	{"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace", []string{MeasureContention}},
}

// TestGoldenEventMeasures compares the folded profile and the report of
// each event measure of the captures with testdata/golden (rerun with
// -update to rewrite them).
func TestGoldenEventMeasures(t *testing.T) {
	for _, c := range goldenMeasures {
		p, err := Read(bytes.NewReader(capture(t, c.capture)), Config{})
		var fe *nettrace.FormatError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("%s: %v", c.capture, err)
		}
		for _, m := range c.measures {
			name := strings.TrimSuffix(filepath.Base(c.capture), ".zip") + "." + m + ".txt"
			t.Run(name, func(t *testing.T) {
				var b bytes.Buffer
				if err != nil {
					fmt.Fprintf(&b, "read: %v\n", err)
				}
				wp, werr := p.Weighted(m)
				if werr != nil {
					t.Fatal(werr)
				}
				fmt.Fprintf(&b, "sample types:")
				for i, ty := range wp.Types {
					mark := ""
					if i == wp.Default {
						mark = "*"
					}
					fmt.Fprintf(&b, " %s/%s%s", ty.Type, ty.Unit, mark)
				}
				b.WriteString("\n--- folded\n")
				if err := weighted.WriteFolded(&b, wp); err != nil {
					t.Fatal(err)
				}
				b.WriteString("--- report\n")
				if err := BuildReport(p, ReportConfig{Top: 10, Measure: m}).WriteText(&b); err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("testdata", "golden", name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, rerr := os.ReadFile(golden)
				if rerr != nil {
					t.Fatalf("%v (run with -update to create it)", rerr)
				}
				if got := b.String(); got != string(want) {
					t.Errorf("%s differs (rerun with -update if the change is intended):\n%s", golden, testcapture.LineDiff(string(want), got))
				}
			})
		}
	}
}
