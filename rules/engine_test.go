package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder is the state of the test action type "Record".
type recorder struct {
	mu      sync.Mutex
	runs    []string // "rule/action:arg"
	order   []string // "pid:rule/action:arg"
	running atomic.Int32
	maxConc atomic.Int32
	release chan struct{} // when set, Block actions wait on it
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.runs...)
}

type recordAction struct {
	rec   *recorder
	arg   Template
	block bool
	fail  bool
	file  bool
}

func (a *recordAction) Run(ctx context.Context, r *Run) (Outputs, error) {
	n := a.rec.running.Add(1)
	defer a.rec.running.Add(-1)
	for {
		m := a.rec.maxConc.Load()
		if n <= m || a.rec.maxConc.CompareAndSwap(m, n) {
			break
		}
	}
	a.rec.mu.Lock()
	a.rec.runs = append(a.rec.runs, r.Rule+"/"+r.Action.Label()+":"+r.Expand(a.arg))
	a.rec.order = append(a.rec.order, fmt.Sprintf("%d:%s", r.Process.PID, a.rec.runs[len(a.rec.runs)-1]))
	a.rec.mu.Unlock()
	if a.block {
		select {
		case <-a.rec.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.fail {
		return nil, errors.New("asked to fail")
	}
	out := Outputs{"Value": fmt.Sprintf("v%d", r.Process.PID)}
	if a.file {
		p := filepath.Join(r.Dir, fmt.Sprintf("%s_%d.bin", r.Rule, r.Process.PID))
		if err := os.WriteFile(p, []byte("artifact"), 0o600); err != nil {
			return nil, err
		}
		where, err := r.Store(ctx, Artifact{Path: p, Kind: "test"})
		if err != nil {
			return nil, err
		}
		out[OutputEgressPath] = where
	}
	return out, nil
}

func testRegistry(rec *recorder) *Registry {
	reg := DefaultActions()
	newRecord := func(file bool) func(s *Settings) (Action, error) {
		return func(s *Settings) (Action, error) {
			return &recordAction{rec: rec, arg: s.Template("Arg", false), block: s.Bool("Block", false), fail: s.Bool("Fail", false), file: file}, nil
		}
	}
	reg.Register(ActionType{Name: "Record", Outputs: []string{"Value"}, New: newRecord(false)})
	reg.Register(ActionType{Name: "RecordFile", Outputs: []string{"Value", OutputEgressPath}, Artifact: true, New: newRecord(true)})
	return reg
}

type harness struct {
	t   *testing.T
	e   *Engine
	clk *clock
	rec *recorder
	log *bytes.Buffer
}

func newHarness(t *testing.T, yaml string, opt Options) *harness {
	t.Helper()
	rec := &recorder{}
	cfg, err := Load([]Source{{Name: "t.yaml", Data: []byte(yaml)}}, LoadOptions{Actions: testRegistry(rec), EgressProviders: []string{"store"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	var buf bytes.Buffer
	opt.Now = clk.Now
	opt.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf}, nil))
	if opt.ArtifactDir == "" {
		opt.ArtifactDir = t.TempDir()
	}
	e, err := New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return &harness{t: t, e: e, clk: clk, rec: rec, log: &buf}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// state returns the state of rule for pid.
func (h *harness) state(pid int, rule string) RuleStatus {
	for _, s := range h.e.Status() {
		if s.PID == pid && s.Rule == rule {
			return s
		}
	}
	h.t.Fatalf("no status for %s on %d", rule, pid)
	return RuleStatus{}
}

// waitState waits until the rule is in state (actions run on their own
// goroutine).
func (h *harness) waitState(pid int, rule string, want State) RuleStatus {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.state(pid, rule)
		if s.State == want {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("rule %s on %d: state %s (%s), want %s", rule, pid, s.State, s.Reason, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// cpu feeds n cpu-usage samples of value v, one second apart.
func (h *harness) cpu(pid, n int, v float64) {
	for range n {
		h.clk.Add(time.Second)
		h.e.Sample(pid, &counters.Sample{Time: h.clk.Now(), Provider: "System.Runtime", Name: "cpu-usage", Kind: counters.KindMean, Value: v, Interval: time.Second})
	}
}

const cpuRule = `CollectionRules:
  HighCpu:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 80, SlidingWindowDuration: "00:00:05"}
    Actions: [{Type: Record, Settings: {Arg: hot}}]
`

func TestCounterThresholdHeldForWindow(t *testing.T) {
	h := newHarness(t, cpuRule, Options{})
	h.e.Add(ProcessInfo{PID: 1, Name: "app"}, nil)
	h.cpu(1, 4, 90) // 4 s of a 5 s window
	if s := h.state(1, "HighCpu"); s.State != StateRunning || s.Executions != 0 {
		t.Fatalf("fired early: %+v", s)
	}
	h.cpu(1, 1, 50) // a dip starts the window again
	h.cpu(1, 4, 90)
	if s := h.state(1, "HighCpu"); s.Executions != 0 {
		t.Fatalf("the dip did not reset the window: %+v", s)
	}
	h.cpu(1, 1, 90) // the fifth second above the line
	h.waitState(1, "HighCpu", StateRunning)
	if got := h.rec.list(); len(got) != 1 || got[0] != "HighCpu/Record#0:hot" {
		t.Fatalf("runs %v", got)
	}
	s := h.state(1, "HighCpu")
	if s.Executions != 1 || s.LastTrigger == nil || !strings.Contains(s.LastTriggerWhat, "System.Runtime/cpu-usage = 90 for 00:00:05") {
		t.Fatalf("status %+v", s)
	}
	// One window fires once: four more seconds above the line do not fire
	// again; the window starts over after the actions.
	h.cpu(1, 4, 95)
	if n := len(h.rec.list()); n != 1 {
		t.Fatalf("fired twice for one window: %d runs", n)
	}
	h.cpu(1, 1, 95)
	h.waitState(1, "HighCpu", StateRunning)
	if n := len(h.rec.list()); n != 2 {
		t.Fatalf("a second full window: %d runs", n)
	}
}

func TestCounterGapRestartsWindow(t *testing.T) {
	h := newHarness(t, cpuRule, Options{})
	h.e.Add(ProcessInfo{PID: 1}, nil)
	h.cpu(1, 4, 90)
	h.clk.Add(10 * time.Second) // no values for 10 s: the session stalled
	h.cpu(1, 1, 90)
	if s := h.state(1, "HighCpu"); s.Executions != 0 {
		t.Fatalf("a gap counted as above the line: %+v", s)
	}
	h.cpu(1, 4, 90)
	h.waitState(1, "HighCpu", StateRunning)
	if s := h.state(1, "HighCpu"); s.Executions != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestCounterLessThanAndRange(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  Low:
    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, LessThan: 10, SlidingWindowDuration: 2s}}
    Actions: [{Type: Record}]
  Band:
    Trigger: {Type: EventCounter, Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 40, LessThan: 60, SlidingWindowDuration: 2s}}
    Actions: [{Type: Record}]
`, Options{})
	h.e.Add(ProcessInfo{PID: 7}, nil)
	h.cpu(7, 2, 50)
	h.waitState(7, "Band", StateRunning)
	h.cpu(7, 2, 5)
	h.waitState(7, "Low", StateRunning)
	h.cpu(7, 2, 60) // the bounds are excluded
	h.cpu(7, 2, 10)
	if b, l := h.state(7, "Band"), h.state(7, "Low"); b.Executions != 1 || l.Executions != 1 {
		t.Fatalf("band %+v low %+v", b, l)
	}
}

func TestMeterHistogramPercentile(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  SlowP95:
    Trigger: {Type: EventMeter, Settings: {MeterName: Microsoft.AspNetCore.Hosting, InstrumentName: http.server.request.duration, HistogramPercentile: 95, GreaterThan: 0.5, SlidingWindowDuration: 2s}}
    Actions: [{Type: Record}]
  Gauge:
    Trigger: {Type: EventMeter, Settings: {MeterName: M, InstrumentName: queue, GreaterThan: 100, SlidingWindowDuration: 1s}}
    Actions: [{Type: Record}]
`, Options{})
	h.e.Add(ProcessInfo{PID: 3}, nil)
	hist := func(p95 float64) {
		h.clk.Add(time.Second)
		h.e.Sample(3, &counters.Sample{Time: h.clk.Now(), Provider: "Microsoft.AspNetCore.Hosting", Name: "http.server.request.duration", Meter: true,
			Kind: counters.KindHistogram, Interval: time.Second, Tags: []counters.Tag{{Key: "http.route", Value: "/a"}},
			Quantiles: []counters.Quantile{{Quantile: 0.5, Value: 0.1}, {Quantile: 0.95, Value: p95}, {Quantile: 0.99, Value: 2}}})
	}
	hist(0.9)
	hist(0.4) // p50/p99 are above, p95 is not: no fire
	hist(0.9)
	if s := h.state(3, "SlowP95"); s.Executions != 0 {
		t.Fatalf("%+v", s)
	}
	hist(0.7)
	h.waitState(3, "SlowP95", StateRunning)
	if s := h.state(3, "SlowP95"); s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "{http.route=/a}") {
		t.Fatalf("%+v", s)
	}
	// An EventCounter of the same names is not a Meter instrument.
	h.e.Sample(3, &counters.Sample{Time: h.clk.Now(), Provider: "M", Name: "queue", Kind: counters.KindMean, Value: 500, Interval: time.Second})
	if s := h.state(3, "Gauge"); s.Executions != 0 {
		t.Fatalf("an EventCounter fired an EventMeter trigger: %+v", s)
	}
	h.e.Sample(3, &counters.Sample{Time: h.clk.Now(), Provider: "M", Name: "queue", Meter: true, Kind: counters.KindGauge, Value: 500, Interval: time.Second})
	h.waitState(3, "Gauge", StateRunning)
	if s := h.state(3, "Gauge"); s.Executions != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestActionCountWithoutWindowFinishes(t *testing.T) {
	h := newHarness(t, cpuRule+"    Limits: {ActionCount: 2}\n", Options{})
	h.e.Add(ProcessInfo{PID: 1}, nil)
	h.cpu(1, 5, 90)
	h.waitState(1, "HighCpu", StateRunning)
	h.cpu(1, 5, 90)
	s := h.waitState(1, "HighCpu", StateFinished)
	if s.Executions != 2 || !strings.Contains(s.Reason, "ActionCount 2 reached") {
		t.Fatalf("%+v", s)
	}
	h.cpu(1, 20, 90)
	if n := len(h.rec.list()); n != 2 {
		t.Fatalf("a finished rule ran again: %d", n)
	}
	if st := h.e.Needs(1); len(st.Counters) != 0 {
		t.Fatalf("a finished rule still needs %+v", st)
	}
}

func TestActionCountSlidingWindowThrottles(t *testing.T) {
	h := newHarness(t, cpuRule+"    Limits: {ActionCount: 1, ActionCountSlidingWindowDuration: \"00:01:00\"}\n", Options{})
	h.e.Add(ProcessInfo{PID: 1}, nil)
	h.cpu(1, 5, 90)
	h.waitState(1, "HighCpu", StateRunning)
	h.cpu(1, 5, 90) // 10 s after the first: throttled
	s := h.state(1, "HighCpu")
	if s.State != StateThrottled || s.Throttled != 1 || !strings.Contains(s.Reason, "ActionCount 1 reached within 00:01:00") {
		t.Fatalf("%+v", s)
	}
	h.clk.Add(time.Minute)
	h.e.Tick()
	h.state(1, "HighCpu")
	if s := h.state(1, "HighCpu"); s.State != StateRunning {
		t.Fatalf("not running again after the window: %+v", s)
	}
	h.cpu(1, 5, 90)
	h.waitState(1, "HighCpu", StateRunning)
	if n := len(h.rec.list()); n != 2 {
		t.Fatalf("runs %d", n)
	}
	if got := testutil.ToFloat64(h.e.metrics.throttled.WithLabelValues("HighCpu")); got != 1 {
		t.Fatalf("throttled metric %v", got)
	}
}

func TestRuleDuration(t *testing.T) {
	h := newHarness(t, cpuRule+"    Limits: {RuleDuration: \"00:00:30\"}\n", Options{})
	h.e.Add(ProcessInfo{PID: 1}, nil)
	h.clk.Add(29 * time.Second)
	h.e.Tick()
	if s := h.state(1, "HighCpu"); s.State != StateRunning {
		t.Fatalf("%+v", s)
	}
	h.clk.Add(time.Second)
	h.e.Tick()
	if s := h.state(1, "HighCpu"); s.State != StateFinished || !strings.Contains(s.Reason, "RuleDuration 00:00:30 passed") {
		t.Fatalf("%+v", s)
	}
	h.cpu(1, 10, 99)
	if n := len(h.rec.list()); n != 0 {
		t.Fatalf("ran after its duration: %d", n)
	}
}

func TestStartupAndFilters(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  OnStart:
    Filters: [{ProcessName: web}, {CommandLine: "--prod", MatchType: Contains}]
    Trigger: {Type: Startup}
    Actions: [{Name: First, Type: Record, Settings: {Arg: a}}, {Type: Record, Settings: {Arg: "got $(Actions.First.Value)"}}]
`, Options{})
	if got := h.e.Add(ProcessInfo{PID: 10, Name: "worker", CommandLine: "worker --prod"}, nil); len(got) != 0 {
		t.Fatalf("applied to a process the filters exclude: %v", got)
	}
	if got := h.e.Add(ProcessInfo{PID: 11, Name: "Web", CommandLine: "web --dev"}, nil); len(got) != 0 {
		t.Fatalf("applied with one filter failing: %v", got)
	}
	if got := h.e.Add(ProcessInfo{PID: 12, Name: "Web", CommandLine: "web --prod"}, nil); len(got) != 1 {
		t.Fatalf("not applied: %v", got)
	}
	s := h.waitState(12, "OnStart", StateFinished)
	if s.Executions != 1 || !strings.Contains(s.Reason, "Startup") {
		t.Fatalf("%+v", s)
	}
	got := h.rec.list()
	if len(got) != 2 || got[0] != "OnStart/First:a" || got[1] != "OnStart/Record#1:got v12" {
		t.Fatalf("runs %v", got)
	}
}

// Action lists of one process run one at a time, in the order their
// triggers fired; another process's run alongside.
func TestActionsQueuedPerProcess(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  A:
    Trigger: {Type: EventCounter, Settings: {ProviderName: P, CounterName: a, GreaterThan: 0, SlidingWindowDuration: 1s}}
    Actions: [{Type: Record, Settings: {Block: true, Arg: a1}}, {Type: Record, Settings: {Arg: a2}}]
  B:
    Trigger: {Type: EventCounter, Settings: {ProviderName: P, CounterName: b, GreaterThan: 0, SlidingWindowDuration: 1s}}
    Actions: [{Type: Record, Settings: {Block: true, Arg: b1}}]
`, Options{})
	h.rec.release = make(chan struct{})
	h.e.Add(ProcessInfo{PID: 1}, nil)
	h.e.Add(ProcessInfo{PID: 2}, nil)
	s := func(pid int, name string) {
		h.e.Sample(pid, &counters.Sample{Time: h.clk.Now(), Provider: "P", Name: name, Value: 1, Interval: time.Second})
	}
	s(1, "a")
	s(1, "b")
	s(2, "a")
	// Both processes' first actions start; process 1's B waits for A.
	waitFor(t, func() bool { return h.rec.running.Load() == 2 })
	if st := h.state(1, "B"); st.State != StateActionExecuting {
		t.Fatalf("B: %+v", st)
	}
	if got := h.rec.list(); len(got) != 2 {
		t.Fatalf("started %v", got)
	}
	close(h.rec.release)
	h.waitState(1, "B", StateRunning)
	h.waitState(1, "A", StateRunning)
	h.waitState(2, "A", StateRunning)
	h.rec.mu.Lock()
	got := append([]string(nil), h.rec.order...)
	h.rec.mu.Unlock()
	ia2, ib1 := index(got, "1:A/Record#1:a2"), index(got, "1:B/Record#0:b1")
	if ia2 < 0 || ib1 < 0 || ib1 < ia2 || len(got) != 5 {
		t.Fatalf("process 1's B did not wait for the end of A: %v", got)
	}
	if m := h.rec.maxConc.Load(); m != 2 {
		t.Fatalf("at most %d actions ran at once, want 2 (one per process)", m)
	}
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeEgress records what it is given, or fails.
type fakeEgress struct {
	mu   sync.Mutex
	got  []Artifact
	fail bool
}

func (f *fakeEgress) Egress(_ context.Context, provider string, a Artifact) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return "", errors.New("bucket unreachable")
	}
	f.got = append(f.got, a)
	return "s3://" + provider + "/" + a.Name, nil
}

func TestOperationsAndEgress(t *testing.T) {
	eg := &fakeEgress{}
	h := newHarness(t, `CollectionRules:
  R:
    Trigger: {Type: EventCounter, Settings: {ProviderName: P, CounterName: c, GreaterThan: 0, SlidingWindowDuration: 1s}}
    Actions:
      - {Name: F, Type: RecordFile, Settings: {Egress: store}}
      - {Type: Record, Settings: {Arg: "$(Actions.F.EgressPath)"}}
`, Options{Egress: eg})
	h.e.Add(ProcessInfo{PID: 5}, nil)
	h.e.Sample(5, &counters.Sample{Provider: "P", Name: "c", Value: 1, Interval: time.Second})
	h.waitState(5, "R", StateRunning)
	ops := h.e.Operations()
	if len(ops) != 1 {
		t.Fatalf("operations %+v", ops)
	}
	op := ops[0]
	if op.Status != OperationSucceeded || op.EgressPath != "s3://store/R_5.bin" || op.EgressProvider != "store" || op.Ended == nil || op.Type != "RecordFile" {
		t.Fatalf("operation %+v", op)
	}
	if got := h.rec.list(); got[len(got)-1] != "R/Record#1:s3://store/R_5.bin" {
		t.Fatalf("the egress path did not reach the next action: %v", got)
	}
	if len(eg.got) != 1 || eg.got[0].PID != 5 || eg.got[0].Rule != "R" || eg.got[0].Action != "F" {
		t.Fatalf("egress got %+v", eg.got)
	}
	// A failed egress fails the operation and keeps the file, saying where.
	eg.fail = true
	h.e.Sample(5, &counters.Sample{Provider: "P", Name: "c", Value: 1, Interval: time.Second})
	h.waitState(5, "R", StateRunning)
	ops = h.e.Operations()
	op = ops[len(ops)-1]
	if op.Status != OperationFailed || !strings.Contains(op.Error, "egress to store failed, the artifact is kept at "+op.Artifact) || !strings.Contains(op.Error, "bucket unreachable") {
		t.Fatalf("operation %+v", op)
	}
	if _, err := os.Stat(op.Artifact); err != nil {
		t.Fatalf("the artifact is gone: %v", err)
	}
	if n := len(h.rec.list()); n != 3 {
		t.Fatalf("the action after a failed one ran: %v", h.rec.list())
	}
	if got := testutil.ToFloat64(h.e.metrics.egressFailures.WithLabelValues("R", "store")); got != 1 {
		t.Fatalf("egress failures %v", got)
	}
}

func TestCancelOperation(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  R:
    Trigger: {Type: Startup}
    Actions: [{Type: RecordFile, Settings: {Block: true}}, {Type: Record}]
`, Options{})
	h.rec.release = make(chan struct{})
	h.e.Add(ProcessInfo{PID: 5}, nil)
	waitFor(t, func() bool { return len(h.e.Operations()) == 1 })
	id := h.e.Operations()[0].ID
	if op, ok := h.e.Operation(id); !ok || op.Status != OperationRunning {
		t.Fatalf("%+v %v", op, ok)
	}
	if err := h.e.Cancel(id); err != nil {
		t.Fatal(err)
	}
	h.waitState(5, "R", StateFinished)
	op, _ := h.e.Operation(id)
	if op.Status != OperationCancelled {
		t.Fatalf("%+v", op)
	}
	if err := h.e.Cancel(id); !errors.Is(err, ErrOperationDone) {
		t.Fatalf("cancel again: %v", err)
	}
	if err := h.e.Cancel("nope"); !errors.Is(err, ErrNoOperation) {
		t.Fatalf("cancel unknown: %v", err)
	}
	if n := len(h.rec.list()); n != 1 {
		t.Fatalf("the action after a cancelled one ran: %v", h.rec.list())
	}
	if got := testutil.ToFloat64(h.e.metrics.actions.WithLabelValues("R", "RecordFile", "cancelled")); got != 1 {
		t.Fatalf("cancelled metric %v", got)
	}
}

func TestRemoveCancelsAndFinishes(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  R:
    Trigger: {Type: Startup}
    Actions: [{Type: RecordFile, Settings: {Block: true}}]
`, Options{})
	h.rec.release = make(chan struct{})
	h.e.Add(ProcessInfo{PID: 5}, nil)
	waitFor(t, func() bool { return h.rec.running.Load() == 1 })
	h.e.Remove(5)
	waitFor(t, func() bool { return h.rec.running.Load() == 0 })
	if len(h.e.Status()) != 0 {
		t.Fatalf("%+v", h.e.Status())
	}
	waitFor(t, func() bool { return h.e.Operations()[0].Status == OperationCancelled })
}

