//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/counterview"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// metricsStream writes what a .NET 8 target publishes for the Meter "Shop"
// and the System.Runtime EventCounters, for the given Metrics session id.
func metricsStream(t *testing.T, sid string) []byte {
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{SyncTimeUTC: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)})
	if err != nil {
		t.Error(err)
		return nil
	}
	s := func(n string) nettrace.Field { return nettrace.Field{Name: n, Type: nettrace.TypeString} }
	head := []nettrace.Field{s("sessionId"), s("meterName"), s("meterVersion"), s("instrumentName"), s("unit"), s("tags")}
	rate := &nettrace.Metadata{ID: 1, ProviderName: "System.Diagnostics.Metrics", EventID: 4, EventName: "CounterRateValuePublished", Version: 2,
		Fields: append(append([]nettrace.Field(nil), head...), s("rate"), s("value"), nettrace.Field{Name: "instrumentId", Type: nettrace.TypeInt32})}
	hist := &nettrace.Metadata{ID: 2, ProviderName: "System.Diagnostics.Metrics", EventID: 6, EventName: "HistogramValuePublished", Version: 1,
		Fields: append(append([]nettrace.Field(nil), head...), s("quantiles"), nettrace.Field{Name: "count", Type: nettrace.TypeInt32}, nettrace.Field{Name: "sum", Type: nettrace.TypeDouble})}
	begin := &nettrace.Metadata{ID: 4, ProviderName: "System.Diagnostics.Metrics", EventID: 7, EventName: "BeginInstrumentReporting", Version: 2,
		Fields: []nettrace.Field{s("sessionId"), s("meterName"), s("meterVersion"), s("instrumentName"), s("instrumentType"), s("unit"), s("description"),
			s("instrumentTags"), s("meterTags"), s("meterScopeHash"), {Name: "instrumentId", Type: nettrace.TypeInt32}, s("telemetrySchemaUrl")}}
	mean := []nettrace.Field{s("Name"), s("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
		s("Series"), s("CounterType"), s("DisplayUnits")}
	ec := &nettrace.Metadata{ID: 3, ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters",
		Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: mean}}}}}
	events := []struct {
		md *nettrace.Metadata
		v  []any
	}{
		{begin, []any{sid, "Shop", "", "orders", "Counter`1", "", "", "kind=web", "region=eu,tier=1", "1234", int32(1), ""}},
		{rate, []any{sid, "Shop", "", "orders", "", "route=/a", "3", "10", int32(1)}},
		{rate, []any{"another-session", "Shop", "", "orders", "", "", "99", "99", int32(1)}},
		{hist, []any{sid, "Shop", "", "latency", "ms", "", "0.5=1;0.95=2;0.99=4", int32(9), 20.0}},
		{ec, []any{nettrace.Object{{Name: "Payload", Value: nettrace.Object{{Name: "Name", Value: "cpu-usage"}, {Name: "DisplayName", Value: "CPU Usage"},
			{Name: "Mean", Value: 12.5}, {Name: "Count", Value: int32(1)}, {Name: "Series", Value: "Interval=1000"}, {Name: "CounterType", Value: "Mean"}, {Name: "DisplayUnits", Value: "%"}}}}}},
	}
	for _, md := range []*nettrace.Metadata{rate, hist, ec, begin} {
		if err := w.AddMetadata(md); err != nil {
			t.Error(err)
		}
	}
	for i, e := range events {
		obj := make(nettrace.Object, len(e.v))
		for j, v := range e.v {
			obj[j] = nettrace.NamedValue{Name: e.md.Fields[j].Name, Value: v}
		}
		p, err := nettrace.AppendPayload(nil, e.md.Fields, obj)
		if err != nil {
			t.Error(err)
			return nil
		}
		if err := w.WriteEvent(&nettrace.Event{Metadata: e.md, SequenceNumber: uint32(i + 1), ThreadID: 1, CaptureThreadID: 1, Timestamp: int64(i+1) * 1e8, Payload: p}); err != nil {
			t.Error(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Error(err)
	}
	return buf.Bytes()
}

// countersRuntime is a fake .NET 8 process that streams metricsStream for
// the session id the client asked for and keeps the session open until
// StopTracing; sessions receives the Metrics provider arguments.
func countersRuntime(t *testing.T) (port string, sessions chan string) {
	_, port, sessions = countersRuntimeServer(t)
	return port, sessions
}

// countersRuntimeServer is countersRuntime with its server.
func countersRuntimeServer(t *testing.T) (srv *ipctest.Server, port string, sessions chan string) {
	sessions = make(chan string, 4)
	srv, port = fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		var args string
		for _, p := range s.Request.Providers {
			if p.Name == "System.Diagnostics.Metrics" {
				args = p.Args
			}
		}
		sessions <- args
		sid := ""
		for _, kv := range strings.Split(args, ";") {
			if v, ok := strings.CutPrefix(kv, "SessionId="); ok {
				sid = v
			}
		}
		if _, err := s.Stream.Write(metricsStream(t, sid)); err != nil {
			return err
		}
		select {
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return nil
	}})
	return srv, port, sessions
}

