//go:build unix

package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
)

// TestIndexListsEveryRoute: GET / lists the routes with their parameters,
// and every route it lists is served.
func TestIndexListsEveryRoute(t *testing.T) {
	capture := testcapture.Load(t, "misc/net6.0.9-windows.nettrace")
	f := fake(t, ipctest.Config{Runtime: ipctest.NET8, PID: 61, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		_, err := s.Stream.Write(capture)
		<-s.Stopped
		return err
	}})
	hs := serve(t, monitor.Config{NoMetrics: true, Version: "v9.9.9", Source: monitor.StaticSource{{PID: 61, Name: "app", Dialer: f}}})
	code, body := do(t, hs, "GET", "/")
	var idx struct{ Routes []monitor.Route }
	if code != 200 || json.Unmarshal(body, &idx) != nil {
		t.Fatalf("GET /: %d %s", code, body)
	}
	if len(idx.Routes) != len(monitor.Routes())-1 { // /metrics is off
		t.Errorf("GET / lists %d routes, want every route but /metrics", len(idx.Routes))
	}
	// Full mode runs every route for real (durations of 300 ms, profiles
	// of a second). -short runs them for 100 ms and asks the profile
	// routes for 0 seconds, which their own handler refuses (a JSON 400):
	// served all the same, in a second in all rather than seven.
	duration, seconds := "duration=300ms", "seconds=1"
	if testing.Short() {
		duration, seconds = "duration=100ms", "seconds=0"
	}
	for _, rt := range idx.Routes {
		if rt.Summary == "" {
			t.Errorf("%s %s has no summary", rt.Method, rt.Path)
		}
		for _, p := range rt.Params {
			if p.Description == "" || (p.In != "path" && p.In != "query") {
				t.Errorf("%s %s: parameter %+v", rt.Method, rt.Path, p)
			}
		}
		path := strings.NewReplacer("{pid}", "61", "{process}", "app", "{id}", "nosuch", "{name}", "nosuch").Replace(rt.Path)
		q := []string{}
		if rt.DotnetMonitor && rt.Path != "/info" {
			q = append(q, "pid=61")
		}
		for _, p := range rt.Params {
			switch p.Name {
			case "duration":
				q = append(q, duration)
			case "timeout":
				q = append(q, "timeout=1s")
			case "seconds":
				q = append(q, seconds)
			}
		}
		if len(q) > 0 {
			path += "?" + strings.Join(q, "&")
		}
		req, _ := http.NewRequest(rt.Method, hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := hs.Client().Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Errorf("%s %s: %v", rt.Method, path, err)
			continue
		}
		resp.Body.Close()
		cancel()
		// A 404 of the route's own handler (JSON: no such operation or
		// rule) shows the route is served; the mux's is plain text.
		handled := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
		if resp.StatusCode == http.StatusNotFound && !handled || resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s %s is listed but answers %d", rt.Method, path, resp.StatusCode)
		}
	}
	if code, body := do(t, hs, "GET", "/nosuch"); code != http.StatusNotFound {
		t.Errorf("GET /nosuch: %d %s (the index must not catch every path)", code, body)
	}
	code, body = do(t, hs, "GET", "/info")
	if code != 200 || !strings.Contains(string(body), `"version": "v9.9.9"`) || !strings.Contains(string(body), `"diagnosticPortMode": "Connect"`) {
		t.Errorf("GET /info: %d %s", code, body)
	}
}

