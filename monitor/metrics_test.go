//go:build unix

package monitor_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
)

// counterRuntime is a fake .NET Core 3.1 runtime whose tracing sessions
// publish the System.Runtime EventCounter cpu-usage every 10 ms, with the
// value the test last set, for the interval the session asked for.
type counterRuntime struct {
	*ipctest.Server
	value    atomic.Int64
	paused   atomic.Bool // publish nothing
	sessions atomic.Int32
	live     atomic.Int32
}

func newCounterRuntime(t *testing.T, pid int) *counterRuntime {
	t.Helper()
	cr := &counterRuntime{}
	cr.Server = fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: pid, Tracing: cr.tracing})
	return cr
}

func (cr *counterRuntime) tracing(ctx context.Context, s *ipctest.TracingSession) error {
	cr.sessions.Add(1)
	cr.live.Add(1)
	defer cr.live.Add(-1)
	intervalMS := 1000
	for _, p := range s.Request.Providers {
		if v, ok := strings.CutPrefix(p.Args, "EventCounterIntervalSec="); ok && p.Name == "System.Runtime" {
			secs, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			intervalMS = int(secs*1000 + 0.5)
		}
	}
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
	if err != nil {
		return err
	}
	sf := func(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeString} }
	fields := []nettrace.Field{sf("Name"), sf("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble},
		{Name: "StandardDeviation", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
		{Name: "Min", Type: nettrace.TypeDouble}, {Name: "Max", Type: nettrace.TypeDouble},
		{Name: "IntervalSec", Type: nettrace.TypeSingle}, sf("Series"), sf("CounterType"), sf("Metadata"), sf("DisplayUnits")}
	md := &nettrace.Metadata{ID: 1, ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters", Level: 4,
		Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: fields}}}}}
	if err := w.AddMetadata(md); err != nil {
		return err
	}
	start := time.Now()
	var seq uint32
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if cr.paused.Load() {
			select {
			case <-s.Stopped:
				return w.Close()
			case <-ctx.Done():
				return nil
			case <-tick.C:
				continue
			}
		}
		v := float64(cr.value.Load())
		vals := []any{"cpu-usage", "CPU Usage", v, 0.0, int32(1), v, v, float32(intervalMS) / 1000,
			"Interval=" + strconv.Itoa(intervalMS), "Mean", "", "%"}
		inner := make(nettrace.Object, len(vals))
		for i, x := range vals {
			inner[i] = nettrace.NamedValue{Name: fields[i].Name, Value: x}
		}
		payload, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Value: nettrace.Object{{Name: "Payload", Value: inner}}}})
		if err != nil {
			return err
		}
		seq++
		ev := &nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 9, CaptureThreadID: 9, Timestamp: int64(time.Since(start)), Payload: payload}
		if err := w.WriteEvent(ev); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		select {
		case <-s.Stopped:
			return w.Close()
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// mutableSource is a Source whose processes the test changes.
type mutableSource struct {
	mu    sync.Mutex
	procs []monitor.Process
}

func (m *mutableSource) set(procs ...monitor.Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.procs = procs
}

func (m *mutableSource) Processes(context.Context) ([]monitor.Process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]monitor.Process(nil), m.procs...), nil
}

