package pyroscope_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/pyroscope"
	"github.com/clrdiag/clrdiag/weighted"
	pprof "github.com/google/pprof/profile"
)

// realPprof is the wall-time pprof of a real capture, as clrdiag exports it.
func realPprof(t *testing.T, measure string) []byte {
	t.Helper()
	f, err := os.Open(testcapture.Path(t, "clrdiag/hot-3.1.2-linux-x64.nettrace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Read(f, profile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	wp, err := p.Weighted(measure)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := weighted.WritePprof(&b, wp); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The ingestion API as Pyroscope's server reference documents it ("Pyroscope
// server HTTP API", Ingestion, pprof format) and its parser applies it.
var (
	// Query parameters the reference lists.
	documentedParams = map[string]bool{"name": true, "from": true, "until": true, "format": true, "sampleRate": true,
		"spyName": true, "units": true, "aggregationType": true}
	// Application names: letters, digits, '_', '.', '-', '/'.
	appName = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)
	// Label names: letters, digits, '_', '.'.
	labelName = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)
	// The sample type configuration's fields and their documented values.
	stcFields    = map[string]bool{"units": true, "aggregation": true, "display-name": true, "sampled": true, "cumulative": true}
	aggregations = map[string]bool{"sum": true, "average": true}
)

// ingest is what a request carried, checked against the documented API.
type ingest struct {
	app    string
	labels map[string]string
	from   time.Time
	until  time.Time
	pprof  []byte
	stc    map[string]map[string]any
	header http.Header
	query  map[string]string
}

// checkIngest checks r field by field and returns what it carried.
func checkIngest(t *testing.T, r *http.Request) ingest {
	t.Helper()
	var in ingest
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" {
		t.Errorf("%s %s, want POST /ingest", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	in.query = map[string]string{}
	for k, v := range q {
		if !documentedParams[k] {
			t.Errorf("query parameter %q is not in the API", k)
		}
		if len(v) != 1 {
			t.Errorf("query parameter %q given %d times", k, len(v))
		}
		in.query[k] = v[0]
	}
	if q.Get("format") != "pprof" {
		t.Errorf("format=%q, want pprof", q.Get("format"))
	}
	// name: APP{k=v,...}
	name := q.Get("name")
	app, rest, ok := strings.Cut(name, "{")
	if !ok || !strings.HasSuffix(rest, "}") || !appName.MatchString(app) {
		t.Errorf("name %q is not APP{labels}", name)
		return in
	}
	in.app, in.labels = app, map[string]string{}
	if body := strings.TrimSuffix(rest, "}"); body != "" {
		for _, kv := range strings.Split(body, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !labelName.MatchString(k) || k == "__name__" || v == "" || v != strings.TrimSpace(v) || strings.ContainsAny(v, "{}") {
				t.Errorf("label %q of %q breaks the name syntax", kv, name)
			}
			in.labels[k] = v
		}
	}
	// from and until: Unix seconds (the parser also takes ms, us and ns,
	// told apart by their digit count).
	for _, p := range []struct {
		key string
		t   *time.Time
	}{{"from", &in.from}, {"until", &in.until}} {
		v := q.Get(p.key)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(v) != 10 {
			t.Errorf("%s=%q is not Unix seconds", p.key, v)
		}
		*p.t = time.Unix(n, 0)
	}
	if in.until.Before(in.from) {
		t.Errorf("until %v before from %v", in.until, in.from)
	}
	// The body: a multipart form with the pprof in "profile" and the JSON
	// sample type configuration in "sample_type_config".
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		t.Errorf("Content-Type %q, want multipart/form-data with a boundary", r.Header.Get("Content-Type"))
		return in
	}
	form, err := multipart.NewReader(r.Body, params["boundary"]).ReadForm(32 << 20)
	if err != nil {
		t.Errorf("the body is not a multipart form: %v", err)
		return in
	}
	defer form.RemoveAll()
	read := func(field string) []byte {
		fhs := form.File[field]
		if len(fhs) != 1 {
			t.Errorf("form file field %q: %d parts, want 1", field, len(fhs))
			return nil
		}
		f, err := fhs[0].Open()
		if err != nil {
			t.Error(err)
			return nil
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		return b
	}
	for k := range form.File {
		if k != "profile" && k != "sample_type_config" {
			t.Errorf("unexpected form field %q", k)
		}
	}
	in.pprof = read("profile")
	parsed, err := pprof.ParseData(in.pprof)
	if err != nil {
		t.Errorf("the profile field is not a pprof: %v", err)
		return in
	}
	types := map[string]bool{}
	for _, st := range parsed.SampleType {
		types[st.Type] = true
	}
	if err := json.Unmarshal(read("sample_type_config"), &in.stc); err != nil {
		t.Errorf("sample_type_config: %v", err)
	}
	for typ, fields := range in.stc {
		if !types[typ] {
			t.Errorf("sample_type_config names %q, which the profile does not have", typ)
		}
		for f, v := range fields {
			if !stcFields[f] {
				t.Errorf("sample_type_config[%q] has field %q, not in the API", typ, f)
			}
			switch f {
			case "aggregation":
				if !aggregations[v.(string)] {
					t.Errorf("sample_type_config[%q].aggregation = %v", typ, v)
				}
			case "sampled", "cumulative":
				if _, ok := v.(bool); !ok {
					t.Errorf("sample_type_config[%q].%s = %v, want a boolean", typ, f, v)
				}
			default:
				if _, ok := v.(string); !ok {
					t.Errorf("sample_type_config[%q].%s = %v, want a string", typ, f, v)
				}
			}
		}
	}
	in.header = r.Header
	return in
}

// TestIngestRequestFollowsTheAPI sends the wall and alloc pprof of a real
// capture and checks each request field by field.
func TestIngestRequestFollowsTheAPI(t *testing.T) {
	var mu sync.Mutex
	var got []ingest
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := checkIngest(t, r)
		mu.Lock()
		got = append(got, in)
		mu.Unlock()
	}))
	defer hs.Close()
	e, err := pyroscope.New(pyroscope.Config{URL: hs.URL, TenantID: "team-a", BearerToken: "tok",
		Labels: map[string]string{"env": "prod,eu", "bad key!": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	res := telemetry.ProcessResource(telemetry.Process{PID: 4242, Name: "Shop Api"}, func(k string) string {
		return map[string]string{"POD_NAME": "shop-api-7d9", "POD_NAMESPACE": "prod"}[k]
	})
	start := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	wall := realPprof(t, profile.MeasureWall)
	e.Export(pyroscope.Profile{Resource: res, Start: start, End: start.Add(10 * time.Second), PProf: wall})
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	defer fcancel()
	if err := e.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	in := got[0]
	if in.app != "Shop_Api" {
		t.Errorf("app %q", in.app)
	}
	want := map[string]string{"pod": "shop-api-7d9", "namespace": "prod", "pid": "4242", "env": "prod_eu", "bad_key_": "x"}
	if len(in.labels) != len(want) {
		t.Errorf("labels %v, want %v", in.labels, want)
	}
	for k, v := range want {
		if in.labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, in.labels[k], v)
		}
	}
	if !in.from.Equal(start) || !in.until.Equal(start.Add(10*time.Second)) {
		t.Errorf("from %v until %v", in.from, in.until)
	}
	if !bytes.Equal(in.pprof, wall) {
		t.Error("the profile field is not the pprof given")
	}
	if in.header.Get("X-Scope-OrgID") != "team-a" || in.header.Get("Authorization") != "Bearer tok" {
		t.Errorf("headers %v", in.header)
	}
	if in.query["spyName"] != "clrdiag" {
		t.Errorf("spyName %q", in.query["spyName"])
	}
	for _, typ := range []string{"samples", "wall", "cpu"} {
		if in.stc[typ]["sampled"] != true {
			t.Errorf("sample_type_config[%s] = %v, want sampled", typ, in.stc[typ])
		}
	}
}

