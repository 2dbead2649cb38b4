//go:build unix

package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
	"github.com/clrdiag/clrdiag/transport"
)

const key = "test-key"

func fake(t *testing.T, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	srv, err := ipctest.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func serve(t *testing.T, cfg monitor.Config) *httptest.Server {
	t.Helper()
	_, hs := serveUI(t, cfg)
	return hs
}

func do(t *testing.T, hs *httptest.Server, method, path string) (int, []byte) {
	t.Helper()
	resp, b := request(t, hs.Client(), method, hs.URL+path)
	return resp.StatusCode, b
}

// request sends an API request with the test key and reads the whole
// response.
func request(t *testing.T, c *http.Client, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestAuth(t *testing.T) {
	if _, err := monitor.New(monitor.Config{}); !errors.Is(err, monitor.ErrNoAPIKey) {
		t.Fatalf("New without a key: %v", err)
	}
	hs := serve(t, monitor.Config{Source: monitor.StaticSource{}})
	for _, h := range []string{"", "Bearer wrong", "Basic " + key, "Bearer " + key + "x", "Bearer"} {
		req, _ := http.NewRequest("GET", hs.URL+"/processes", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", h, resp.StatusCode)
		}
	}
	if code, body := do(t, hs, "GET", "/processes"); code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("with the key: %d %s", code, body)
	}
	open := serve(t, monitor.Config{NoAuth: true, Source: monitor.StaticSource{}})
	resp, err := open.Client().Get(open.URL + "/processes")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("NoAuth: %d", resp.StatusCode)
	}
}

func TestProcessRoutes(t *testing.T) {
	f8 := fake(t, ipctest.Config{PID: 801, Environment: []string{"A=1", "B=x=y"}})
	f31 := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 301})
	hs := serve(t, monitor.Config{Source: monitor.StaticSource{
		{PID: 801, Name: "app8", Dialer: f8},
		{PID: 301, Name: "app31", CommandLine: "dotnet old.dll", Dialer: f31},
	}})
	code, body := do(t, hs, "GET", "/processes")
	var procs []monitor.Process
	if err := json.Unmarshal(body, &procs); err != nil || code != 200 || len(procs) != 2 || procs[0].Name != "app8" {
		t.Fatalf("/processes: %d %s (%v)", code, body, err)
	}
	var info map[string]any
	code, body = do(t, hs, "GET", "/processes/801")
	if err := json.Unmarshal(body, &info); err != nil || code != 200 || info["source"] != "ProcessInfo" || info["clrProductVersion"] == "" {
		t.Fatalf("info .NET 8: %d %s", code, body)
	}
	code, body = do(t, hs, "GET", "/processes/301")
	if err := json.Unmarshal(body, &info); err != nil || code != 200 || info["source"] != "os" || info["commandLine"] != "dotnet old.dll" {
		t.Fatalf("info 3.1: %d %s", code, body)
	}
	var env map[string]string
	code, body = do(t, hs, "GET", "/processes/801/env")
	if err := json.Unmarshal(body, &env); err != nil || code != 200 || env["A"] != "1" || env["B"] != "x=y" {
		t.Fatalf("env: %d %s", code, body)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/processes/301/env", 501, "ProcessEnvironment"},
		{"GET", "/processes/999", 404, "no .NET process with pid 999"},
		{"GET", "/processes/abc", 400, "bad process id"},
		{"GET", "/processes/801/stacks?format=xml", 400, "unknown format"},
		{"GET", "/processes/999/stacks", 404, "no .NET process"},
		{"POST", "/processes/801/dump", 501, "--dump-dir"},
		{"GET", "/processes/801/trace?duration=forever", 400, "bad duration"},
		{"GET", "/processes/801/trace?duration=100h", 400, "out of range"},
		{"GET", "/processes/801/trace?providers=:::", 400, ""},
		{"GET", "/processes/801/trace?providers=A&stoppingEventProviderName=B", 400, "provider B is not enabled"},
		{"GET", "/processes/801/trace?providers=A&stoppingEventEventName=E", 400, "need stoppingEventProviderName"},
		{"GET", "/processes/801/trace?providers=A&stoppingEventProviderName=A&stoppingEventPayloadFilter=x:1", 400, "needs stoppingEventEventName"},
		{"GET", "/processes/801/trace?providers=A&stoppingEventProviderName=A&stoppingEventEventName=E&stoppingEventPayloadFilter=x", 400, "use name:value"},
	} {
		code, body := do(t, hs, tc.method, tc.path)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d %s; want %d and %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
	}
}