func aspnetHarness(t *testing.T, trigger string) *harness {
	h := newHarness(t, "CollectionRules:\n  W:\n    Trigger: "+trigger+"\n    Actions: [{Type: Record}]\n", Options{})
	h.e.Add(ProcessInfo{PID: 9}, nil)
	return h
}

func TestAspNetRequestCount(t *testing.T) {
	h := aspnetHarness(t, `{Type: AspNetRequestCount, Settings: {RequestCount: 3, SlidingWindowDuration: "00:00:10", IncludePaths: ["/api/**/*"], ExcludePaths: ["/api/health"]}}`)
	req := func(path string, dt time.Duration) {
		h.clk.Add(dt)
		h.e.Request(9, Request{ID: path, Path: path, Method: "GET", Time: h.clk.Now()})
	}
	req("/api/a", time.Second)
	req("/api/health", time.Second) // excluded
	req("/home", time.Second)       // not included
	req("/api/b", time.Second)
	req("/api/c", 20*time.Second) // the first two left the window
	req("/api/d", time.Second)
	if s := h.state(9, "W"); s.Executions != 0 {
		t.Fatalf("%+v", s)
	}
	req("/api/e", time.Second)
	s := h.waitState(9, "W", StateRunning)
	if s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "GET /api/e") {
		t.Fatalf("%+v", s)
	}
}

