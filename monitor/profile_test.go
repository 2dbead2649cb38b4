//go:build unix

package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/speedscopetest"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
	"github.com/clrdiag/clrdiag/transport"
)

// replay is a fake runtime's session that sends half a capture, waits for
// the stop, then sends the rest as the "rundown".
func replay(capture []byte, requests chan<- *ipc.CollectTracingRequest) func(context.Context, *ipctest.TracingSession) error {
	return func(ctx context.Context, s *ipctest.TracingSession) error {
		if requests != nil {
			requests <- s.Request
		}
		half := len(capture) / 2
		if _, err := s.Stream.Write(capture[:half]); err != nil {
			return err
		}
		<-s.Stopped
		_, err := s.Stream.Write(capture[half:])
		return err
	}
}

func getProfile(t *testing.T, hs interface{ Client() *http.Client }, url string) (*http.Response, []byte) {
	t.Helper()
	return request(t, hs.Client(), "GET", url)
}

// The profile route asks for the measure's providers, builds the profile
// from the stream and returns it in the format asked for.
func TestProfileRoute(t *testing.T) {
	capture := testcapture.Load(t, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")
	requests := make(chan *ipc.CollectTracingRequest, 10)
	f := fake(t, ipctest.Config{PID: 79, Tracing: replay(capture, requests)})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 79, Name: "gen", Dialer: f}}})

	resp, b := getProfile(t, hs, hs.URL+"/processes/79/profile?sample=alloc&duration=200ms")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="gen_`) || !strings.HasSuffix(resp.Header.Get("Content-Disposition"), `.alloc.pb.gz"`) {
		t.Fatalf("alloc: %d %v %.300s", resp.StatusCode, resp.Header, b)
	}
	req := <-requests
	if len(req.Providers) != 1 || req.Providers[0].Name != "Microsoft-Windows-DotNETRuntime" || req.Providers[0].Keywords != 0x1 ||
		req.Providers[0].Level != 5 || !req.RequestRundown {
		t.Errorf("alloc session: %+v", req)
	}
	pp, err := pprofile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var space int64
	for _, s := range pp.Sample {
		space += s.Value[1]
	}
	if pp.DefaultSampleType != "alloc_space" || space != 4235066536 {
		t.Errorf("alloc: default %q, %d bytes (want the capture's 4235066536)", pp.DefaultSampleType, space)
	}
	if notes := resp.Header.Values("X-Clrdiag-Note"); len(notes) == 0 || !strings.Contains(notes[0], "alloc_objects is not estimated") {
		t.Errorf("notes %q", notes)
	}

	// Contention drawn in Chromium: every wait a span.
	resp, b = getProfile(t, hs, hs.URL+"/processes/79/profile?sample=contention&duration=200ms&format=chromium")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("contention: %d %.300s", resp.StatusCode, b)
	}
	if req := <-requests; req.Providers[0].Keywords != 0x4000 {
		t.Errorf("contention session keywords %#x", req.Providers[0].Keywords)
	}
	var doc struct {
		TraceEvents []struct{ Ph string } `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	begins := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "B" {
			begins++
		}
	}
	if begins == 0 {
		t.Errorf("chromium: no spans")
	}

	// Speedscope of the CPU samples (the default measure, wall).
	resp, b = getProfile(t, hs, hs.URL+"/processes/79/profile?duration=200ms&format=speedscope")
	if resp.StatusCode != 200 {
		t.Fatalf("wall: %d %.300s", resp.StatusCode, b)
	}
	if req := <-requests; req.Providers[0].Name != "Microsoft-DotNETCore-SampleProfiler" {
		t.Errorf("wall session providers %+v", req.Providers)
	}
	speedscopetest.Validate(t, b)

	// A window without the measure's events is an empty profile that says so.
	resp, b = getProfile(t, hs, hs.URL+"/processes/79/profile?sample=exceptions&duration=200ms&format=folded")
	<-requests
	if resp.StatusCode != 200 || len(b) != 0 || !strings.Contains(strings.Join(resp.Header.Values("X-Clrdiag-Note"), "|"), "no exceptions in 200ms") {
		t.Errorf("exceptions: %d %q %q", resp.StatusCode, resp.Header.Values("X-Clrdiag-Note"), b)
	}

	for _, c := range []struct{ query, want string }{
		{"sample=heap", "unknown measure \\\"heap\\\""},
		{"sample=alloc&format=chromium", "has no durations"},
		{"format=svg", "unknown format"},
		{"duration=-1s", "out of range"},
		{"providers=X", "unknown parameter"},
	} {
		resp, b := getProfile(t, hs, hs.URL+"/processes/79/profile?"+c.query)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s", c.query, resp.StatusCode, b)
		}
	}
	select {
	case r := <-requests:
		t.Errorf("a bad request started a session: %+v", r)
	default:
	}
}