func TestDumpConfined(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 55})
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hs := serve(t, monitor.Config{DumpDir: dir, Now: func() time.Time { return now }, Source: monitor.StaticSource{{PID: 55, Dialer: f}}})
	code, body := do(t, hs, "POST", "/processes/55/dump?type=mini")
	if code != 201 {
		t.Fatalf("dump: %d %s", code, body)
	}
	for _, bad := range []string{
		"?path=/etc/passwd", "?type=full&path=/tmp/x", "?type=../../etc/x", "?name=../x", "?type=mini&type=../x",
	} {
		code, body := do(t, hs, "POST", "/processes/55/dump"+bad)
		if code != 400 {
			t.Errorf("dump%s: %d %s, want 400", bad, code, body)
		}
	}
	if code, _ := do(t, hs, "POST", "/processes/55/dump/../../x"); code == 201 {
		t.Error("a path in the URL reached the dump route")
	}
	if code, _ := do(t, hs, "GET", "/processes/55/dump"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET dump: %d", code)
	}
	dumps := f.Dumps()
	if len(dumps) != 1 {
		t.Fatalf("%d dumps requested, want 1: %+v", len(dumps), dumps)
	}
	want := filepath.Join(dir, "dump_55_20260102_030405.000.dmp")
	if dumps[0].Path != want || dumps[0].Type != 1 {
		t.Fatalf("dump %+v, want path %s type mini", dumps[0], want)
	}
}

// countingDialer records how many connections to one process are open at
// once; each connection lingers a little on Close so that overlapping
// requests would show.
type countingDialer struct {
	d        *ipctest.Server
	open     atomic.Int32
	maxOpen  atomic.Int32
	lingerOn time.Duration
}

type countedConn struct {
	net.Conn
	d    *countingDialer
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		time.Sleep(c.d.lingerOn)
		c.d.open.Add(-1)
	})
	return err
}

func (d *countingDialer) Dial(ctx context.Context) (net.Conn, error) {
	c, err := d.d.Dial(ctx)
	if err != nil {
		return nil, err
	}
	n := d.open.Add(1)
	for {
		m := d.maxOpen.Load()
		if n <= m || d.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	return &countedConn{Conn: c, d: d}, nil
}

func TestRequestsToOneProcessSerialized(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 66, Environment: []string{"A=1"}})
	cd := &countingDialer{d: f, lingerOn: 20 * time.Millisecond}
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 66, Dialer: cd}}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			path := "/processes/66/env"
			if i%2 == 0 {
				path = "/processes/66"
			}
			if code, body := do(t, hs, "GET", path); code != 200 {
				t.Errorf("%s: %d %s", path, code, body)
			}
		})
	}
	wg.Wait()
	if got := cd.maxOpen.Load(); got != 1 {
		t.Fatalf("%d connections to one process open at once, want 1", got)
	}
}

func TestTraceStreamed(t *testing.T) {
	capture := testcapture.Load(t, "misc/net6.0.9-windows.nettrace")
	var stopped atomic.Bool
	f := fake(t, ipctest.Config{PID: 77, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		half := len(capture) / 2
		if _, err := s.Stream.Write(capture[:half]); err != nil {
			return err
		}
		<-s.Stopped
		stopped.Store(true)
		_, err := s.Stream.Write(capture[half:]) // "rundown"
		return err
	}})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 77, Dialer: f}}})
	req, _ := http.NewRequest("GET", hs.URL+"/processes/77/trace?duration=300ms&profile=cpu-sampling", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), ".nettrace") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("trace: %d %s", resp.StatusCode, b)
	}
	r, err := nettrace.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var ev nettrace.Event
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
		n++
	}
	if n == 0 || !stopped.Load() {
		t.Fatalf("%d events, stopped %v", n, stopped.Load())
	}
	reqs := f.Requests()
	if len(reqs) < 2 {
		t.Fatalf("requests %+v: want CollectTracing and StopTracing", reqs)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the trailer comes after the body
	if end := resp.Trailer.Get("X-Clrdiag-Trace-End"); end != "duration reached; rundown completed" {
		t.Errorf("trailer %q", end)
	}
}