func TestAspNetRequestDuration(t *testing.T) {
	h := aspnetHarness(t, `{Type: AspNetRequestDuration, Settings: {RequestCount: 2, RequestDuration: "00:00:02", SlidingWindowDuration: "00:01:00"}}`)
	now := func() time.Time { return h.clk.Now() }
	h.e.Request(9, Request{ID: "1", Path: "/a", Time: now()})
	h.e.Request(9, Request{ID: "1", Path: "/a", Stop: true, StatusCode: 200, Duration: time.Second, Time: now()})
	h.e.Request(9, Request{ID: "2", Path: "/b", Time: now()})
	h.e.Request(9, Request{ID: "2", Path: "/b", Stop: true, StatusCode: 200, Duration: 3 * time.Second, Time: now()})
	if s := h.state(9, "W"); s.Executions != 0 {
		t.Fatalf("one slow request fired: %+v", s)
	}
	// A request still running past the threshold counts (once).
	h.e.Request(9, Request{ID: "3", Path: "/hung", Time: now()})
	h.clk.Add(time.Second)
	h.e.Tick()
	if s := h.state(9, "W"); s.Executions != 0 {
		t.Fatalf("%+v", s)
	}
	h.clk.Add(2 * time.Second)
	h.e.Tick()
	s := h.waitState(9, "W", StateRunning)
	if s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "still running") {
		t.Fatalf("%+v", s)
	}
	h.e.Request(9, Request{ID: "3", Path: "/hung", Stop: true, Duration: 10 * time.Second, Time: now()})
	h.e.Request(9, Request{ID: "4", Path: "/c", Time: now()})
	h.e.Request(9, Request{ID: "4", Path: "/c", Stop: true, Duration: 5 * time.Second, Time: now()})
	if s := h.state(9, "W"); s.Executions != 1 {
		t.Fatalf("the hung request counted twice: %+v", s)
	}
}