// Profiles of one process are serialized with its other requests.
func TestProfileSerialized(t *testing.T) {
	capture := testcapture.Load(t, "misc/net6.0.9-windows.nettrace")
	var active, maxActive atomic.Int32
	play := replay(capture, nil)
	f := fake(t, ipctest.Config{PID: 80, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		return play(ctx, s)
	}})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 80, Dialer: f}}})
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := getProfile(t, hs, hs.URL+"/processes/80/profile?sample=alloc&duration=100ms")
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	if fmt.Sprint(codes) != "[200 200 200]" || maxActive.Load() != 1 {
		t.Errorf("codes %v, at most %d sessions at once (want 1)", codes, maxActive.Load())
	}
}

// A runtime that pushes without end is cut at MaxTraceBytes: the profile
// of what came is returned with a warning.
func TestProfileByteCap(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 81, Tracing: endless})
	hs := serve(t, monitor.Config{NoMetrics: true, MaxTraceBytes: 1 << 20, Source: monitor.StaticSource{{PID: 81, Dialer: f}}})
	begin := time.Now()
	resp, b := getProfile(t, hs, hs.URL+"/processes/81/profile?sample=exceptions&duration=10m&format=folded")
	if resp.StatusCode != 200 || !strings.Contains(strings.Join(resp.Header.Values("X-Clrdiag-Warning"), "|"), "cap of 1048576 bytes") {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
}

// A real .NET Core 3.1 process allocating Order and Invoice objects 3:1
// and throwing 7 InvalidOperationException for 3 ArgumentException, in
// loops: the monitor's alloc and exceptions profiles show both ratios.
func TestRealRuntimeProfiles(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
	tg.Send(t, "alloc-loop")
	tg.Expect(t, "LOOPING", 10*time.Second)
	tg.Send(t, "throw-loop")
	tg.Expect(t, "LOOPING", 10*time.Second)
	p := monitor.Process{PID: tg.PID, Name: "Workloads", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{p}})

	// About 50 MB/s for 4 s: some 2000 ticks.
	resp, b := getProfile(t, hs, fmt.Sprintf("%s/processes/%d/profile?sample=alloc&duration=4s", hs.URL, tg.PID))
	if resp.StatusCode != 200 {
		t.Fatalf("alloc: %d %s", resp.StatusCode, b)
	}
	pp, err := pprofile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int64{}
	for _, s := range pp.Sample {
		if len(s.Location) > 1 {
			by[s.Location[0].Line[0].Function.Name+" from "+s.Location[1].Line[0].Function.Name] += s.Value[1]
		}
	}
	o, i := by["Workloads.Order from Workloads.Allocator.MakeOrder"], by["Workloads.Invoice from Workloads.Allocator.MakeInvoice"]
	t.Logf("alloc over 4s: %d bytes of Order, %d of Invoice", o, i)
	if o == 0 || i == 0 {
		t.Fatalf("no Order or Invoice under their methods: %v", by)
	}
	// Fewer ticks than the CLI test: 0.75 +- 0.1.
	if share := float64(o) / float64(o+i); share < 0.65 || share > 0.85 {
		t.Errorf("Order bytes are %.3f of Order+Invoice, want about 0.75", share)
	}

	resp, b = getProfile(t, hs, fmt.Sprintf("%s/processes/%d/profile?sample=exceptions&duration=2s&format=folded", hs.URL, tg.PID))
	if resp.StatusCode != 200 {
		t.Fatalf("exceptions: %d %s", resp.StatusCode, b)
	}
	var invalid, argument int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var n int64
		sp := strings.LastIndexByte(line, ' ')
		fmt.Sscan(line[sp+1:], &n)
		switch {
		case strings.HasSuffix(line[:sp], "Workloads!Workloads.Thrower.Invalid;System.InvalidOperationException"):
			invalid += n
		case strings.HasSuffix(line[:sp], "Workloads!Workloads.Thrower.Argument;System.ArgumentException"):
			argument += n
		}
	}
	t.Logf("exceptions over 2s: %d InvalidOperationException, %d ArgumentException", invalid, argument)
	// The loop throws 7 then 3. A window that holds ArgumentExceptions of
	// r = ceil(argument/3) rounds holds the r-1 runs of 7 between them,
	// and at most one more run at each end. (The window of 291 that starts
	// at a round's first ArgumentException holds 672 = 7*96.)
	rounds := (argument + 2) / 3
	if invalid == 0 || argument == 0 || invalid < 7*(rounds-1) || invalid > 7*(rounds+1) {
		t.Errorf("exceptions %d:%d, want about 7:3\n%s", invalid, argument, b)
	}
}