// Stack snapshots over JSON and text, serialized per process.
func TestStacks(t *testing.T) {
	var active, maxActive, sessions atomic.Int32
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 88, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		sessions.Add(1)
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		return stackstest.WriteSession(ctx, s, stackstest.Config{RundownDelay: 20 * time.Millisecond})
	}})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 88, Dialer: f}}})

	code, body := do(t, hs, "GET", "/processes/88/stacks")
	var snap stacks.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil || code != 200 {
		t.Fatalf("stacks: %d %s (%v)", code, body, err)
	}
	if snap.ProcessID != stackstest.DefaultProcessID || len(snap.Threads) != 2 || !snap.Rundown || snap.Unresolved != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	if th := snap.Threads[1]; th.ID != 0x202 || len(th.Frames) != 3 || th.Frames[1].Method != "App.Worker.Spin" || th.Frames[1].Module != "App" {
		t.Errorf("thread 0x202 = %+v", th)
	}
	// The fake is not reached through a local endpoint: no /proc lookup.
	if !strings.Contains(snap.NamesNote, "process id is unknown") {
		t.Errorf("names note %q", snap.NamesNote)
	}

	code, body = do(t, hs, "GET", "/processes/88/stacks?format=text")
	want := "Thread (0x101):\n  App!App.Program.Wait\n  App!App.Program.Main\n\n" +
		"Thread (0x202):\n  0xdead0000 (unresolved)\n  App!App.Worker.Spin\n  App!App.Program.Main\n"
	if code != 200 || string(body) != want {
		t.Errorf("text: %d\n%s\nwant:\n%s", code, body, want)
	}

	// Concurrent requests take turns: never two sessions at once.
	sessions.Store(0)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if code, body := do(t, hs, "GET", "/processes/88/stacks"); code != 200 {
				t.Errorf("concurrent stacks: %d %s", code, body)
			}
		})
	}
	wg.Wait()
	if sessions.Load() != 3 || maxActive.Load() != 1 {
		t.Errorf("%d sessions, at most %d at once; want 3 and 1", sessions.Load(), maxActive.Load())
	}
}

// A process whose sessions never carry samples: a clear error, not a hang.
func TestStacksNoSamples(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 89, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{NoSamples: true})
	}})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 89, Dialer: f}}})
	code, body := do(t, hs, "GET", "/processes/89/stacks")
	if code != http.StatusBadGateway || !strings.Contains(string(body), "no thread samples") {
		t.Errorf("no samples: %d %s", code, body)
	}
}

// A real .NET Core 3.1 process running the Hot target: its worker thread is
// in the hot loop, its main thread waits in Console.ReadLine.
func TestRealRuntimeStacks(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
	p := monitor.Process{PID: tg.PID, Name: "dotnet", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	hs := serve(t, monitor.Config{Source: monitor.StaticSource{p}})

	code, body := do(t, hs, "GET", fmt.Sprintf("/processes/%d/stacks", tg.PID))
	var snap stacks.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil || code != 200 {
		t.Fatalf("stacks: %d %s (%v)", code, body, err)
	}
	if snap.ProcessID != tg.PID || !snap.Rundown {
		t.Errorf("process id %d (want %d), rundown %v", snap.ProcessID, tg.PID, snap.Rundown)
	}
	var worker, main bool
	for _, th := range snap.Threads {
		var fr []string
		for _, f := range th.Frames {
			fr = append(fr, f.Method)
		}
		all := strings.Join(fr, " ")
		worker = worker || strings.Contains(all, "Hot.Burner.Loop")
		if th.ID == uint64(tg.PID) {
			main = strings.Contains(all, "System.Console.ReadLine") && strings.Contains(all, "Hot.Program.Main")
		}
	}
	if !worker || !main {
		t.Errorf("worker in Hot.Burner.Loop %v, main in Console.ReadLine %v: %+v", worker, main, snap.Threads)
	}

	code, body = do(t, hs, "GET", fmt.Sprintf("/processes/%d/stacks?format=text", tg.PID))
	if code != 200 || !strings.Contains(string(body), fmt.Sprintf("Thread (0x%X):", tg.PID)) || !strings.Contains(string(body), "  Hot!Hot.Burner.Loop\n") {
		t.Errorf("stacks text: %d\n%s", code, body)
	}
}

// A real .NET Core 3.1 process: its System.Runtime counters over JSON and
// through /metrics.
// TestRealRuntimeCountersAndMetrics waits for the states it checks, not for
// times: on a loaded machine the runtime's first publication may come late
// and the collector's session may need several attempts (with backoff) to
// reopen after the stall below.
func TestRealRuntimeCountersAndMetrics(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Basic"), nil, nil)
	p := monitor.Process{PID: tg.PID, Name: "dotnet", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	hs := serve(t, monitor.Config{MetricsWindow: 3 * time.Second, Source: monitor.StaticSource{p}})

	var samples []map[string]any
	for attempt, deadline := 1, time.Now().Add(2*time.Minute); ; attempt++ {
		code, body := do(t, hs, "GET", fmt.Sprintf("/processes/%d/counters?duration=3s", tg.PID))
		samples = nil
		// 503 is the monitor's answer while another command holds the
		// process's turn (here the collector's session, opening or
		// stopping slowly on a loaded machine); its advice is to retry.
		if code == http.StatusServiceUnavailable && strings.Contains(string(body), "retry later") && time.Now().Before(deadline) {
			t.Logf("counters request %d: %s; again", attempt, body)
			continue
		}
		if err := json.Unmarshal(body, &samples); err != nil || code != 200 {
			t.Fatalf("counters: %d %s (%v)", code, body, err)
		}
		if len(samples) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no counter samples in %d requests of 3s", attempt)
		}
		t.Logf("counters request %d: no samples yet (the runtime publishes late under load); again", attempt)
	}
	if samples[0]["provider"] != "System.Runtime" {
		t.Fatalf("first sample %v", samples[0])
	}
	// /metrics answers from the collector's long-lived session (3 s). The
	// session above asked for 1 s, and a .NET Core 3.x runtime then
	// publishes 1 s only, for every session: the collector adopts it (and
	// would reopen its session if the runtime stopped publishing).
	wantLabel := fmt.Sprintf(`pid="%d",process_name="dotnet"`, tg.PID)
	var text string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		start := time.Now()
		code, body := do(t, hs, "GET", "/metrics")
		// A scrape answers from memory and never waits for the process:
		// even on a loaded machine it takes far less than this.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a scrape took %v", d)
		}
		text = string(body)
		if code != 200 {
			t.Fatalf("/metrics: %d\n%s", code, text)
		}
		if strings.Contains(text, "systemruntime_cpu_usage_ratio{"+wantLabel+"}") && strings.Contains(text, "clrdiag_scrape_errors 0\n") {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("/metrics never showed the process's counters without errors in 2 minutes:\n%s", text)
}

// TestDumpRefusesPlantedLink: a link planted at the name the next dump
// will get (the names are predictable) is refused; the runtime would
// follow it.
func TestDumpRefusesPlantedLink(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 56})
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hs := serve(t, monitor.Config{DumpDir: dir, Now: func() time.Time { return now }, Source: monitor.StaticSource{{PID: 56, Dialer: f}}})
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, "dump_56_20260102_030405.000.dmp")); err != nil {
		t.Fatal(err)
	}
	code, body := do(t, hs, "POST", "/processes/56/dump?type=mini")
	if code != http.StatusConflict || !strings.Contains(string(body), "symbolic link") || len(f.Dumps()) != 0 {
		t.Errorf("dump onto a planted link: %d %s, %d dumps requested", code, body, len(f.Dumps()))
	}
}