func TestAspNetResponseStatus(t *testing.T) {
	h := aspnetHarness(t, `{Type: AspNetResponseStatus, Settings: {StatusCodes: ["500-599", "429"], ResponseCount: 3}}`)
	for i, code := range []int{200, 500, 404, 429, 201} {
		h.e.Request(9, Request{ID: fmt.Sprint(i), Path: "/x", Stop: true, StatusCode: code, Time: h.clk.Now()})
	}
	if s := h.state(9, "W"); s.Executions != 0 {
		t.Fatalf("%+v", s)
	}
	h.e.Request(9, Request{ID: "9", Path: "/x", Stop: true, StatusCode: 503, Time: h.clk.Now()})
	h.waitState(9, "W", StateRunning)
	if s := h.state(9, "W"); s.Executions != 1 {
		t.Fatalf("%+v", s)
	}
}

// eventOf makes an event of a self-described provider.
func eventOf(t *testing.T, provider, name string, id uint32, fields []nettrace.Field, values nettrace.Object) *nettrace.Event {
	t.Helper()
	p, err := nettrace.AppendPayload(nil, fields, values)
	if err != nil {
		t.Fatal(err)
	}
	return &nettrace.Event{Metadata: &nettrace.Metadata{ProviderName: provider, EventName: name, EventID: id, Fields: fields}, Payload: p}
}

