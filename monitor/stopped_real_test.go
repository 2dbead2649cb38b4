//go:build linux

package monitor_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/procstate"
	"github.com/clrdiag/clrdiag/monitor"
)

// stopTarget sends SIGSTOP to pid and waits until /proc says it stopped.
func stopTarget(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); (procstate.FS{}).State(pid) != 'T'; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop (state %q)", pid, (procstate.FS{}).State(pid))
		}
	}
}

// A real .NET Core 3.1 process stopped with SIGSTOP: starting an EventPipe
// session in it and giving up crashes its runtime when it continues (a
// runtime bug, issue 27). Every route that opens a session, the other
// routes, the /metrics collector and a collection rule's action refuse at
// once (409, saying what to do) and send the runtime nothing; once
// continued, the process is unharmed and a trace works.
func TestRealMonitorRefusesStoppedTarget(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
	stopTarget(t, tg.PID)
	sent := false
	defer func() {
		if !sent {
			syscall.Kill(tg.PID, syscall.SIGCONT)
		}
	}()
	fc := fleetConfig(t, fmt.Sprintf(`CollectionRules:
  AtStart:
    Filters: [{Key: ProcessId, Value: "%d"}]
    Trigger: {Type: Startup}
    Actions:
      - {Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:02"}}
`, tg.PID))
	_, hs := serveUI(t, monitor.Config{Fleet: fc, ArtifactDir: t.TempDir(), DumpDir: t.TempDir(), MetricsWindow: time.Second,
		DiscoveryInterval: 100 * time.Millisecond, Source: monitor.StaticSource{processOf(tg)}})

	pid := fmt.Sprint(tg.PID)
	for _, r := range []struct{ method, path string }{
		{"GET", "/processes/" + pid + "/trace?duration=2s"},
		{"GET", "/processes/" + pid + "/counters?duration=2s"},
		{"GET", "/processes/" + pid + "/stacks"},
		{"GET", "/processes/" + pid + "/gcdump"},
		{"GET", "/processes/" + pid + "/profile?duration=2s"},
		{"GET", "/processes/" + pid + "/logs?duration=2s"},
		{"GET", "/pprof/" + pid + "/profile?seconds=2"},
		{"POST", "/processes/" + pid + "/dump"},
		{"GET", "/processes/" + pid},
	} {
		begin := time.Now()
		code, body := do(t, hs, r.method, r.path)
		if code != http.StatusConflict || !strings.Contains(string(body), "process "+pid+" is stopped") || !strings.Contains(string(body), "kill -CONT "+pid) {
			t.Errorf("%s %s: %d %s; want 409 saying the process is stopped and how to continue it", r.method, r.path, code, body)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("%s %s: took %v to refuse", r.method, r.path, d)
		}
	}
	// /metrics answers; the collector's sessions were refused, not left
	// pending in the stopped runtime.
	if code, _ := do(t, hs, "GET", "/metrics"); code != 200 {
		t.Errorf("GET /metrics: %d", code)
	}

	// The rule's action was refused too.
	type op struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	ops := waitJSON(t, hs, "/operations?pid="+pid, func(ops []op) bool { return len(ops) == 1 && ops[0].Status != "Running" })
	if ops[0].Status != "Failed" || !strings.Contains(ops[0].Error, "process "+pid+" is stopped") {
		t.Errorf("the Startup rule's trace on the stopped process: %+v", ops[0])
	}

	// Continued, the runtime lives (a half-open session would crash it
	// here) and serves a session.
	sent = true
	if err := syscall.Kill(tg.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 30*time.Second)
	code, body := do(t, hs, "GET", "/processes/"+pid+"/stacks?format=text")
	if code != 200 || !strings.Contains(string(body), "Hot.Burner.Loop") {
		t.Errorf("stacks after SIGCONT: %d %s", code, body)
	}
	select {
	case <-tg.Done():
		t.Fatalf("the target died after SIGCONT:\n%s", tg.Stderr())
	default:
	}
}