// damaged is a session whose stream breaks after its first samples: the
// samples of stackstest, then bytes no nettrace object starts with until
// the stop.
func damaged(ctx context.Context, s *ipctest.TracingSession) error {
	var samples bytes.Buffer
	early, cancel := context.WithCancel(ctx)
	cancel() // WriteSession returns after the samples, before the stop
	if err := stackstest.WriteSession(early, &ipctest.TracingSession{Stream: &samples, Stopped: make(chan struct{})}, stackstest.Config{}); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the samples: %v", err)
	}
	if _, err := s.Stream.Write(samples.Bytes()); err != nil {
		return err
	}
	junk := bytes.Repeat([]byte{0xee}, 4096)
	for {
		if _, err := s.Stream.Write(junk); err != nil {
			return nil
		}
		select {
		case <-s.Stopped:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The profile route and the dashboard's profile job build their profile
// the same way and say the same of a session that gives none or a partial
// one: a stream that is not nettrace, a runtime that ends the session
// before sending anything, a damaged stream, the server's byte cap. Each
// ends the session long before the duration asked for.
func TestProfileOutcomes(t *testing.T) {
	for _, c := range []struct {
		name    string
		tracing func(context.Context, *ipctest.TracingSession) error
		// status is the route's; its body (an error) or its warnings hold
		// want. ok says whether the dashboard's job succeeds; its error or
		// summary holds want.
		status int
		ok     bool
		want   string
	}{
		{"not nettrace", func(ctx context.Context, s *ipctest.TracingSession) error {
			if _, err := io.WriteString(s.Stream, "HTTP/1.1 400 Bad Request\r\n\r\n"); err != nil {
				return err
			}
			<-s.Stopped
			return nil
		}, http.StatusBadGateway, false, `the session gave no profile: eventpipe: the session stream is not a nettrace stream: it starts with "HTTP/1.1 400"`},
		{"nothing sent", func(ctx context.Context, s *ipctest.TracingSession) error {
			return nil
		}, http.StatusBadGateway, false, "the session gave no profile: the runtime ended the session before sending anything (the stream ended)"},
		{"damaged", damaged, http.StatusOK, true, "the session stream is damaged (nettrace: at byte "},
		{"byte cap", endless, http.StatusOK, false, "the session reached the server's cap of 1048576 bytes: the profile covers what came before"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 82, Tracing: c.tracing})
			m, hs := serveUI(t, monitor.Config{NoMetrics: true, MaxTraceBytes: 1 << 20, Source: monitor.StaticSource{{PID: 82, Name: "app", Dialer: f}}})

			begin := time.Now()
			resp, body := getProfile(t, hs, hs.URL+"/processes/82/profile?duration=10m&format=folded")
			got := strings.Join(resp.Header.Values("X-Clrdiag-Warning"), "|")
			if resp.StatusCode != http.StatusOK {
				var e struct{ Error string }
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatalf("route: %d %q: %v", resp.StatusCode, body, err)
				}
				got = e.Error
			}
			if resp.StatusCode != c.status || !strings.Contains(got, c.want) {
				t.Errorf("route: %d %q, want %d and %q", resp.StatusCode, got, c.status, c.want)
			}
			t.Logf("route: %d %q after %v", resp.StatusCode, got, time.Since(begin))
			if d := time.Since(begin); d > 30*time.Second {
				t.Errorf("route: took %v", d)
			}
			// The worker's two samples, its methods unnamed (no rundown).
			if c.name == "damaged" && !bytes.Contains(body, []byte("0x10000010;0x10002030 2000\n")) {
				t.Errorf("route: the samples before the damage are missing:\n%s", body)
			}

			b := newBrowser(t, hs)
			b.req("GET", m.DashboardPath(), nil)
			b.loadIndex()
			j := b.job(b.startJob("/ui/api/processes/82/profile?duration=10m"))
			state, text := monitor.JobFailed, j["error"]
			if c.ok {
				state, text = monitor.JobDone, j["summary"]
			}
			if j["state"] != state || !strings.Contains(fmt.Sprint(text), c.want) {
				t.Errorf("dashboard: %v, want %s with %q", j, state, c.want)
			}
			t.Logf("dashboard: %s: %s", j["state"], text)
			if c.name == "damaged" && !strings.Contains(fmt.Sprint(text), "4 samples in 10m0s") {
				t.Errorf("dashboard: the samples before the damage are missing: %v", text)
			}
		})
	}
}
