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

// TestRealReportWaitingMain traces the Spin target on each real runtime:
// one thread spins in P.Spin while the main thread waits on a lock in
// P.Main for the whole trace, so both have half of the wall time. The
// report must rank the work that ran, P.Spin, and list the main thread
// apart as waiting, in text and JSON; --include-waiting gives every
// thread's ranking, where the tie between P.Spin and the method the main
// thread waits in is broken in favour of P.Spin; and go tool pprof's
// default view of the same trace agrees with the report. On .NET Core 3.1
// the main thread's stack ends in P.Main (Monitor.Enter is a call into
// the runtime): the case the report used to rank first.
func TestRealReportWaitingMain(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testReportWaitingMain)
}

func testReportWaitingMain(t *testing.T, rt *dotnettest.Runtime) {
	tg := rt.Start(t, rt.Build(t, "Spin"), nil, nil)
	dir := t.TempDir()
	trace := filepath.Join(dir, "spin.nettrace")
	code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--profile", "dotnet-sampled-thread-time",
		"--duration", "3s", "-o", trace, "--format", "pprof")
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	tg.Kill()

	// JSON: P.Spin first with every sample of the threads that ran, the
	// main thread apart.
	code, out, errOut := run(t, "trace", "report", trace, "--json")
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
	if len(r.Waiting) != 1 || r.Waiting[0].Threads != 1 {
		t.Fatalf("JSON waiting_whole_trace %+v, want the main thread", r.Waiting)
	}
	site := r.Waiting[0].Method // where the main thread waits
	if rt.Major == 3 && site != "Spin!P.Main" {
		t.Errorf("on 3.1 the main thread waits in %s, want Spin!P.Main", site)
	}
	for _, th := range r.Threads {
		if th.Waiting != (th.ID == uint64(tg.PID)) {
			t.Errorf("thread %d (main %d) waiting %v", th.ID, tg.PID, th.Waiting)
		}
	}

	// The text report says the same: P.Spin first, the waiting method
	// only under "Waiting the whole trace".
	code, out, errOut = run(t, "trace", "report", trace)
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
	if strings.Contains(top, "P.Main") || strings.Contains(top, site+"\n") ||
		!strings.Contains(top, "Top methods by exclusive wall time of the threads that ran (1 of 2 threads") {
		t.Errorf("the ranking names the waiting main thread's methods or does not say it ranks the threads that ran:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  1\s+[\d.]+ms\s+` + regexp.QuoteMeta(site) + `$`).MatchString(waiting) {
		t.Errorf("the waiting section does not list the main thread in %s:\n%s", site, out)
	}

	// --include-waiting: every thread. The sampler samples both threads at
	// every tick, so P.Spin and the main thread's method tie, and the tie
	// goes to P.Spin, exclusive or inclusive.
	for _, inclusive := range []bool{false, true} {
		args := []string{"trace", "report", trace, "--json", "--include-waiting"}
		if inclusive {
			args = append(args, "--inclusive")
		}
		code, out, errOut = run(t, args...)
		if code != 0 {
			t.Fatalf("report --include-waiting: exit %d\n%s", code, errOut)
		}
		r, _, _ = reportMethods(t, out)
		spin, wait := -1, -1
		for i, m := range r.Methods {
			switch {
			case m.Method == "P.Spin":
				spin = i
			case !inclusive && profile.Frame{Name: m.Method, Module: m.Module}.String() == site,
				inclusive && m.Method == "P.Main":
				wait = i
			}
		}
		if spin < 0 || wait < 0 || r.WaitingLeftOut {
			t.Fatalf("--include-waiting (inclusive %v) lacks P.Spin or the main thread's method: %+v", inclusive, r.Methods)
		}
		s, w := r.Methods[spin], r.Methods[wait]
		sv, wv := s.ExclusiveValue, w.ExclusiveValue
		if inclusive {
			sv, wv = s.InclusiveValue, w.InclusiveValue
		}
		if sv == 0 || sv != wv || !w.Waiting || s.Waiting {
			t.Fatalf("--include-waiting (inclusive %v): %s %+v, %s %+v (want equal time, the second waiting)", inclusive, s.Method, s, w.Method, w)
		}
		if spin > wait {
			t.Errorf("--include-waiting (inclusive %v) ranks %s (waiting) above P.Spin at equal time: %+v", inclusive, w.Method, r.Methods)
		}
	}

	// go tool pprof's default view (wall_ran) ranks as the report does;
	// -sample_index=wall keeps every sample.
	pb := filepath.Join(dir, "spin.pb.gz")
	if txt := goToolPprof(t, pb, []string{"-top"}, "Type: wall_ran"); txt != "" {
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
