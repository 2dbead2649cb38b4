//go:build linux

package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/profilertest"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/transport"
)

// dirEgress moves artifacts into a directory: a stand-in for the egress
// package's providers, to show the hook gets real files.
type dirEgress struct {
	dir string
	mu  sync.Mutex
	got []Artifact
}

func (d *dirEgress) Egress(_ context.Context, provider string, a Artifact) (string, error) {
	dst := filepath.Join(d.dir, provider+"-"+a.Name)
	if err := os.Rename(a.Path, dst); err != nil {
		return "", err
	}
	d.mu.Lock()
	d.got = append(d.got, a)
	d.mu.Unlock()
	return dst, nil
}

type realRun struct {
	e      *Engine
	tg     *dotnettest.Target
	dir    string
	logBuf *lockedWriter
	cancel context.CancelFunc
	done   chan error
}

// startReal starts target, loads yaml (ARTIFACTS and OUT replaced by
// directories), adds the process and watches it with real sessions.
func startReal(t *testing.T, target, yaml string, eg Egress) *realRun {
	t.Helper()
	rt := dotnettest.Find(t)
	return startRealOn(t, rt, rt.Build(t, target), target, yaml, eg)
}

func startRealOn(t *testing.T, rt *dotnettest.Runtime, dll, target, yaml string, eg Egress, env ...string) *realRun {
	t.Helper()
	tg := rt.Start(t, dll, nil, &dotnettest.Options{Env: env})
	dir := t.TempDir()
	yaml = strings.ReplaceAll(yaml, "OUT", dir)
	cfg, err := Load([]Source{{Name: "rules.yaml", Data: []byte(yaml)}}, LoadOptions{EgressProviders: []string{"store"}})
	if err != nil {
		t.Fatal(err)
	}
	lw := &lockedWriter{w: &bytes.Buffer{}}
	e, err := New(cfg, Options{ArtifactDir: dir, Egress: eg, Logger: slog.New(slog.NewTextHandler(lw, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	client := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}, nil)
	if got := e.Add(ProcessInfo{PID: tg.PID, Name: target, CommandLine: "dotnet " + target + ".dll"}, client); len(got) != len(cfg.Rules) {
		t.Fatalf("rules applied: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &realRun{e: e, tg: tg, dir: dir, logBuf: lw, cancel: cancel, done: make(chan error, 2)}
	go func() { r.done <- e.Watch(ctx, tg.PID, WatchConfig{}) }()
	go e.Run(ctx)
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Error("Watch did not return within 20s of its context's end")
		}
	})
	return r
}

// waitRule waits until the rule has finished its actions.
func (r *realRun) waitRule(t *testing.T, rule string, within time.Duration) RuleStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, s := range r.e.Status() {
			if s.Rule == rule && s.State == StateFinished {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("rule %s not finished within %v: %+v\nlog:\n%s", rule, within, r.e.Status(), r.logBuf.w.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readNettrace decodes a whole nettrace file and counts its events by
// provider/event id.
func readNettrace(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nr, err := nettrace.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	counts := map[string]int{}
	var ev nettrace.Event
	for {
		err := nr.ReadEvent(&ev)
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		counts[ev.Metadata.ProviderName+"/"+strconv.Itoa(int(ev.Metadata.EventID))]++
	}
}

// An exception rate above the line for 2 s, from the real System.Runtime
// counters of a .NET Core 3.1 process, collects a trace of its exceptions
// (egressed through the hook), a dump, and runs a command given the
// trace's path.
func TestRealExceptionRateRule(t *testing.T) {
	eg := &dirEgress{dir: t.TempDir()}
	r := startReal(t, "Workloads", `CollectionRules:
  Exceptions:
    Filters: [{ProcessName: Workloads}]
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: exception-count, GreaterThan: 50, SlidingWindowDuration: "00:00:02"}
    Actions:
      - Name: Trace
        Type: CollectTrace
        Settings:
          Providers: [{Name: Microsoft-Windows-DotNETRuntime, Keywords: "0x8000", EventLevel: Informational}]
          RequestRundown: false
          Duration: "00:00:02"
          Egress: store
      - {Name: Dump, Type: CollectDump, Settings: {Type: Mini}}
      - Name: Copy
        Type: Execute
        Settings: {Path: /bin/cp, Arguments: "$(Actions.Trace.EgressPath) OUT/copy.nettrace"}
    Limits: {ActionCount: 1}
`, eg)
	if s := r.e.Status()[0]; s.Executions != 0 {
		t.Fatalf("fired before any exception: %+v", s)
	}
	r.tg.Send(t, "throw-loop")
	r.tg.Expect(t, "LOOPING", 10*time.Second)
	s := r.waitRule(t, "Exceptions", 90*time.Second)
	if s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "System.Runtime/exception-count") || !strings.Contains(s.Reason, "ActionCount 1 reached") {
		t.Fatalf("%+v", s)
	}
	ops := r.e.Operations()
	if len(ops) != 2 {
		t.Fatalf("operations %+v\n%s", ops, r.logBuf.w.String())
	}
	trace, dump := ops[0], ops[1]
	if trace.Status != OperationSucceeded || trace.Type != "CollectTrace" || trace.EgressProvider != "store" || !strings.HasPrefix(trace.EgressPath, eg.dir) {
		t.Fatalf("trace operation %+v", trace)
	}
	// The trace is real: the runtime's ExceptionThrown_V1 (80) events.
	counts := readNettrace(t, trace.EgressPath)
	if n := counts["Microsoft-Windows-DotNETRuntime/80"]; n < 20 {
		t.Fatalf("%d ExceptionThrown events in the trace: %v", n, counts)
	}
	// Execute got the egressed path and copied the very file.
	a, _ := os.ReadFile(trace.EgressPath)
	b, err := os.ReadFile(filepath.Join(r.dir, "copy.nettrace"))
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("the Execute action's copy differs (%v)", err)
	}
	// The dump was written by the runtime and kept in the artifact dir.
	if dump.Status != OperationSucceeded || dump.EgressPath != dump.Artifact || filepath.Dir(dump.Artifact) != r.dir {
		t.Fatalf("dump operation %+v", dump)
	}
	st, err := os.Stat(dump.Artifact)
	if err != nil || st.Size() < 1<<20 || st.Mode().Perm() != 0o600 {
		t.Fatalf("dump %v %v", st, err)
	}
	f, _ := os.Open(dump.Artifact)
	magic := make([]byte, 4)
	io.ReadFull(f, magic)
	f.Close()
	if string(magic) != "\x7fELF" {
		t.Fatalf("dump starts with %q, not an ELF core", magic)
	}
	log := r.logBuf.w.String()
	for _, want := range []string{"collection rule triggered", "action=Trace", "action=Dump", "action=Copy", "ExitCode=0", "collection rule finished"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// CPU above the line for 2 s (the Hot target burns a core) collects a CPU
// trace whose SampleProfiler samples and rundown decode.
func TestRealCPURule(t *testing.T) {
	r := startReal(t, "Hot", `CollectionRules:
  HighCpu:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 5, SlidingWindowDuration: "00:00:02"}
    Actions:
      - {Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:02"}}
    Limits: {ActionCount: 1}
`, nil)
	s := r.waitRule(t, "HighCpu", 90*time.Second)
	if s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "cpu-usage") {
		t.Fatalf("%+v", s)
	}
	op := r.e.Operations()[0]
	if op.Status != OperationSucceeded || op.EgressProvider != "" || op.EgressPath != op.Artifact || !strings.HasSuffix(op.Artifact, ".nettrace") {
		t.Fatalf("%+v", op)
	}
	counts := readNettrace(t, op.Artifact)
	samples := counts["Microsoft-DotNETCore-SampleProfiler/0"]
	rundown := counts["Microsoft-Windows-DotNETRuntimeRundown/144"] // MethodDCEndVerbose
	if samples < 100 || rundown == 0 {
		t.Fatalf("samples %d, rundown methods %d: %v", samples, rundown, counts)
	}
}

// A Startup rule runs the other artifact actions against a real .NET Core
// 3.1 process: stacks, a heap snapshot, live metrics and logs (the
// Logging target's stand-in Microsoft-Extensions-Logging EventSource);
// GetEnvironmentVariable, which needs .NET 5, fails with the runtime's
// refusal, in its own rule.
func TestRealStartupActions(t *testing.T) {
	r := startReal(t, "Logging", `CollectionRules:
  Collect:
    Trigger: {Type: Startup}
    Actions:
      - {Type: CollectStacks, Settings: {Format: PlainText}}
      - {Type: CollectGCDump}
      - {Type: CollectLiveMetrics, Settings: {Duration: "00:00:02"}}
      - {Type: CollectLogs, Settings: {DefaultLevel: Warning, UseAppFilters: false, Format: NewlineDelimitedJson, Duration: "00:00:30"}}
  Env:
    Trigger: {Type: Startup}
    Actions: [{Type: GetEnvironmentVariable, Settings: {Name: HOME}}]
`, nil)
	// The logs session is the last action: log once it runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ops := r.e.Operations()
		if len(ops) == 4 && ops[3].Status == OperationRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logs action did not start: %+v\n%s", ops, r.logBuf.w.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.tg.Send(t, "wait-enabled")
	r.tg.Expect(t, "ENABLED", 30*time.Second)
	r.tg.Send(t, "demo")
	r.tg.Expect(t, "DEMO done", 30*time.Second)
	// Ending the process ends the logs session, and the action with it.
	r.tg.Send(t, "exit 0")
	r.waitRule(t, "Collect", 60*time.Second)
	r.waitRule(t, "Env", 60*time.Second)
	ops := r.e.Operations()
	for _, op := range ops {
		if op.Status != OperationSucceeded {
			t.Fatalf("%+v", op)
		}
	}
	read := func(i int) string {
		b, err := os.ReadFile(ops[i].Artifact)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read(0); !strings.Contains(s, "Program.Main") {
		t.Errorf("stacks:\n%s", s)
	}
	if g, err := gcdump.ReadFile(ops[1].Artifact); err != nil || g.NumNodes() < 100 {
		t.Errorf("gcdump %s: %v", ops[1].Artifact, err)
	}
	var metrics struct {
		TargetProcess string
		Events        []struct{ Provider, Name string }
	}
	if err := json.Unmarshal([]byte(read(2)), &metrics); err != nil || len(metrics.Events) < 10 || metrics.Events[0].Name != "CPU Usage (%)" || !strings.HasPrefix(metrics.TargetProcess, "Logging[") {
		t.Errorf("live metrics: %v %+v", err, metrics)
	}
	logs := strings.Split(strings.TrimSpace(read(3)), "\n")
	if len(logs) != 3 || !strings.Contains(logs[0], `"LogLevel":"Warning"`) || !strings.Contains(logs[1], `"Message":"Order 7 failed"`) || !strings.Contains(logs[2], `"LogLevel":"Critical"`) {
		t.Errorf("logs:\n%s", strings.Join(logs, "\n"))
	}
	log := r.logBuf.w.String()
	if !strings.Contains(log, "rule=Env") || !strings.Contains(log, "collection rule action failed") || !strings.Contains(log, "read the environment") {
		t.Errorf("log:\n%s", log)
	}
}

// The ASP.NET triggers and an EventMeter trigger on a real ASP.NET Core
// app (testdata/targets/Web.cs) on .NET 8 and later: requests made here
// reach the rules through the Microsoft.AspNetCore DiagnosticListener's
// events and the app's own Meter.
func TestRealAspNetCoreTriggers(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		r := startRealOn(t, rt, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), "Web", `CollectionRules:
  Errors:
    Trigger: {Type: AspNetResponseStatus, Settings: {StatusCodes: ["500-599"], ResponseCount: 3, IncludePaths: ["/status"]}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Slow:
    Trigger: {Type: AspNetRequestDuration, Settings: {RequestCount: 2, RequestDuration: "00:00:00.005", IncludePaths: ["/lock"]}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Busy:
    Trigger: {Type: AspNetRequestCount, Settings: {RequestCount: 10, ExcludePaths: ["/status", "/lock"]}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Latency:
    Trigger: {Type: EventMeter, Settings: {MeterName: Clrdiag.Web, InstrumentName: clrdiag.web.duration, HistogramPercentile: 50, GreaterThan: 0, SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
`, nil)
		f := strings.Fields(r.tg.ReadyLine)
		if len(f) < 3 {
			t.Fatalf("ready line %q", r.tg.ReadyLine)
		}
		base := f[2]
		hc := &http.Client{Timeout: 10 * time.Second}
		get := func(path string) {
			resp, err := hc.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		finished := func(rule string) bool {
			for _, s := range r.e.Status() {
				if s.Rule == rule && s.State == StateFinished {
					return true
				}
			}
			return false
		}
		// The sessions start asynchronously: keep the requests coming
		// until every rule has fired (each fires once).
		deadline := time.Now().Add(90 * time.Second)
		for i := 0; ; i++ {
			get(fmt.Sprintf("/status?code=%d", 500+i%4))
			get("/status?code=404")
			get("/lock")
			get("/")
			if finished("Errors") && finished("Slow") && finished("Busy") && finished("Latency") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not every rule fired: %+v\n%s", r.e.Status(), r.logBuf.w.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, s := range r.e.Status() {
			if s.Executions != 1 {
				t.Errorf("%+v", s)
			}
			switch s.Rule {
			case "Errors":
				if !strings.Contains(s.LastTriggerWhat, "/status") {
					t.Errorf("%+v", s)
				}
			case "Slow":
				if !strings.Contains(s.LastTriggerWhat, "/lock") && !strings.Contains(s.LastTriggerWhat, "still running") {
					t.Errorf("%+v", s)
				}
			case "Busy":
				if !strings.Contains(s.LastTriggerWhat, "GET /") || strings.Contains(s.LastTriggerWhat, "/status") {
					t.Errorf("%+v", s)
				}
			case "Latency":
				if !strings.Contains(s.LastTriggerWhat, "Clrdiag.Web/clrdiag.web.duration") || !strings.Contains(s.LastTriggerWhat, "route=") {
					t.Errorf("%+v", s)
				}
			}
		}
	})
}

// SetEnvironmentVariable and GetEnvironmentVariable (.NET 6+) on a real
// process, the value chained into an Execute action.
func TestRealEnvironmentActions(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		r := startRealOn(t, rt, rt.Build(t, "Basic"), "Basic", `CollectionRules:
  Env:
    Trigger: {Type: Startup}
    Actions:
      - {Type: SetEnvironmentVariable, Settings: {Name: CLRDIAG_RULE, Value: set-by-rule}}
      - {Name: Get, Type: GetEnvironmentVariable, Settings: {Name: CLRDIAG_RULE}}
      - {Type: Execute, Settings: {Path: /bin/sh, Arguments: "-c \"echo $0 > OUT/env.txt\" $(Actions.Get.Value)"}}
`, nil)
		s := r.waitRule(t, "Env", 60*time.Second)
		if s.Executions != 1 {
			t.Fatalf("%+v", s)
		}
		b, err := os.ReadFile(filepath.Join(r.dir, "env.txt"))
		if err != nil || string(b) != "set-by-rule\n" {
			t.Fatalf("%q %v\n%s", b, err, r.logBuf.w.String())
		}
		r.tg.Send(t, "env CLRDIAG_RULE")
		if got := r.tg.Expect(t, "ENV", 10*time.Second); got != "ENV CLRDIAG_RULE=set-by-rule" {
			t.Fatalf("the process sees %q", got)
		}
	})
}