// TestIngestRetries: a 503 is retried; a 400 (a profile Pyroscope cannot
// parse) is not, and is counted as failed.
func TestIngestRetries(t *testing.T) {
	var n int
	var mu sync.Mutex
	status := []int{503, 200, 400}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		s := status[min(n, len(status)-1)]
		n++
		mu.Unlock()
		w.WriteHeader(s)
	}))
	defer hs.Close()
	e, err := pyroscope.New(pyroscope.Config{URL: hs.URL, Delivery: telemetry.Delivery{InitialBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wall := realPprof(t, profile.MeasureWall)
	res := telemetry.ProcessResource(telemetry.Process{PID: 1, Name: "a"}, func(string) string { return "" })
	e.Export(pyroscope.Profile{Resource: res, PProf: wall})
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("after a 503: %v", err)
	}
	e.Export(pyroscope.Profile{Resource: res, PProf: wall})
	if err := e.Flush(ctx); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("err = %v, want the 400", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 3 {
		t.Errorf("%d requests, want 3 (503, 200, 400 not retried)", n)
	}
	if s := e.Stats(); s.Sent != 1 || s.Failed != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestNotAPprof: bytes that are not a profile are refused before sending.
func TestNotAPprof(t *testing.T) {
	e, err := pyroscope.New(pyroscope.Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Request(pyroscope.Profile{PProf: []byte("not a profile")}); err == nil {
		t.Fatal("no error")
	}
}