// sample finds the value of a series (name and labels as exposed) in a
// /metrics text.
func sample(text, series string) (float64, bool) {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// waitMetrics scrapes until cond holds on the text or 10 s pass.
func waitMetrics(t *testing.T, get func() string, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var text string
	for time.Now().Before(deadline) {
		text = get()
		if cond(text) {
			return text
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("/metrics never showed %s:\n%s", what, text)
	return ""
}

const cpu901 = `systemruntime_cpu_usage_ratio{pid="901",process_name="app"}`

// A scrape answers at once from the long-lived session's latest values,
// which change across scrapes; one session serves every scrape.
func TestMetricsFromLongLivedSession(t *testing.T) {
	cr := newCounterRuntime(t, 901)
	cr.value.Store(7)
	// A one-second refresh interval: a scrape that listened to the process
	// would take at least that long.
	hs := serve(t, monitor.Config{MetricsWindow: time.Second, DiscoveryInterval: 20 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 901, Name: "app", Dialer: cr}}})
	get := func() string {
		code, body := do(t, hs, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return string(body)
	}
	waitMetrics(t, get, "cpu-usage 7", func(s string) bool { v, ok := sample(s, cpu901); return ok && v == 7.0/100 })

	start := time.Now()
	text := get()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a scrape took %v", d)
	}
	for _, want := range []string{`clrdiag_collector_up{pid="901",process_name="app"} 1`, "clrdiag_scrape_errors 0", "clrdiag_discovery_up 1"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if v, ok := sample(text, cpu901); !ok || v != 7.0/100 {
		t.Errorf("cpu-usage %v (%v), want 7", v, ok)
	}

	cr.value.Store(42)
	waitMetrics(t, get, "cpu-usage 42", func(s string) bool { v, ok := sample(s, cpu901); return ok && v == 42.0/100 })
	if n := cr.sessions.Load(); n != 1 {
		t.Errorf("%d sessions opened, want 1 long-lived one", n)
	}
}

// A process that goes away loses its series; a new one gets a session; Close
// stops every session.
func TestMetricsFollowDiscovery(t *testing.T) {
	a := newCounterRuntime(t, 901)
	a.value.Store(1)
	b := newCounterRuntime(t, 902)
	b.value.Store(2)
	src := &mutableSource{}
	src.set(monitor.Process{PID: 901, Name: "app", Dialer: a})
	m, err := monitor.New(monitor.Config{NoAuth: true, MetricsWindow: 100 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	get := func() string {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, localRequest("GET", "/metrics"))
		if rec.Code != 200 {
			t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}
	const cpu902 = `systemruntime_cpu_usage_ratio{pid="902",process_name="other"}`
	waitMetrics(t, get, "pid 901", func(s string) bool { _, ok := sample(s, cpu901); return ok })

	src.set(monitor.Process{PID: 902, Name: "other", Dialer: b})
	text := waitMetrics(t, get, "pid 902 only", func(s string) bool {
		_, ok1 := sample(s, cpu901)
		v2, ok2 := sample(s, cpu902)
		return !ok1 && ok2 && v2 == 2.0/100
	})
	if strings.Contains(text, `pid="901"`) {
		t.Errorf("series of the ended process remain:\n%s", text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.live.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if a.live.Load() != 0 {
		t.Error("the dropped process's session was not stopped")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the client side; the fake's side ends just after.
	deadline = time.Now().Add(5 * time.Second)
	for b.live.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.live.Load(); n != 0 {
		t.Errorf("%d sessions still streaming after Close", n)
	}
	if text := get(); strings.Contains(text, "systemruntime_") || strings.Contains(text, "clrdiag_collector_up{") {
		t.Errorf("series after Close:\n%s", text)
	}
}

// flakyDialer refuses the first n connections, then dials the fake.
type flakyDialer struct {
	d       *counterRuntime
	refuse  atomic.Int32
	refused atomic.Int32
}

var errRefused = errors.New("connection refused (test)")

func (f *flakyDialer) Dial(ctx context.Context) (net.Conn, error) {
	if f.refuse.Add(-1) >= 0 {
		f.refused.Add(1)
		return nil, errRefused
	}
	return f.d.Dial(ctx)
}

// A process whose session cannot be opened is reported and retried; once it
// opens, its values appear. A session that breaks is reported too.
func TestMetricsFailingSession(t *testing.T) {
	cr := newCounterRuntime(t, 901)
	cr.value.Store(5)
	fd := &flakyDialer{d: cr}
	fd.refuse.Store(1 << 30)
	hs := serve(t, monitor.Config{MetricsWindow: 20 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 901, Name: "app", Dialer: fd}}})
	get := func() string {
		code, body := do(t, hs, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return string(body)
	}
	down := func(s string) bool {
		return strings.Contains(s, `clrdiag_collector_up{pid="901",process_name="app"} 0`+"\n") && strings.Contains(s, "clrdiag_scrape_errors 1\n")
	}
	text := waitMetrics(t, get, "a failing session", down)
	if _, ok := sample(text, cpu901); ok {
		t.Errorf("values for a process without a session:\n%s", text)
	}
	if v, ok := sample(text, `clrdiag_collector_errors_total{pid="901",process_name="app"}`); !ok || v < 1 {
		t.Errorf("errors total %v (%v):\n%s", v, ok, text)
	}
	// Retried with backoff (20, 40, 80 ms...): a few attempts, not a storm.
	time.Sleep(300 * time.Millisecond)
	if n := fd.refused.Load(); n < 2 || n > 30 {
		t.Errorf("%d connection attempts in ~300 ms", n)
	}

	fd.refuse.Store(0)
	waitMetrics(t, get, "the recovered session", func(s string) bool {
		v, ok := sample(s, cpu901)
		return ok && v == 5.0/100 && strings.Contains(s, "clrdiag_scrape_errors 0\n") &&
			strings.Contains(s, `clrdiag_collector_up{pid="901",process_name="app"} 1`+"\n")
	})

	// The runtime goes away without the source noticing: the stream is cut,
	// the values go and the error is reported.
	fd.refuse.Store(1 << 30)
	cr.Close()
	text = waitMetrics(t, get, "the broken session", down)
	if _, ok := sample(text, cpu901); ok {
		t.Errorf("stale values of a broken session:\n%s", text)
	}
}

// A session that stops publishing (as every session of a .NET Core 3.x
// runtime does when another session ends) is reported and reopened.
func TestMetricsStalledSession(t *testing.T) {
	cr := newCounterRuntime(t, 901)
	cr.value.Store(3)
	hs := serve(t, monitor.Config{MetricsWindow: 20 * time.Millisecond, DiscoveryInterval: time.Hour,
		Source: monitor.StaticSource{{PID: 901, Name: "app", Dialer: cr}}})
	get := func() string {
		code, body := do(t, hs, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return string(body)
	}
	waitMetrics(t, get, "cpu-usage 3", func(s string) bool { v, ok := sample(s, cpu901); return ok && v == 3.0/100 })
	cr.paused.Store(true)
	errs := `clrdiag_collector_errors_total{pid="901",process_name="app"}`
	if v, ok := sample(get(), errs); !ok || v != 0 {
		t.Fatalf("errors before the stall: %v (%v)", v, ok)
	}
	text := waitMetrics(t, get, "the stall", func(s string) bool { v, _ := sample(s, errs); return v == 1 })
	if _, ok := sample(text, cpu901); ok {
		t.Errorf("stale values of a stalled session:\n%s", text)
	}
	cr.value.Store(4)
	cr.paused.Store(false)
	waitMetrics(t, get, "cpu-usage 4", func(s string) bool { v, ok := sample(s, cpu901); return ok && v == 4.0/100 })
	if n := cr.sessions.Load(); n != 2 {
		t.Errorf("%d sessions, want 2 (the stalled one reopened once)", n)
	}
}

// firstWaits is a Source whose first listing (the collector's, made as the
// server starts) waits for the test to open its gate.
type firstWaits struct {
	procs []monitor.Process
	gate  chan struct{}
	calls atomic.Int32
}

func (f *firstWaits) Processes(ctx context.Context) ([]monitor.Process, error) {
	if f.calls.Add(1) == 1 {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.procs, nil
}

// Opening a session takes the process's turn: while a trace holds it, the
// collector waits.
func TestMetricsSessionTakesTurn(t *testing.T) {
	cr := newCounterRuntime(t, 901)
	src := &firstWaits{procs: []monitor.Process{{PID: 901, Name: "app", Dialer: cr}}, gate: make(chan struct{})}
	hs := serve(t, monitor.Config{MetricsWindow: 100 * time.Millisecond, DiscoveryInterval: time.Hour, Source: src})
	deadline := time.Now().Add(5 * time.Second)
	for src.calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	traceDone := make(chan struct{})
	go func() {
		defer close(traceDone)
		if code, body := do(t, hs, "GET", "/processes/901/trace?duration=400ms&providers=Foo"); code != 200 {
			t.Errorf("trace: %d %s", code, body)
		}
	}()
	for cr.sessions.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(src.gate) // the collector now finds the process, in the trace's turn
	time.Sleep(200 * time.Millisecond)
	if n := cr.sessions.Load(); n != 1 {
		t.Errorf("%d sessions while the trace holds the turn, want 1", n)
	}
	<-traceDone
	for cr.sessions.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := cr.sessions.Load(); n != 2 {
		t.Errorf("%d sessions after the trace, want 2 (the collector's)", n)
	}
}

// The metrics window becomes the sessions' refresh interval: it must be a
// whole number of milliseconds.
func TestMetricsConfig(t *testing.T) {
	if _, err := monitor.New(monitor.Config{NoAuth: true, MetricsWindow: 1500 * time.Microsecond, Source: monitor.StaticSource{}}); err == nil {
		t.Error("a 1.5 ms metrics window was accepted")
	}
	m, err := monitor.New(monitor.Config{NoAuth: true, NoMetrics: true, Source: monitor.StaticSource{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, localRequest("GET", "/metrics"))
	if rec.Code != 404 {
		t.Errorf("/metrics with NoMetrics: %d", rec.Code)
	}
}

// localRequest is a request for ServeHTTP that names the server as a local
// client does (httptest.NewRequest says example.com, which is refused).
func localRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Host = "localhost"
	return r
}