// TestDotnetMonitorSpellings: the query-string routes and parameter names
// of dotnet-monitor reach the same handlers.
func TestDotnetMonitorSpellings(t *testing.T) {
	capture := testcapture.Load(t, "misc/net6.0.9-windows.nettrace")
	f := fake(t, ipctest.Config{Runtime: ipctest.NET8, PID: 62, DumpContent: []byte("MDMP fake dump"),
		Environment: []string{"A=1"},
		Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
			_, err := s.Stream.Write(capture)
			<-s.Stopped
			return err
		}})
	dir := t.TempDir()
	hs := serve(t, monitor.Config{NoMetrics: true, DumpDir: dir, Source: monitor.StaticSource{{PID: 62, Name: "app", Dialer: f}, {PID: 63, Name: "twin", Dialer: f}, {PID: 64, Name: "twin", Dialer: f}}})

	code, body := do(t, hs, "GET", "/process?pid=62")
	var pi map[string]any
	if code != 200 || json.Unmarshal(body, &pi) != nil || pi["pid"] != 62.0 || pi["uid"] == nil || pi["operatingSystem"] == nil || pi["processArchitecture"] == nil {
		t.Errorf("GET /process?pid=: %d %s", code, body)
	}
	if code, body := do(t, hs, "GET", "/process?name=APP"); code != 200 || !strings.Contains(string(body), `"pid": 62`) {
		t.Errorf("GET /process?name=: %d %s", code, body)
	}
	if code, body := do(t, hs, "GET", "/env?pid=62"); code != 200 || !strings.Contains(string(body), `"A": "1"`) {
		t.Errorf("GET /env?pid=: %d %s", code, body)
	}
	// GET /dump streams the dump back (and keeps it in the dump directory).
	code, body = do(t, hs, "GET", "/dump?pid=62&type=WithHeap")
	if code != 200 || !bytes.Equal(body, []byte("MDMP fake dump")) {
		t.Errorf("GET /dump: %d %q", code, body)
	}
	if d := f.Dumps(); len(d) != 1 || d[0].Type != ipc.DumpWithHeap || !strings.HasPrefix(d[0].Path, dir) {
		t.Errorf("dump requests %+v", d)
	}
	// durationSeconds and dotnet-monitor's Cpu profile.
	code, body = do(t, hs, "GET", "/trace?pid=62&profile=Cpu&durationSeconds=1")
	if code != 200 || !bytes.HasPrefix(body, []byte("Nettrace")) {
		t.Errorf("GET /trace: %d %.100q", code, body)
	}
	reqs := f.Requests()
	var sampler bool
	for _, r := range reqs {
		if ct, ok := r.Request.(*ipc.CollectTracingRequest); ok {
			for _, p := range ct.Providers {
				sampler = sampler || p.Name == "Microsoft-DotNETCore-SampleProfiler"
			}
		}
	}
	if !sampler {
		t.Error("profile=Cpu did not enable the sample profiler")
	}
	for path, want := range map[string]string{
		"/trace?pid=62&profile=Http":                        "not supported",
		"/trace?pid=62&durationSeconds=-1":                  "endless",
		"/trace?pid=62&durationSeconds=1&duration=2s":       "not both",
		"/dump?pid=62&egressProvider=blob":                  "egressProvider",
		"/process?uid=5b7c0f6e-0000-0000-0000-000000000000": "uid=",
		"/process":             "?pid=N or ?name=NAME",
		"/process?name=twin":   "2 processes are named",
		"/process?name=nosuch": "named dotnet",
		"/process?pid=x":       "bad process id",
	} {
		code, body := do(t, hs, "GET", path)
		if code < 400 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %s; want an error saying %q", path, code, body, want)
		}
	}
}

// Every error is JSON, also for a path no route serves (issue 31: a path
// with no route answered a plain-text 404) and a method a route does not
// take.
func TestErrorsAreJSON(t *testing.T) {
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{}})
	for _, tt := range []struct {
		method, path string
		code         int
		allow, msg   string
	}{
		{"GET", "/parameters", 404, "", "no route GET /parameters (GET / lists the routes)"},
		{"GET", "/logs", 400, "", "give the process as ?pid=N or ?name=NAME (see GET /processes)"},
		{"GET", "/processes/1/dump", 405, "POST", "GET /processes/1/dump: this path takes POST (GET / lists the routes)"},
		{"POST", "/processes", 405, "GET", "POST /processes: this path takes GET (GET / lists the routes)"},
		{"GET", "/metrics", 404, "", "/metrics is off: the monitor runs with --no-metrics"},
		{"GET", "/ui/api/nothing", 404, "", "no route GET /ui/api/nothing (GET / lists the routes)"},
		{"GET", "/processes/1", 404, "", "no .NET process with pid 1 (see GET /processes)"},
	} {
		req, _ := http.NewRequest(tt.method, hs.URL+tt.path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || err != nil || body.Error != tt.msg || resp.Header.Get("Allow") != tt.allow ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s Allow %q (%v) %q; want %d %q Allow %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("Allow"), err, body.Error, tt.code, tt.msg, tt.allow)
		}
	}
}
