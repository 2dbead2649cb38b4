//go:build unix

package monitor_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/monitor"
)

// goPprof runs go tool pprof on a URL, as a scraper fetches it: pprof adds
// ?seconds= itself.
func goPprof(t *testing.T, args ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go not on PATH (CI=true): %v", err)
		}
		t.Skipf("SKIPPING: go tool pprof is the scraper of this test and go is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"tool", "pprof"}, args...)...)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestRealPprofScrape: the stable per-process pprof endpoints, fetched by
// a real consumer of pprof URLs, go tool pprof (the scrapers this is for,
// Pyroscope/Alloy's pyroscope.scrape, Parca and the OpenTelemetry
// Collector's pprofreceiver, fetch the same URLs with ?seconds=; none of
// them runs here: Debian's prometheus cannot scrape pprof, and the
// collector's pprof receiver is in its contrib distribution, not the core
// one built for these tests). A .NET Core 3.1 process is named in the path
// (Hot, burning a core in two methods) or given by pid (Workloads,
// throwing in a loop).
func TestRealPprofScrape(t *testing.T) {
	rt := dotnettest.Find(t)
	hot := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
	thrower := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
	m, err := monitor.New(monitor.Config{NoAuth: true, NoMetrics: true,
		Source: monitor.StaticSource{targetProcess(hot, "Hot"), targetProcess(thrower, "Workloads")}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(m)
	t.Cleanup(func() { hs.Close(); m.Close() })

	top := goPprof(t, "-seconds", "3", "-top", hs.URL+"/pprof/Hot/profile")
	if !strings.Contains(top, "Hot.Burner.MostlyHot") || !strings.Contains(top, "Duration: 3") {
		t.Errorf("go tool pprof -top of /pprof/Hot/profile:\n%s", top)
	}

	t.Logf("go tool pprof -top %s/pprof/Hot/profile:\n%s", hs.URL, top)
	thrower.Send(t, "throw-loop")
	thrower.Expect(t, "LOOPING", 10*time.Second)
	top = goPprof(t, "-seconds", "2", "-top", fmt.Sprintf("%s/pprof/%d/exceptions", hs.URL, thrower.PID))
	if !strings.Contains(top, "Exception") || !strings.Contains(top, "Workloads.Thrower") {
		t.Errorf("go tool pprof -top of /pprof/PID/exceptions:\n%s", top)
	}
}