func TestEventPipeEventTrigger(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  Finish:
    Trigger: {Type: EventPipeEvent, Settings: {ProviderName: Clrdiag-Test, EventName: Finish, PayloadFilter: {code: "42", reason: done}, Count: 2, SlidingWindowDuration: "00:00:10"}}
    Actions: [{Type: Record}]
`, Options{})
	h.e.Add(ProcessInfo{PID: 4}, nil)
	fields := []nettrace.Field{{Name: "reason", Type: nettrace.TypeString}, {Name: "code", Type: nettrace.TypeInt32}}
	ev := func(reason string, code int32) *nettrace.Event {
		return eventOf(t, "Clrdiag-Test", "Finish", 6, fields, nettrace.Object{{Name: "reason", Value: reason}, {Name: "code", Value: code}})
	}
	h.e.Event(4, ev("done", 41))
	h.e.Event(4, ev("other", 42))
	h.e.Event(4, eventOf(t, "Other", "Finish", 6, fields, nettrace.Object{{Name: "reason", Value: "done"}, {Name: "code", Value: int32(42)}}))
	h.e.Event(4, ev("done", 42))
	if s := h.state(4, "Finish"); s.Executions != 0 {
		t.Fatalf("fired on the first of two: %+v", s)
	}
	h.e.Event(4, ev("done", 42))
	s := h.waitState(4, "Finish", StateRunning)
	if s.Executions != 1 {
		t.Fatalf("%+v", s)
	}
	n := h.e.Needs(4)
	if len(n.Providers) != 1 || n.Providers[0].Name != "Clrdiag-Test" || len(n.Counters) != 0 {
		t.Fatalf("needs %+v", n)
	}
}

func TestDecodeAspNet(t *testing.T) {
	kv := nettrace.Field{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Key", Type: nettrace.TypeString}, {Name: "Value", Type: nettrace.TypeString}}}
	fields := []nettrace.Field{{Name: "SourceName", Type: nettrace.TypeString}, {Name: "EventName", Type: nettrace.TypeString},
		{Name: "Arguments", Type: nettrace.TypeArray, Elem: &kv}}
	pair := func(k, v string) any { return nettrace.Object{{Name: "Key", Value: k}, {Name: "Value", Value: v}} }
	ev := eventOf(t, "Microsoft-Diagnostics-DiagnosticSource", "Activity1Stop", 5, fields, nettrace.Object{
		{Name: "SourceName", Value: "Microsoft.AspNetCore"},
		{Name: "EventName", Value: "Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop"},
		{Name: "Arguments", Value: []any{pair("Path", "/api/x"), pair("StatusCode", "503"), pair("ActivityId", "00-ab-cd-01"), pair("ActivityDuration", "35000000")}},
	})
	r, ok := DecodeAspNet(ev)
	if !ok || !r.Stop || r.Path != "/api/x" || r.StatusCode != 503 || r.ID != "00-ab-cd-01" || r.Duration != 3500*time.Millisecond {
		t.Fatalf("%+v %v", r, ok)
	}
	h := aspnetHarness(t, `{Type: AspNetResponseStatus, Settings: {StatusCodes: [503], ResponseCount: 1}}`)
	h.e.Event(9, ev)
	h.waitState(9, "W", StateRunning)
	if n := h.e.Needs(9); len(n.Providers) != 1 || n.Providers[0].Name != "Microsoft-Diagnostics-DiagnosticSource" {
		t.Fatalf("needs %+v", n)
	}
}

func TestMetricsAndLogging(t *testing.T) {
	h := newHarness(t, cpuRule, Options{})
	h.e.Add(ProcessInfo{PID: 1, Name: "app"}, nil)
	h.cpu(1, 5, 90)
	h.waitState(1, "HighCpu", StateRunning)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(h.e); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "clrdiag_rule_triggers_total", "clrdiag_rule_actions_total", "clrdiag_rule_processes"); err != nil || n != 6 {
		t.Fatalf("%d series, %v", n, err)
	}
	if got := testutil.ToFloat64(h.e.metrics.actions.WithLabelValues("HighCpu", "Record", "succeeded")); got != 1 {
		t.Fatalf("actions %v", got)
	}
	waitFor(t, func() bool {
		return strings.Contains(h.logText(), `"msg":"collection rule action succeeded"`)
	})
	log := h.logText()
	for _, want := range []string{`"msg":"collection rules applied"`, `"msg":"collection rule triggered","rule":"HighCpu","pid":1`, `"msg":"collection rule action started"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}

