//go:build linux

package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/browsertest"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// endpointOf is the diagnostic endpoint of a target the test started.
func endpointOf(tg *dotnettest.Target) transport.Endpoint {
	return transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}
}

// processOf is a target as a monitor serves it.
func processOf(tg *dotnettest.Target) monitor.Process {
	return monitor.Process{PID: tg.PID, Name: "dotnet", CommandLine: strings.Join(tg.Cmd.Args, " "), Dialer: endpointOf(tg)}
}

// serveLive serves a monitor on a real listener (the browser and
// Prometheus reach it) and returns its base URL; it stops with the test.
func serveLive(t *testing.T, cfg monitor.Config) string {
	t.Helper()
	m, err := monitor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.Serve(ctx, ln, "", "") }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		m.Close()
	})
	return "http://" + ln.Addr().String()
}

func mustRead(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// totals records every change of one /metrics counter, scraped every
// 100 ms: the time each new total was first seen.
type totals struct {
	mu  sync.Mutex
	at  []time.Time
	val []float64
}

// watchTotal scrapes base's /metrics until ctx ends and records the
// changes of the series (name{labels}).
func watchTotal(ctx context.Context, t *testing.T, base, series string) *totals {
	w := &totals{}
	go func() {
		for ctx.Err() == nil {
			resp, err := http.Get(base + "/metrics")
			if err == nil {
				text := mustRead(t, resp)
				resp.Body.Close()
				if v, ok := sample(text, series); ok {
					w.mu.Lock()
					if n := len(w.val); n == 0 || w.val[n-1] != v {
						w.at, w.val = append(w.at, time.Now()), append(w.val, v)
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

// rateSince is the counter's rate over its changes seen after from: the
// increase between the first and the last change, per second between them.
func (w *totals) rateSince(from time.Time) (rate float64, t0, t1 time.Time, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	first := -1
	for i, at := range w.at {
		if at.After(from) {
			first = i
			break
		}
	}
	if first < 0 || len(w.at)-first < 2 {
		return 0, time.Time{}, time.Time{}, 0
	}
	last := len(w.at) - 1
	return (w.val[last] - w.val[first]) / w.at[last].Sub(w.at[first]).Seconds(), w.at[first], w.at[last], last - first
}

// chartPoints reads the values a chart line of the dashboard draws (its
// polylines' data-points), [Unix ms, value] pairs.
func chartPoints(b *browsertest.Browser, chart, series string) [][2]float64 {
	js := fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('.chart[data-chart="%s"] polyline.series[data-series="%s"]')].flatMap(p => JSON.parse(p.getAttribute('data-points'))))`, chart, series)
	var pts [][2]float64
	if err := json.Unmarshal([]byte(browsertest.Run(b, chromedp.Evaluate[string](js))), &pts); err != nil {
		panic(err)
	}
	return pts
}

// meanBetween is the mean of the points in (t0, t1].
func meanBetween(pts [][2]float64, t0, t1 time.Time) (float64, int) {
	var sum float64
	n := 0
	for _, p := range pts {
		if ms := int64(p[0]); ms > t0.UnixMilli() && ms <= t1.UnixMilli() {
			sum += p[1]
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// showProcess opens the dashboard and shows the process: the Show button of
// its row, then the page's state for it.
func showProcess(t *testing.T, b *browsertest.Browser, base string, pid int) {
	t.Helper()
	b.Do(chromedp.Navigate(base + "/ui/"))
	row := fmt.Sprintf(`#process-rows tr[data-pid="%d"]`, pid)
	browsertest.Wait[bool](b, "the process in the list", `!!document.querySelector('`+row+` td.open button')`, 60*time.Second)
	b.Do(chromedp.Click(chromedp.CSS(row + ` td.open button`)))
	browsertest.Wait[bool](b, "the process shown", fmt.Sprintf(`location.hash === '#pid=%d' && !document.getElementById('detail').hidden &&
		document.querySelector('%s td.open button').innerText === 'Shown'`, pid, row), 30*time.Second)
}

// TestBrowserDashboardRateOn31 is issue 26's rates on a real .NET Core 3.1
// process throwing exceptions at a steady pace: the dashboard's exception
// rate (what its chart draws, in Chromium) equals the rate of the monitor's
// own /metrics counter over the same window within 15%, and Prometheus'
// rate() of it, with the monitor's session alone (every 2 s) and again
// with a second counters session at 1 s open on the process (a 3.x runtime
// then publishes every second for both). The dashboard divided each
// interval's count by the counter's display scale: 2x the true rate, 30x
// for the GC counts, and it halved when the second session opened.
func TestBrowserDashboardRateOn31(t *testing.T) {
	b := browsertest.Start(t, browsertest.Config{Timeout: 5 * time.Minute})
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
	tg.Send(t, "throw-loop")
	tg.Expect(t, "LOOPING", 10*time.Second)
	base := serveLive(t, monitor.Config{NoAuth: true, MetricsWindow: 2 * time.Second, DiscoveryInterval: time.Second,
		Source: monitor.StaticSource{processOf(tg)}})
	prom := startPrometheus(t, strings.TrimPrefix(base, "http://"), false)
	series := fmt.Sprintf(`systemruntime_exception_count_total{pid="%d",process_name="dotnet"}`, tg.PID)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := watchTotal(ctx, t, base, series)

	showProcess(t, b, base, tg.PID)
	browsertest.Wait[bool](b, "the exceptions chart", `(() => {
		const p = document.querySelector('.chart[data-chart="exceptions"] polyline.series');
		return !!p && JSON.parse(p.getAttribute('data-points')).length >= 3; })()`, 60*time.Second)

	measure := func(what string, interval time.Duration) {
		t.Helper()
		from := time.Now()
		// 30 s of the counter's changes.
		deadline := time.Now().Add(90 * time.Second)
		for {
			if _, t0, t1, _ := w.rateSince(from); !t0.IsZero() && t1.Sub(t0) >= 30*time.Second {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /metrics did not move for 30 s within 90 s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
		metric, t0, t1, changes := w.rateSince(from)
		// The page polls: wait until it drew the last value seen.
		var dash float64
		var n int
		browsertest.Wait[bool](b, "the chart up to the last /metrics change", fmt.Sprintf(`(() => {
			const pts = [...document.querySelectorAll('.chart[data-chart="exceptions"] polyline.series')].flatMap(p => JSON.parse(p.getAttribute('data-points')));
			return pts.length > 0 && pts[pts.length - 1][0] >= %d; })()`, t1.UnixMilli()-1500), 30*time.Second)
		pts := chartPoints(b, "exceptions", "exception-count")
		dash, n = meanBetween(pts, t0.Add(-time.Second), t1)
		// Prometheus' own rate() over the window, from its 1 s scrapes.
		window := int(t1.Sub(t0).Seconds())
		var promRate float64
		deadlineP := time.Now().Add(30 * time.Second)
		for {
			v, ok, err := prom.value(fmt.Sprintf(`rate(%s[%ds] @ %d)`, series, window, t1.Unix()))
			if err != nil {
				t.Fatalf("Prometheus: %v\n%s", err, prom.logs)
			}
			if ok {
				promRate = v
				break
			}
			if time.Now().After(deadlineP) {
				t.Fatalf("Prometheus has no rate of %s\n%s", series, prom.logs)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("%s: dashboard %.1f/s (mean of %d points), /metrics %.1f/s (%d changes over %v), Prometheus rate() %.1f/s",
			what, dash, n, metric, changes, t1.Sub(t0).Round(time.Millisecond), promRate)
		if math.Abs(dash-metric) > 0.15*metric || metric <= 0 {
			t.Errorf("%s: the dashboard shows %.1f exceptions/s, /metrics counted %.1f/s over the same window", what, dash, metric)
		}
		if math.Abs(promRate-metric) > 0.15*metric {
			t.Errorf("%s: Prometheus' rate() %.1f/s, /metrics %.1f/s", what, promRate, metric)
		}
		// The points come at the runtime's interval.
		if spacing := t1.Sub(t0) / time.Duration(max(changes, 1)); spacing < interval*2/3 || spacing > interval*2 {
			t.Errorf("%s: /metrics changed every %v, want about %v", what, spacing, interval)
		}
	}
	measure("the monitor's session alone", 2*time.Second)
	b.Screenshot("dashboard-rate-31")

	// A second session at 1 s on the same process.
	second, err := counters.Start(ctx, diag.NewClient(endpointOf(tg), nil), counters.Config{RefreshInterval: time.Second,
		Specs: []counters.Spec{{Provider: "System.Runtime", EventCountersOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	go func() { _ = second.Run(ctx, func(counters.Update) error { return nil }) }()
	// The monitor adopts the 1 s interval the runtime now publishes.
	deadline := time.Now().Add(60 * time.Second)
	for {
		pts := chartPoints(b, "exceptions", "exception-count")
		if n := len(pts); n >= 4 && pts[n-1][0]-pts[n-4][0] <= 4500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard's points never came every second: %v", pts)
		}
		time.Sleep(500 * time.Millisecond)
	}
	measure("with a second session at 1 s", time.Second)
	b.Screenshot("dashboard-rate-31-second-session")
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page reported errors: %q", p)
	}
}

// webURL is the URL the Web target listens on, from its ready line
// ("READY <pid> <url>").
func webURL(t *testing.T, tg *dotnettest.Target) string {
	t.Helper()
	f := strings.Fields(tg.ReadyLine)
	if len(f) < 3 {
		t.Fatalf("the Web target's ready line %q carries no URL", tg.ReadyLine)
	}
	return f[2]
}

// hit sends n GET requests to url, one after another.
func hit(t *testing.T, url string, n int) {
	t.Helper()
	for range n {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// sumSeries adds up the samples of a metric family (the name followed by
// '{') whose labels include every one of labels.
func sumSeries(text, name string, labels ...string) (float64, int) {
	var sum float64
	n := 0
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		lbl, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(lbl, l)
		}
		if !all {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(val), &v); err == nil {
			sum += v
			n++
		}
	}
	return sum, n
}

// TestLiveMonitorModernRuntimes serves the ASP.NET Core target on .NET 8,
// 10 and 11: /metrics counts exactly the requests the test sent, in
// ASP.NET Core's request metrics (Microsoft.AspNetCore.Hosting, on by
// default) and in the app's own Meter (added with MetricsCounters); on 8
// and 11 the dashboard, driven in Chromium, draws values in every chart,
// from the EventCounters on 8 and the System.Runtime Meter on 11 (all six
// charts stayed "Waiting for values..." on 10 and 11), and its counters API
// has the Meter's tagged series.
func TestLiveMonitorModernRuntimes(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
		app := webURL(t, tg)
		base := serveLive(t, monitor.Config{NoAuth: true, MetricsWindow: time.Second, DiscoveryInterval: time.Second,
			MetricsCounters: monitor.DefaultMetricsCounters + ",Clrdiag.Web", Source: monitor.StaticSource{processOf(tg)}})
		lbl := fmt.Sprintf(`pid="%d"`, tg.PID)
		metrics := func() string {
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			return mustRead(t, resp)
		}
		// Reading /metrics opens the Meters session; the requests are
		// sent once it is open, so its histograms see them all.
		waitFor := func(what string, timeout time.Duration, cond func(string) bool) string {
			t.Helper()
			deadline := time.Now().Add(timeout)
			for {
				text := metrics()
				if cond(text) {
					return text
				}
				if time.Now().After(deadline) {
					t.Fatalf("/metrics never showed %s:\n%s", what, text)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		waitFor("the Meters session open", 60*time.Second, func(s string) bool {
			v, ok := sample(s, fmt.Sprintf(`clrdiag_collector_meters_up{%s,process_name="dotnet"}`, lbl))
			return ok && v == 1
		})
		hit(t, app+"/", 30)
		hit(t, app+"/throw", 10)
		hit(t, app+"/alloc?mb=16", 8)
		hit(t, app+"/lock", 5)
		const sent = 30 + 10 + 8 + 5
		// The runtime collects one instrument after another: a window
		// can read http.server.active_requests before the last request
		// ends and its duration after, so the gauge is checked in the
		// window where the counts are whole and no request is open.
		text := waitFor(fmt.Sprintf("%d requests and none active", sent), 60*time.Second, func(s string) bool {
			hosting, _ := sumSeries(s, "http_server_request_duration_seconds_count", lbl)
			own, _ := sumSeries(s, "clrdiag_web_requests_total", lbl)
			active, n := sumSeries(s, "http_server_active_requests", lbl)
			return hosting == sent && own == sent && n > 0 && active == 0
		})
		for route, n := range map[string]float64{"/": 30, "/throw": 10, "/alloc": 8, "/lock": 5} {
			got, series := sumSeries(text, "http_server_request_duration_seconds_count", lbl, `http_route="`+route+`"`)
			own, _ := sumSeries(text, "clrdiag_web_requests_total", lbl, `route="`+route+`"`)
			if got != n || series != 1 || own != n {
				t.Errorf("route %s: Hosting counted %v in %d series, the app's Meter %v; the test sent %v", route, got, series, own, n)
			}
		}
		if strings.Contains(text, "http_server_active_requests_total") || !strings.Contains(text, "# TYPE http_server_active_requests gauge") {
			t.Errorf("the up-down counter http.server.active_requests is not a gauge")
		}
		if rt.Major >= 10 {
			// The runtime's Meter: levels as gauges, with their
			// OpenTelemetry names; exceptions counted.
			for _, gauge := range []string{"dotnet_assembly_count", "dotnet_process_cpu_count", "dotnet_thread_pool_thread_count", "dotnet_thread_pool_queue_length"} {
				if !strings.Contains(text, "# TYPE "+gauge+" gauge\n") {
					t.Errorf("no gauge %s", gauge)
				}
			}
			if exc, _ := sumSeries(text, "dotnet_exceptions_total", lbl); exc < 10 {
				t.Errorf("dotnet_exceptions_total %v after 10 requests to /throw", exc)
			}
		}
		checkExposition(t, text)
		if rt.Major >= 10 {
			// GET /processes/{pid}/counters reads the collector's samples:
			// the names /metrics reads (the Meter's, not the EventCounters
			// the runtime also publishes), rates per second.
			resp, err := http.Get(fmt.Sprintf("%s/processes/%d/counters?duration=3s", base, tg.PID))
			if err != nil {
				t.Fatal(err)
			}
			var samples []struct {
				Provider      string   `json:"provider"`
				Name          string   `json:"name"`
				Kind          string   `json:"kind"`
				RatePerSecond *float64 `json:"ratePerSecond"`
				Elapsed       float64  `json:"elapsedSeconds"`
			}
			err = json.NewDecoder(resp.Body).Decode(&samples)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("counters route: %d %v", resp.StatusCode, err)
			}
			names := map[string]bool{}
			for _, sm := range samples {
				names[sm.Name] = true
				if sm.Kind == "rate" && (sm.RatePerSecond == nil || sm.Elapsed <= 0) {
					t.Errorf("a rate without its rate per second: %+v", sm)
				}
			}
			if !names["dotnet.gc.collections"] || !names["dotnet.process.cpu.time"] || names["cpu-usage"] || names["gen-0-gc-count"] {
				t.Errorf("the counters route on .NET %d names %v", rt.Major, names)
			}
		}
		if rt.Major == 10 {
			return // the dashboard runs on 8 and 11
		}

		b := browsertest.Start(t, browsertest.Config{Timeout: 4 * time.Minute})
		showProcess(t, b, base, tg.PID)
		load, stopLoad := context.WithCancel(context.Background())
		defer stopLoad()
		go func() { // exceptions, allocations and collections to draw
			for load.Err() == nil {
				for _, path := range []string{"/throw", "/alloc?mb=4", "/"} {
					if resp, err := http.Get(app + path); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		drawn := browsertest.Wait[[]string](b, "values in every chart", `(() => {
			const charts = [...document.querySelectorAll('.chart')];
			const drawn = charts.filter(c => c.querySelector('.nodata').hidden &&
				[...c.querySelectorAll('polyline.series')].some(p => JSON.parse(p.getAttribute('data-points')).length >= 3));
			return charts.length === 6 && drawn.length === 6 && charts.map(c => c.dataset.chart + ': ' + c.querySelector('.legend').innerText.replace(/\s+/g, ' '));
		})()`, 90*time.Second)
		t.Logf(".NET %d charts: %q", rt.Major, drawn)
		// The load shows: exceptions thrown and megabytes allocated.
		busy := browsertest.Wait[string](b, "exceptions and allocations drawn", `(() => {
			const last = (chart, key) => {
				const pts = [...document.querySelectorAll('.chart[data-chart="' + chart + '"] polyline.series[data-series="' + key + '"]')].flatMap(p => JSON.parse(p.getAttribute('data-points')));
				return pts.length ? pts[pts.length - 1][1] : 0;
			};
			return last('exceptions', 'exception-count') > 0 && last('alloc', 'alloc-rate') > 1e6 &&
				document.querySelector('.chart[data-chart="exceptions"] .legend').innerText + ' ' + document.querySelector('.chart[data-chart="alloc"] .legend').innerText;
		})()`, 60*time.Second)
		t.Logf(".NET %d under load: %s", rt.Major, strings.Join(strings.Fields(busy), " "))
		b.Screenshot(fmt.Sprintf("dashboard-net%d", rt.Major))
		if rt.Major >= 11 {
			resp, err := http.Get(fmt.Sprintf("%s/ui/api/processes/%d/counters", base, tg.PID))
			if err != nil {
				t.Fatal(err)
			}
			var api struct {
				Series map[string]struct {
					Name string            `json:"name"`
					Tags map[string]string `json:"tags"`
					Kind string            `json:"kind"`
				} `json:"series"`
			}
			err = json.NewDecoder(resp.Body).Decode(&api)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			gen0 := api.Series["dotnet.gc.collections{gc.heap.generation=gen0}"]
			if gen0.Name != "dotnet.gc.collections" || gen0.Tags["gc.heap.generation"] != "gen0" || gen0.Kind != "rate" {
				t.Errorf("tagged series in the dashboard's API: %+v", gen0)
			}
			if api.Series["cpu-usage"].Name != "" {
				t.Errorf("the EventCounters stay next to the Meter: %v", api.Series["cpu-usage"])
			}
			if k := api.Series["dotnet.thread_pool.thread.count"].Kind; k != "updown" {
				t.Errorf("dotnet.thread_pool.thread.count is %q, want updown", k)
			}
		}
		if p := b.Problems(); len(p) > 0 {
			t.Errorf("the page reported errors: %q", p)
		}
	})
}

// metersState is the Meters session of pid as the dashboard's process list
// shows it (reading it does not count as reading the values).
func metersState(t *testing.T, base string, pid int) string {
	t.Helper()
	resp, err := http.Get(base + "/ui/api/processes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Processes []struct {
			PID    int    `json:"pid"`
			Meters string `json:"meters"`
		} `json:"processes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Processes {
		if p.PID == pid {
			return p.Meters
		}
	}
	return "not listed"
}

// runDotnetCounters runs Microsoft's dotnet-counters collect on pid for 4 s
// and returns the instrument names of its JSON file and its output.
func runDotnetCounters(t *testing.T, tools *dotnettest.Tools, pid int) (names map[string]bool, out string) {
	t.Helper()
	file := t.TempDir() + "/dc.json"
	cmd := tools.Command("dotnet-counters", "collect", "-p", fmt.Sprint(pid), "--format", "json", "-o", file, "--duration", "00:00:00:04")
	b, err := cmd.CombinedOutput()
	out = string(b)
	if err != nil {
		return nil, out + err.Error()
	}
	var doc struct {
		Events []struct {
			Name string `json:"name"`
		} `json:"Events"`
	}
	data, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(data, &doc) != nil {
		return nil, out
	}
	names = map[string]bool{}
	for _, e := range doc.Events {
		names[e.Name] = true
	}
	return names, out
}

// TestLiveMonitorLeavesMetricsSessionFree is issue 31's "the monitor holds
// a Metrics session in every process it serves, so dotnet-counters then
// fails there", on .NET 11 with Microsoft's dotnet-counters 10.0.750501,
// which asks for a private Metrics session (a .NET 8+ runtime refuses one
// while any other exists, the shared one included). The monitor holds its
// Meters session only while someone reads the values: dotnet-counters
// works next to a monitor nobody reads, and again once the reads stop for
// MetricsIdle. While the monitor holds the shared session, clrdiag's own
// counters (asking for the shared session with the same settings) share
// it, and the monitor's values go on after they leave.
func TestLiveMonitorLeavesMetricsSessionFree(t *testing.T) {
	rt := dotnettest.FindVersion(t, 11)
	tools := dotnettest.FindTools(t)
	tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
	base := serveLive(t, monitor.Config{NoAuth: true, MetricsWindow: time.Second, DiscoveryInterval: time.Second,
		MetricsIdle: 3 * time.Second, Source: monitor.StaticSource{processOf(tg)}})
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wait("the collector to know the runtime", func() bool { return metersState(t, base, tg.PID) == "idle" })
	names, out := runDotnetCounters(t, tools, tg.PID)
	if !names["dotnet.gc.collections ({collection} / 1 sec)"] {
		t.Fatalf("dotnet-counters next to a monitor nobody reads: %v\n%s", names, out)
	}

	// Read: the Meters session opens.
	wait("the Meters session open", func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text := mustRead(t, resp)
		resp.Body.Close()
		return metersState(t, base, tg.PID) == "up" && strings.Contains(text, "dotnet_gc_collections_total{")
	})
	// clrdiag's counters share it: values arrive, no warning.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := counters.Start(ctx, diag.NewClient(endpointOf(tg), nil), counters.Config{MetricsRefreshInterval: time.Second,
		Specs: []counters.Spec{{Provider: "System.Runtime"}}, MetersOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var got, warned []string
	rctx, stopRun := context.WithCancel(ctx)
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- s.Run(rctx, func(u counters.Update) error {
			mu.Lock()
			defer mu.Unlock()
			if u.Warning != nil {
				warned = append(warned, u.Warning.String())
			} else if u.Sample.Meter {
				got = append(got, u.Sample.Name)
			}
			return nil
		})
	}()
	wait("clrdiag counters' values in the shared session", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) > 20 })
	stopRun()
	<-done
	s.Close()
	if s.Plan.SessionID != counters.SharedSessionID || len(warned) > 0 {
		t.Errorf("session %q, warnings %q", s.Plan.SessionID, warned)
	}
	// While the monitor is read, dotnet-counters' private session is
	// refused by the runtime (logged, as the README says).
	_, out = runDotnetCounters(t, tools, tg.PID)
	t.Logf("dotnet-counters while the monitor is read: %s", strings.TrimSpace(out))
	// The monitor's values go on after the other client left.
	readGC := func() float64 {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		v, _ := sumSeries(mustRead(t, resp), "dotnet_process_cpu_time_seconds_total", fmt.Sprintf(`pid="%d"`, tg.PID))
		return v
	}
	before := readGC()
	wait("the monitor's Meter values after clrdiag counters left", func() bool { hit(t, webURL(t, tg)+"/alloc?mb=8", 3); return readGC() > before })

	// No more reads: the session closes, dotnet-counters works again.
	wait("the Meters session closed", func() bool { return metersState(t, base, tg.PID) == "idle" })
	names, out = runDotnetCounters(t, tools, tg.PID)
	if !names["dotnet.gc.collections ({collection} / 1 sec)"] {
		t.Errorf("dotnet-counters after the monitor's reads stopped: %v\n%s", names, out)
	}
}

// TestLiveReverseSourceNames serves a real .NET 8 runtime that connects to
// the monitor's diagnostic port: it is listed with its name (issue 31: an
// empty name in /processes, /metrics and the dashboard), its requests work,
// and once it exited it leaves the list and its requests fail at once.
func TestLiveReverseSourceNames(t *testing.T) {
	rt := dotnettest.FindVersion(t, 8)
	path := t.TempDir() + "/port.sock"
	srv, err := reverse.Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src := monitor.NewReverseSource(srv)
	base := serveLive(t, monitor.Config{NoAuth: true, NoMetrics: true, Source: src})
	tg := rt.Start(t, rt.Build(t, "Basic"), nil, &dotnettest.Options{Env: []string{"DOTNET_DiagnosticPorts=" + path + ",nosuspend"}, NoWaitSocket: true})
	list := func() []monitor.Process {
		resp, err := http.Get(base + "/processes")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var procs []monitor.Process
		if err := json.NewDecoder(resp.Body).Decode(&procs); err != nil {
			t.Fatal(err)
		}
		return procs
	}
	deadline := time.Now().Add(30 * time.Second)
	var procs []monitor.Process
	for {
		procs = list()
		if len(procs) == 1 && procs[0].Name != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runtime is not listed with a name: %+v", procs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p := procs[0]; p.PID != tg.PID || p.Name != "dotnet" || !strings.Contains(p.CommandLine, "dotnet") {
		t.Errorf("listed as %+v, want pid %d named dotnet", p, tg.PID)
	}
	resp, err := http.Get(fmt.Sprintf("%s/processes/%d", base, tg.PID))
	if err != nil {
		t.Fatal(err)
	}
	info := mustRead(t, resp)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(info, `"clrProductVersion": "8.`) {
		t.Errorf("info: %d %s", resp.StatusCode, info)
	}
	tg.Kill()
	deadline = time.Now().Add(30 * time.Second)
	for len(list()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the runtime that exited is still listed: %+v", list())
		}
		// A request to it fails in ReconnectTimeout at most.
		began := time.Now()
		if resp, err := http.Get(fmt.Sprintf("%s/processes/%d", base, tg.PID)); err == nil {
			resp.Body.Close()
		}
		if d := time.Since(began); d > monitor.DefaultReconnectTimeout+5*time.Second {
			t.Errorf("a request to the runtime that exited took %v", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