// LoadProfiler attaches the example profiler (examples/profiler) to a real
// .NET Core 3.1 process: the library is mapped and its
// InitializeForAttach ran.
func TestRealLoadProfiler(t *testing.T) {
	lib := profilertest.Build(t, profilertest.Standard)
	rt := dotnettest.Find(t)
	logPath := filepath.Join(t.TempDir(), "profiler.log")
	r := startRealOn(t, rt, rt.Build(t, "Basic"), "Basic", `CollectionRules:
  Profile:
    Trigger: {Type: Startup}
    Actions: [{Type: LoadProfiler, Settings: {Path: `+lib+`, Clsid: `+profilertest.CLSID+`}}]
`, nil, profilertest.LogEnv+"="+logPath, "CORECLR_ENABLE_PROFILING=0", "CORECLR_PROFILER_PATH=")
	s := r.waitRule(t, "Profile", 60*time.Second)
	if s.Executions != 1 || !strings.Contains(r.logBuf.w.String(), "collection rule action succeeded") {
		t.Fatalf("%+v\n%s", s, r.logBuf.w.String())
	}
	if ok, err := profilertest.Mapped(r.tg.PID, lib); !ok || err != nil {
		t.Fatalf("the profiler is not mapped in the target: %v", err)
	}
	evs, err := profilertest.ReadLog(logPath)
	if err != nil || profilertest.Count(evs, "initialize-for-attach") != 1 {
		t.Fatalf("profiler log %v: %v", profilertest.Names(evs), err)
	}
}