func (h *harness) logText() string {
	return h.log.String()
}

func TestNewChecksWhatActionsNeed(t *testing.T) {
	cfg, err := Load([]Source{{Data: []byte(`Egress: {FileSystem: {out: {DirectoryPath: /x}}}
CollectionRules:
  R:
    Trigger: {Type: Startup}
    Actions: [{Type: CollectDump, Settings: {Egress: out}}]
`)}}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "CollectionRules.R.Actions[0].Settings.Egress: names egress provider \"out\", but the monitor has no egress configured") ||
		!strings.Contains(err.Error(), "give the monitor an artifact directory") {
		t.Fatalf("%v", err)
	}
	if _, err := New(cfg, Options{Egress: &fakeEgress{}, ArtifactDir: filepath.Join(t.TempDir(), "none")}); err == nil || !strings.Contains(err.Error(), "is not a directory that exists") {
		t.Fatalf("%v", err)
	}
}

// stubTarget answers ProcessInfo; the other methods are not called.
type stubTarget struct {
	Target
	calls atomic.Int32
}

func (s *stubTarget) ProcessInfo(context.Context) (*ipc.ProcessInfo, error) {
	s.calls.Add(1)
	return &ipc.ProcessInfo{PID: 77}, nil
}

type infoAction struct{}