// TestDumpTimeout: a dump may take longer than other commands, up to
// Config.DumpTimeout; past it the answer is 504.
func TestDumpTimeout(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 57, Fault: func(set, id uint8) ipctest.Fault {
		if set == ipc.SetDump {
			return ipctest.FaultNeverAnswer
		}
		return ipctest.FaultNone
	}})
	hs := serve(t, monitor.Config{DumpDir: t.TempDir(), CommandTimeout: 10 * time.Second, DumpTimeout: 200 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 57, Dialer: f}}})
	start := time.Now()
	code, body := do(t, hs, "POST", "/processes/57/dump?type=mini")
	if code != http.StatusGatewayTimeout || time.Since(start) > 8*time.Second {
		t.Errorf("dump that never ends: %d after %v: %s", code, time.Since(start), body)
	}
}

// endless streams valid nettrace blocks until the connection breaks,
// before and after StopTracing, as a hostile runtime may.
func endless(ctx context.Context, s *ipctest.TracingSession) error {
	md := &nettrace.Metadata{ID: 1, ProviderName: "Fake", EventID: 1, EventName: "E", Level: 4}
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
	if err != nil {
		return nil
	}
	if err := w.AddMetadata(md); err != nil {
		return nil
	}
	payload := make([]byte, 200)
	for i := 0; ctx.Err() == nil; i++ {
		ev := nettrace.Event{Metadata: md, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: uint32(i + 1), Timestamp: int64(i), Payload: payload}
		if w.WriteEvent(&ev) != nil {
			return nil
		}
		if i%500 == 0 && w.Flush() != nil {
			return nil
		}
	}
	return nil
}

// A runtime that pushes without end is cut at MaxTraceBytes, its session
// stopped, and the trailer says why.
func TestTraceByteCap(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 78, Tracing: endless})
	hs := serve(t, monitor.Config{NoMetrics: true, MaxTraceBytes: 1 << 20, Source: monitor.StaticSource{{PID: 78, Dialer: f}}})
	req, _ := http.NewRequest("GET", hs.URL+"/processes/78/trace?duration=10m", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	begin := time.Now()
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if len(b) != 1<<20 {
		t.Errorf("%d bytes, want the 1 MiB cap", len(b))
	}
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	if end := resp.Trailer.Get("X-Clrdiag-Trace-End"); !strings.Contains(end, "size cap reached") {
		t.Errorf("trailer %q", end)
	}
	if stops := ipctest.CountRequests[*ipc.StopTracingRequest](f); stops != 1 {
		t.Errorf("%d StopTracing sent, want 1", stops)
	}
}