// CollectTrace's StoppingEvent ends a 1-minute trace as soon as the event
// arrives (the Events target's Finish event, payload code 42).
func TestRealStoppingEvent(t *testing.T) {
	r := startReal(t, "Events", `CollectionRules:
  Stop:
    Trigger: {Type: Startup}
    Actions:
      - Type: CollectTrace
        Settings:
          Providers: [{Name: Clrdiag-Test, Keywords: "0xB", EventLevel: Verbose}]
          RequestRundown: false
          Duration: "00:01:00"
          StoppingEvent: {ProviderName: Clrdiag-Test, EventName: Finish, PayloadFilter: {code: "42"}}
`, nil)
	waitFor(t, func() bool { ops := r.e.Operations(); return len(ops) == 1 })
	r.tg.Send(t, "wait-enabled")
	r.tg.Expect(t, "ENABLED", 30*time.Second)
	r.tg.Send(t, "emit 3")
	r.tg.Expect(t, "EMITTED", 10*time.Second)
	began := time.Now()
	r.tg.Send(t, "stop-event")
	r.waitRule(t, "Stop", 50*time.Second)
	if d := time.Since(began); d > 45*time.Second {
		t.Fatalf("the trace ran %v after its stopping event", d)
	}
	op := r.e.Operations()[0]
	if op.Status != OperationSucceeded {
		t.Fatalf("%+v", op)
	}
	counts := readNettrace(t, op.Artifact)
	var hello, finish int
	for k, n := range counts {
		if strings.HasPrefix(k, "Clrdiag-Test/") {
			if strings.HasSuffix(k, "/1") {
				hello += n
			}
			if strings.HasSuffix(k, "/6") {
				finish += n
			}
		}
	}
	if hello != 3 || finish != 1 {
		t.Fatalf("Hello %d, Finish %d: %v", hello, finish, counts)
	}
}
