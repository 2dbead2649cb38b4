//go:build unix

package monitor_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport"
)

// get is do with the response's headers.
func get(t *testing.T, hs *httptest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	return request(t, hs.Client(), "GET", hs.URL+path)
}

// Heap snapshots: a .gcdump of the fake heap, by both spellings of the
// route, errors, and one snapshot at a time per process.
func TestGCDump(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 90, Tracing: gcdumptest.Session(gcdumptest.Leaky(20), gcdumptest.Options{})})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 90, Name: "app", Dialer: f}}})
	for _, path := range []string{"/processes/90/gcdump", "/gcdump?pid=90"} {
		resp, body := get(t, hs, path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename="app_`) {
			t.Fatalf("%s: %d %v %.300s", path, resp.StatusCode, resp.Header, body)
		}
		g, err := gcdump.Read(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
		if err != nil || r.Objects != 44 || g.Info.ProcessName != "app" || g.Info.ProcessID != 90 {
			t.Fatalf("%s: %+v %v", path, r, err)
		}
		// 3.1 has no Block buffering, and nobody asked for it: no warning
		// (gcdump.BufferingAuto).
		if strings.Contains(strings.Join(resp.Header.Values("X-Clrdiag-Warning"), "\n"), "Block buffering") {
			t.Errorf("%s: warnings %q", path, resp.Header.Values("X-Clrdiag-Warning"))
		}
	}
	for path, want := range map[string]int{"/gcdump": 400, "/gcdump?pid=x": 400, "/gcdump?pid=91": 404, "/processes/90/gcdump?timeout=-1s": 400} {
		if code, body := do(t, hs, "GET", path); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp, body := get(t, hs, "/processes/90/gcdump")
			if resp.StatusCode != 200 {
				t.Errorf("concurrent gcdump: %d %.200s", resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	// Each session (the type-table flush, then the heap session) is
	// stopped before the next one starts, across requests too.
	open, sessions := 0, 0
	for _, rq := range f.Requests() {
		switch req := rq.Request.(type) {
		case *ipc.CollectTracingRequest:
			if req.Version < 6 { // 3.1 refuses CollectTracing6: no session
				open++
				sessions++
			}
		case *ipc.StopTracingRequest:
			open--
		}
		if open > 1 {
			t.Fatalf("two sessions at once: %+v", f.Requests())
		}
	}
	if sessions != 2*5 {
		t.Errorf("%d sessions for 5 snapshots", sessions)
	}

	// A heap walk that does not end: 504 after the timeout.
	stuck := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 92, Tracing: gcdumptest.Session(gcdumptest.Leaky(2), gcdumptest.Options{NoGCEnd: true})})
	hs = serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 92, Dialer: stuck}}})
	if code, body := do(t, hs, "GET", "/processes/92/gcdump?timeout=1"); code != http.StatusGatewayTimeout || !strings.Contains(string(body), "still running") {
		t.Errorf("stuck walk: %d %s", code, body)
	}
}

// A real .NET Core 3.1 process: the Heap target's snapshot over HTTP.
func TestRealRuntimeGCDump(t *testing.T) {
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
	p := monitor.Process{PID: tg.PID, Name: "dotnet", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	hs := serve(t, monitor.Config{Source: monitor.StaticSource{p}})
	resp, body := get(t, hs, fmt.Sprintf("/processes/%d/gcdump", tg.PID))
	if resp.StatusCode != 200 {
		t.Fatalf("gcdump: %d %.300s", resp.StatusCode, body)
	}
	g, err := gcdump.Read(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ty := range r.Types {
		found = found || (ty.Name == "Heap.StaticItem" && ty.Count == 100 && ty.Size == 3200)
	}
	if !found {
		t.Errorf("no 100 Heap.StaticItem in %+v", r.Types)
	}
}
