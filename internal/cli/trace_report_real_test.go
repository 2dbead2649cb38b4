//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/profile"
)

// pprofTopRow is a row of go tool pprof -top: the function and its flat%.
type pprofTopRow struct {
	Name string
	Flat float64
}

// pprofTopRows parses the rows of go tool pprof -top's table.
func pprofTopRows(txt string) []pprofTopRow {
	var rows []pprofTopRow
	re := regexp.MustCompile(`^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(\S.*)$`)
	for _, line := range strings.Split(txt, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			f, _ := strconv.ParseFloat(m[1], 64)
			rows = append(rows, pprofTopRow{Name: strings.TrimSpace(m[2]), Flat: f})
		}
	}
	return rows
}

// reportMethods returns the ranked method names of a JSON report and their
// exclusive shares.
func reportMethods(t *testing.T, out string) (*profile.Report, []string, map[string]float64) {
	t.Helper()
	var r profile.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	var names []string
	pct := map[string]float64{}
	for _, m := range r.Methods {
		names = append(names, m.Method)
		pct[m.Method] = m.ExclusivePct
	}
	return &r, names, pct
}

// TestRealReportWaitingMain traces the Spin target on the real runtime: one
// thread spins in P.Spin while the main thread waits in P.Main for the
// whole trace, so both have half of the wall time. The report must rank
// the work that ran, P.Spin, and list P.Main apart as waiting, in text and
// JSON; --include-waiting gives every thread's ranking, where the tie is
// broken in favour of P.Spin; and go tool pprof's default view of the
// same trace agrees with the report.
func TestRealReportWaitingMain(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Spin"), nil, nil)
	dir := t.TempDir()
	trace := filepath.Join(dir, "spin.nettrace")
	code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--profile", "dotnet-sampled-thread-time",
		"--duration", "3s", "-o", trace, "--format", "pprof")
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	tg.Kill()

	// The text report: P.Spin first, P.Main only under "Waiting the whole
	// trace".
	code, out, errOut := run(t, "trace", "report", trace)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	t.Logf("report:\n%s", out)
	top, waiting, ok := strings.Cut(out, "\nWaiting the whole trace")
	if !ok {
		t.Fatalf("the report has no section of waiting threads:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^  [\d.]+ms\s.*\s(\S+)$`).FindAllStringSubmatch(top, -1)
	if len(rows) == 0 || rows[0][1] != "Spin!P.Spin" {
		t.Errorf("first ranked method %v, want Spin!P.Spin:\n%s", rows, out)
	}
	if strings.Contains(top, "P.Main") || !strings.Contains(top, "Top methods by exclusive wall time of the threads that ran (1 of 2 threads") {
		t.Errorf("the ranking names the waiting P.Main or does not say it ranks the threads that ran:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  1\s+[\d.]+ms\s+Spin!P\.Main$`).MatchString(waiting) {
		t.Errorf("the waiting section does not list the main thread in Spin!P.Main:\n%s", out)
	}

	// JSON says the same.
	code, out, errOut = run(t, "trace", "report", trace, "--json")
	if code != 0 {
		t.Fatalf("report --json: exit %d\n%s", code, errOut)
	}
	r, names, pct := reportMethods(t, out)
	if len(names) == 0 || names[0] != "P.Spin" || pct["P.Spin"] < 99.9 || !r.WaitingLeftOut {
		t.Errorf("JSON methods %v (P.Spin %.1f%%), waiting left out %v", names, pct["P.Spin"], r.WaitingLeftOut)
	}
	if _, ok := pct["P.Main"]; ok {
		t.Errorf("JSON ranks the waiting P.Main: %v", names)
	}
	if len(r.Waiting) != 1 || r.Waiting[0].Method != "Spin!P.Main" || r.Waiting[0].Threads != 1 {
		t.Errorf("JSON waiting_whole_trace %+v, want the main thread in Spin!P.Main", r.Waiting)
	}

	// --include-waiting: every thread. The sampler samples both threads at
	// every tick, so the two methods tie, and the tie goes to P.Spin.
	code, out, errOut = run(t, "trace", "report", trace, "--json", "--include-waiting")
	if code != 0 {
		t.Fatalf("report --include-waiting: exit %d\n%s", code, errOut)
	}
	var spin, main profile.MethodTime
	r, names, _ = reportMethods(t, out)
	for _, m := range r.Methods {
		switch m.Method {
		case "P.Spin":
			spin = m
		case "P.Main":
			main = m
		}
	}
	if spin.Exclusive == 0 || spin.Exclusive != main.Exclusive || !main.Waiting || spin.Waiting || r.WaitingLeftOut {
		t.Fatalf("--include-waiting: P.Spin %+v, P.Main %+v (want equal time, P.Main waiting)", spin, main)
	}
	if names[0] != "P.Spin" || names[1] != "P.Main" {
		t.Errorf("--include-waiting ranks %v, want P.Spin then P.Main (a tie goes to work that ran)", names)
	}
	code, out, _ = run(t, "trace", "report", trace, "--include-waiting", "--inclusive")
	if code != 0 || strings.Index(out, "Spin!P.Spin") > strings.Index(out, "Spin!P.Main") {
		t.Errorf("--include-waiting --inclusive ranks P.Main above P.Spin at equal time:\n%s", out)
	}

	// go tool pprof's default view (wall_ran) ranks as the report does;
	// -sample_index=wall keeps every sample.
	pb := filepath.Join(dir, "spin.pb.gz")
	txt := goToolPprof(t, pb, []string{"-top"}, "Type: wall_ran")
	if txt != "" {
		pr := pprofTopRows(txt)
		if len(pr) == 0 || pr[0].Name != "P.Spin" || pr[0].Flat != 100 {
			t.Errorf("go tool pprof -top's first row %+v, want P.Spin 100%% as the report:\n%s", pr, txt)
		}
		for _, row := range pr {
			if row.Name == "P.Main" {
				t.Errorf("go tool pprof -top lists the waiting P.Main:\n%s", txt)
			}
		}
	}
	goToolPprof(t, pb, []string{"-top", "-sample_index=wall"}, "P.Main", "P.Spin", "Type: wall")
}