// p pauses the redrawn view and q ends monitor as Ctrl-C does.
func TestCountersMonitorKeys(t *testing.T) {
	srv, _, _ := countersRuntimeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := counters.Start(ctx, diag.NewClient(srv, nil), counters.Config{Specs: []counters.Spec{{Provider: "Shop"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	keys, typist := io.Pipe()
	go func() {
		time.Sleep(300 * time.Millisecond)
		typist.Write([]byte("p"))
		time.Sleep(300 * time.Millisecond)
		typist.Write([]byte("q"))
	}()
	var out, errOut bytes.Buffer
	v := &counterview.View{Terminal: true, Title: keysTitle}
	if err := monitor(ctx, &out, &errOut, v, 100*time.Millisecond, keys, sess.Run); err != nil {
		t.Fatalf("monitor: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("monitor ran until its context ended: q did not quit")
	}
	frames := strings.Split(out.String(), "\x1b[H")
	last := frames[len(frames)-1]
	if !strings.Contains(out.String(), "Status: Paused") || !strings.Contains(last, "Status: Stopped") || !strings.Contains(last, "orders") {
		t.Fatalf("frames:\n%q", out.String())
	}
	// Paused: no frame between the Paused one and the final one.
	if !strings.Contains(frames[len(frames)-2], "Status: Paused") {
		t.Fatalf("the display was redrawn while paused:\n%q", out.String())
	}
}

func TestCountersCollectFake(t *testing.T) {
	port, sessions := countersRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "c.csv")
	code, stdout, stderr := run(t, "counters", "collect", "--diagnostic-port", port, "--counters", "Shop,System.Runtime[cpu-usage]", "--duration", "1s", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if args := <-sessions; !strings.Contains(args, "SessionId=SHARED;Metrics=Shop,System.Runtime;RefreshInterval=1;MaxTimeSeries=1000;MaxHistograms=10;ClientId=") {
		t.Errorf(".NET 8 Metrics arguments %q", args)
	}
	if !strings.Contains(stdout, "Wrote 5 samples to "+out) { // the file's rows
		t.Errorf("stdout %q", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, data)
	}
	var got []string
	for _, r := range recs {
		got = append(got, strings.Join(r[1:], "|"))
	}
	want := []string{
		"Provider|Counter Name|Counter Type|Mean/Increment",
		"Shop|orders (Count / 1 sec)[route=/a]|Rate|3",
		"Shop|latency (ms)[Percentile=50]|Metric|1",
		"Shop|latency (ms)[Percentile=95]|Metric|2",
		"Shop|latency (ms)[Percentile=99]|Metric|4",
		"System.Runtime|CPU Usage (%)|Metric|12.5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CSV rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// JSON, stopped by --duration in dd:hh:mm:ss form.
	jout := filepath.Join(dir, "c.json")
	code, _, stderr = run(t, "counters", "collect", "--diagnostic-port", port, "--counters", "Shop[orders]", "--format", "json", "--duration", "00:00:00:01", "-o", jout)
	if code != 0 {
		t.Fatalf("json exit %d: %s", code, stderr)
	}
	data, _ = os.ReadFile(jout)
	var doc struct {
		TargetProcess string
		Events        []struct {
			Provider, Name, Tags, CounterType, MeterTags, InstrumentTags string
			Value                                                        float64
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, data)
	}
	if len(doc.Events) != 1 || doc.Events[0].Name != "orders (Count / 1 sec)" || doc.Events[0].Tags != "route=/a" || doc.Events[0].Value != 3 || doc.Events[0].CounterType != "Rate" ||
		doc.Events[0].MeterTags != "region=eu,tier=1" || doc.Events[0].InstrumentTags != "kind=web" {
		t.Errorf("JSON %s", data)
	}
}

func TestCountersMonitorFakePlain(t *testing.T) {
	port, _ := countersRuntime(t)
	// dotnet-counters' spelling of the view options is accepted; each value
	// arrives once, so there is no delta to show.
	code, stdout, stderr := run(t, "counters", "monitor", "--diagnostic-port", port, "--counters", "Shop", "--duration", "1500ms", "--refresh-interval", "0.5",
		"--showDeltas", "--abbreviateLargeNumbers=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "delta") {
		t.Errorf("a delta without a previous value:\n%s", stdout)
	}
	if strings.ContainsRune(stdout, '\x1b') {
		t.Errorf("escape sequences when stdout is not a terminal:\n%q", stdout)
	}
	// A rate per second: 3 in the 0.5 s interval.
	for _, want := range []string{"  Shop  orders (Count / 1 sec)[route=/a]  6\n", "  Shop  latency (ms)[Percentile=99]  4\n"} {
		if strings.Count(stdout, want) != 1 {
			t.Errorf("want one line ending %q in:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "  99\n") {
		t.Errorf("another session's value shown:\n%s", stdout)
	}
}

func TestCountersUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"counters", "monitor", "-p", "1", "--counters", "A[x"}, "never closed"},
		{[]string{"counters", "monitor", "-p", "1", "--duration", "soon"}, "--duration"},
		{[]string{"counters", "monitor", "-p", "1", "--duration", "1:x"}, "not a number"},
		{[]string{"counters", "collect", "-p", "1", "--refresh-interval", "0"}, "--refresh-interval"},
		{[]string{"counters", "collect", "-p", "1", "--format", "xml"}, "use csv or json"},
		{[]string{"counters", "collect", "-p", "1", "--max-histograms", "-1"}, "must be positive"},
		{[]string{"counters", "monitor"}, "no target process"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want exitUsage and %q", tt.args, code, stderr, tt.want)
		}
	}
}

func TestCountersList(t *testing.T) {
	code, out, _ := run(t, "counters", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	legacy, meter, ok := strings.Cut(out, "System.Runtime Meter")
	if !ok || !strings.Contains(legacy, "    cpu-usage ") || strings.Contains(legacy, "dotnet.gc.collections") ||
		!strings.Contains(meter, "    dotnet.gc.collections ") || strings.Contains(meter, "cpu-usage") {
		t.Fatalf("list not grouped:\n%s", out)
	}
	code, out, _ = run(t, "counters", "list", "--json")
	var known []struct{ Name string }
	if err := json.Unmarshal([]byte(out), &known); code != 0 || err != nil || len(known) < 40 {
		t.Fatalf("list --json: %d %v %d", code, err, len(known))
	}
}

// TestCountersCollectOutputRule: an existing counter file is refused, and
// replaced with --force.
func TestCountersCollectOutputRule(t *testing.T) {
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8})
	out := filepath.Join(t.TempDir(), "counter.csv")
	os.WriteFile(out, []byte("old"), 0o644)
	code, _, errOut := run(t, "counters", "collect", "--diagnostic-port", port, "--duration", "1s", "-o", out)
	if code != exitIO || !strings.Contains(errOut, "already exists") {
		t.Errorf("counters collect onto an existing file: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("existing file changed: %q", b)
	}
}

// A runtime that never answers: counters collect and monitor used to take
// the client's own timeout (30 s) for the end of --duration and exit 0
// with nothing written. Now they fail with exitRuntime and say why.
func TestCountersRuntimeNeverAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 30 s command timeout")
	}
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET8, Fault: func(set, id uint8) ipctest.Fault { return ipctest.FaultNeverAnswer }})
	for _, args := range [][]string{
		{"counters", "collect", "--diagnostic-port", port, "--duration", "2m", "-o", filepath.Join(t.TempDir(), "c.csv")},
		{"counters", "monitor", "--diagnostic-port", port, "--duration", "2m"},
	} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := run(t, args...)
			if code != exitRuntime || !strings.Contains(stderr, "no answer within") {
				t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// A session that stops publishing (as on .NET Core 3.x) is reported on
// stderr and reopened; the values of both sessions are written.
func TestCountersCollectReopensStalledSession(t *testing.T) {
	var sessions atomic.Int32
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		n := sessions.Add(1)
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return nil
		}
		mean := []nettrace.Field{{Name: "Name", Type: nettrace.TypeString}, {Name: "Mean", Type: nettrace.TypeDouble},
			{Name: "Series", Type: nettrace.TypeString}, {Name: "CounterType", Type: nettrace.TypeString}}
		md := &nettrace.Metadata{ID: 1, ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters",
			Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: mean}}}}}
		if w.AddMetadata(md) != nil {
			return nil
		}
		for i := 0; n > 1 || i < 3; i++ {
			p, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Value: nettrace.Object{{Name: "Payload", Value: nettrace.Object{
				{Name: "Name", Value: "cpu-usage"}, {Name: "Mean", Value: float64(n)}, {Name: "Series", Value: "Interval=100"}, {Name: "CounterType", Value: "Mean"}}}}}})
			if err != nil {
				return err
			}
			if w.WriteEvent(&nettrace.Event{Metadata: md, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: uint32(i + 1), Timestamp: int64(i + 1), Payload: p}) != nil || w.Flush() != nil {
				return nil
			}
			select {
			case <-s.Stopped:
				return nil
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		}
		select { // the first session stalls, open and silent
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return nil
	}})
	out := filepath.Join(t.TempDir(), "c.csv")
	// The stall is noticed after two intervals and two seconds; the
	// collection runs until the second session's values are in the file.
	r := startCLI("counters", "collect", "--diagnostic-port", port, "--refresh-interval", "0.1",
		"--counters", "System.Runtime[cpu-usage]", "-o", out)
	r.waitStderr(t, "reopened")
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if bytes.Contains(data, []byte(",2\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no value of the second session after 30s:\n%s\n%s", data, r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 20*time.Second)
	if r.code != 0 || !strings.Contains(r.stderr.String(), "stopped publishing counters") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout.String(), r.stderr.String())
	}
	data, _ := os.ReadFile(out)
	if !bytes.Contains(data, []byte(",1\n")) || !bytes.Contains(data, []byte(",2\n")) {
		t.Errorf("the values of both sessions are not in the file:\n%s", data)
	}
}