func (infoAction) Run(ctx context.Context, r *Run) (Outputs, error) {
	for range 2 {
		if _, err := r.Target.ProcessInfo(ctx); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// Options.Turn is taken around each command an action sends, and given back.
func TestTurnAroundCommands(t *testing.T) {
	rec := &recorder{}
	reg := testRegistry(rec)
	reg.Register(ActionType{Name: "Info", New: func(*Settings) (Action, error) { return infoAction{}, nil }})
	cfg, err := Load([]Source{{Data: []byte("CollectionRules:\n  R:\n    Trigger: {Type: Startup}\n    Actions: [{Type: Info}]\n")}}, LoadOptions{Actions: reg})
	if err != nil {
		t.Fatal(err)
	}
	var taken, held atomic.Int32
	e, err := New(cfg, Options{Turn: func(ctx context.Context, pid int) (func(), error) {
		if pid != 8 || held.Add(1) != 1 {
			t.Errorf("turn for pid %d, %d held", pid, held.Load())
		}
		taken.Add(1)
		return func() { held.Add(-1) }, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := &stubTarget{}
	e.Add(ProcessInfo{PID: 8}, st)
	waitFor(t, func() bool { return e.Status()[0].State == StateFinished })
	if taken.Load() != 2 || held.Load() != 0 || st.calls.Load() != 2 {
		t.Fatalf("turns taken %d, held %d, calls %d", taken.Load(), held.Load(), st.calls.Load())
	}
}
