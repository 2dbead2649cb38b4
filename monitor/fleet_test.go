//go:build unix

package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	pprof "github.com/google/pprof/profile"
)

// fleetConfig writes yaml to a file and loads it as the monitor does.
func fleetConfig(t *testing.T, yaml string) *monitor.FleetConfig {
	t.Helper()
	p := filepath.Join(t.TempDir(), "monitor.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := monitor.LoadFleetConfig(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fc
}

// waitJSON polls a route until ok accepts its decoded answer.
func waitJSON[T any](t *testing.T, hs *httptest.Server, path string, ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v T
		code, body := do(t, hs, "GET", path)
		if code != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s never answered what was waited for: %s", path, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rule's running action is an operation: listed with its state, and
// DELETE /operations/{id} cancels it (the rule's later actions are
// skipped). The fake runtime's trace never ends by itself.
func TestOperationsCancel(t *testing.T) {
	capture := testcapture.Load(t, "misc/net6.0.9-windows.nettrace")
	f := fake(t, ipctest.Config{Runtime: ipctest.NET8, PID: 81, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		_, err := s.Stream.Write(capture)
		select {
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return err
	}})
	fc := fleetConfig(t, `CollectionRules:
  Long:
    Trigger: {Type: Startup}
    Actions:
      - {Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:05:00"}}
      - {Type: Execute, Settings: {Path: /bin/true}}
`)
	hs := serve(t, monitor.Config{NoMetrics: true, Fleet: fc, ArtifactDir: t.TempDir(), DiscoveryInterval: 50 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 81, Name: "app", Dialer: f}, {PID: 82, Name: "other", Dialer: f}}})

	type op struct {
		ID     string `json:"operationId"`
		PID    int    `json:"pid"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	ops := waitJSON(t, hs, "/operations?pid=81", func(ops []op) bool { return len(ops) == 1 && ops[0].Status == "Running" })
	if ops[0].PID != 81 {
		t.Fatalf("%+v", ops)
	}
	rules := waitJSON(t, hs, "/collectionrules?pid=81", func(rs []map[string]any) bool { return len(rs) == 1 })
	if rules[0]["state"] != "ActionExecuting" || rules[0]["rule"] != "Long" {
		t.Fatalf("%v", rules)
	}
	code, body := do(t, hs, "DELETE", "/operations/"+ops[0].ID)
	var got op
	if code != 200 || json.Unmarshal(body, &got) != nil || got.Status != "Cancelled" {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, body := do(t, hs, "DELETE", "/operations/"+ops[0].ID); code != http.StatusConflict || !strings.Contains(string(body), "already ended") {
		t.Errorf("DELETE again: %d %s", code, body)
	}
	// The Startup rule is done with the process; its Execute never ran.
	waitJSON(t, hs, "/collectionrules/long?pid=81", func(rs []map[string]any) bool { return len(rs) == 1 && rs[0]["state"] == "Finished" })
	all := waitJSON(t, hs, "/operations", func(ops []op) bool { return len(ops) == 2 })
	if all[0].PID == all[1].PID {
		t.Errorf("operations %+v", all)
	}

	for path, want := range map[string]string{
		"/operations/nosuch":            "no operation",
		"/collectionrules/nosuch":       "no collection rule",
		"/collectionrules?pid=x":        "bad process id",
		"/processes/81/logs?level=Loud": "unknown log level",
		"/processes/81/logs?filter=x":   "CATEGORY:LEVEL",
		"/processes/81/logs?format=xml": "unknown format",
		"/processes/81/logs?nosuch=1":   "unknown parameter",
		"/pprof/nosuch/profile":         "no .NET process named",
		"/pprof/81/profile?seconds=-1":  "bad seconds",
		"/pprof/81/profile?debug=1":     "unknown parameter",
	} {
		code, body := do(t, hs, "GET", path)
		if code < 400 || !strings.Contains(string(body), want) || !strings.HasPrefix(string(body), "{") {
			t.Errorf("GET %s: %d %s; want a JSON error saying %q", path, code, body, want)
		}
	}
}

// The same name on two processes cannot name a stable pprof path.
func TestPprofAmbiguousName(t *testing.T) {
	f := fake(t, ipctest.Config{PID: 83})
	hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 83, Name: "twin", Dialer: f}, {PID: 84, Name: "twin", Dialer: f}}})
	if code, body := do(t, hs, "GET", "/pprof/twin/alloc?seconds=1"); code != http.StatusConflict || !strings.Contains(string(body), "pids 83, 84") {
		t.Errorf("%d %s", code, body)
	}
}

// TestRealPyroscopePush: the continuous profiler profiles a real .NET Core
// 3.1 process on its interval and pushes each profile in Pyroscope's
// /ingest form, named by OTEL_SERVICE_NAME with the pod and namespace of
// POD_NAME and POD_NAMESPACE. No Pyroscope runs here: the receiver is this
// test's, which reads the request as Pyroscope's ingest API describes it
// (telemetry/pyroscope checks the format field by field) and decodes the
// profile.
func TestRealPyroscopePush(t *testing.T) {
	rt := dotnettest.Find(t)
	hot := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
	type ingest struct {
		q       url.Values
		profile *pprof.Profile
		config  map[string]any
	}
	got := make(chan ingest, 16)
	var once sync.Once
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ingest" || r.Method != "POST" {
			http.Error(w, "no", 404)
			return
		}
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		in := ingest{q: r.URL.Query()}
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			b, _ := io.ReadAll(p)
			switch p.FormName() {
			case "profile":
				in.profile, err = pprof.ParseData(b)
			case "sample_type_config":
				err = json.Unmarshal(b, &in.config)
			}
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
		}
		once.Do(func() { got <- in })
	}))
	t.Cleanup(rx.Close)
	t.Setenv("OTEL_SERVICE_NAME", "shop")
	t.Setenv("POD_NAME", "shop-7d9")
	t.Setenv("POD_NAMESPACE", "prod")
	fc := fleetConfig(t, fmt.Sprintf(`Telemetry:
  Pyroscope: {Url: "%s", Labels: {cluster: test}}
  Profiling: {Interval: "00:00:10", Duration: "00:00:02"}
`, rx.URL))
	serve(t, monitor.Config{NoMetrics: true, Fleet: fc, Source: monitor.StaticSource{targetProcess(hot, "Hot")}})
	var in ingest
	select {
	case in = <-got:
	case <-time.After(90 * time.Second):
		t.Fatal("no profile pushed within 90s")
	}
	want := fmt.Sprintf("shop{cluster=test,namespace=prod,pid=%d,pod=shop-7d9}", hot.PID)
	if in.q.Get("name") != want || in.q.Get("format") != "pprof" || in.q.Get("from") == "" || in.q.Get("until") < in.q.Get("from") {
		t.Errorf("ingest query %v, want name=%s", in.q, want)
	}
	if in.config["wall"] == nil || in.config["cpu"] == nil {
		t.Errorf("sample_type_config %v", in.config)
	}
	found := false
	for _, f := range in.profile.Function {
		found = found || f.Name == "Hot.Burner.MostlyHot"
	}
	if !found || len(in.profile.Sample) == 0 {
		t.Errorf("the pushed profile has no Hot.Burner.MostlyHot: %d samples", len(in.profile.Sample))
	}
}
