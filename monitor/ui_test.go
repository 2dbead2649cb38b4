//go:build unix

package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// serveUI starts a monitor and returns it with its test server.
func serveUI(t *testing.T, cfg monitor.Config) (*monitor.Server, *httptest.Server) {
	t.Helper()
	if cfg.APIKey == "" && !cfg.NoAuth {
		cfg.APIKey = key
	}
	m, err := monitor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(m)
	t.Cleanup(func() {
		hs.Close()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m, hs
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, and the CSRF token of its session.
type browser struct {
	t    *testing.T
	hs   *httptest.Server
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, hs *httptest.Server) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, hs: hs, c: c}
}

// req sends a request; headers are "Name: value" strings.
func (b *browser) req(method, path string, body url.Values, headers ...string) (*http.Response, string) {
	b.t.Helper()
	var r io.Reader
	if body != nil {
		r = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequest(method, b.hs.URL+path, r)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, string(out)
}

var csrfMeta = regexp.MustCompile(`<meta name="clrdiag-csrf" content="([^"]*)">`)

// loadIndex loads /ui/ and keeps the page's CSRF token.
func (b *browser) loadIndex() {
	b.t.Helper()
	resp, body := b.req("GET", "/ui/", nil)
	m := csrfMeta.FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		b.t.Fatalf("/ui/: %d %.300s", resp.StatusCode, body)
	}
	b.csrf = m[1]
}

func TestDashboardAuth(t *testing.T) {
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{}})
	tok := m.LoginToken()
	if len(tok) < 20 || tok == key || m.DashboardPath() != "/ui/login?token="+tok {
		t.Fatalf("token %q, path %q", tok, m.DashboardPath())
	}
	b := newBrowser(t, hs)

	// Without a session: pages go to the sign-in form, the API answers
	// 401, the form and its files are served.
	for path, want := range map[string]string{"/ui/": "/ui/login", "/ui": "/ui/", "/ui/profiles/1/flamegraph": "/ui/login"} {
		if resp, _ := b.req("GET", path, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %d %q, want 303 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	for _, path := range []string{"/ui/api/processes", "/ui/api/jobs/1"} {
		if resp, body := b.req("GET", path, nil); resp.StatusCode != 401 || !strings.Contains(body, "not signed in") {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, _ := b.req("POST", "/ui/api/processes/1/profile", nil); resp.StatusCode != 401 {
		t.Errorf("POST without a session: %d", resp.StatusCode)
	}
	if resp, body := b.req("GET", "/ui/login", nil); resp.StatusCode != 200 || !strings.Contains(body, `name="key"`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("login form: %d %v %.200s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := b.req("GET", "/ui/static/app.js", nil); resp.StatusCode != 200 || !strings.Contains(body, "api/processes") {
		t.Errorf("app.js: %d", resp.StatusCode)
	}
	// A wrong token or key is refused.
	if resp, body := b.req("GET", "/ui/login?token=nope", nil); resp.StatusCode != 401 || !strings.Contains(body, "token") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("wrong token: %d %s", resp.StatusCode, body)
	}
	if resp, body := b.req("POST", "/ui/login", url.Values{"key": {"nope"}}); resp.StatusCode != 401 || !strings.Contains(body, "Wrong API key") {
		t.Errorf("wrong key: %d %s", resp.StatusCode, body)
	}
	// The token is no API key, and a cookie does not open the REST API.
	if resp, _ := b.req("GET", "/processes", nil, "Authorization: Bearer "+tok); resp.StatusCode != 401 {
		t.Errorf("the login token opened the API: %d", resp.StatusCode)
	}

	// The link signs in: an HttpOnly, SameSite=Strict cookie for /ui/.
	resp, _ := b.req("GET", "/ui/login?token="+tok, nil)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("login link: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var sc *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == monitor.SessionCookie {
			sc = c
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/ui/" || sc.Value == "" {
		t.Fatalf("session cookie %+v", sc)
	}
	b.loadIndex()
	if resp, body := b.req("GET", "/ui/api/processes", nil); resp.StatusCode != 200 || !strings.Contains(body, `"processes"`) {
		t.Errorf("api with the session: %d %s", resp.StatusCode, body)
	}
	if resp, _ := b.req("GET", "/processes", nil); resp.StatusCode != 401 {
		t.Errorf("the session cookie opened the REST API: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", "/ui/login", nil); resp.StatusCode != 303 {
		t.Errorf("login page while signed in: %d", resp.StatusCode)
	}

	// State-changing requests need the CSRF token.
	for _, h := range []string{"", monitor.CSRFHeader + ": wrong"} {
		var hdr []string
		if h != "" {
			hdr = append(hdr, h)
		}
		if resp, body := b.req("POST", "/ui/api/processes/1/profile", nil, hdr...); resp.StatusCode != 403 || !strings.Contains(body, "CSRF") {
			t.Errorf("POST with CSRF %q: %d %s", h, resp.StatusCode, body)
		}
	}
	if resp, body := b.req("POST", "/ui/api/processes/1/profile", nil, monitor.CSRFHeader+": "+b.csrf); resp.StatusCode != 404 {
		t.Errorf("POST with the CSRF token: %d %s, want 404 (no process 1)", resp.StatusCode, body)
	}
	// Scripts may use the API key instead, without a CSRF token.
	other := newBrowser(t, hs)
	if resp, body := other.req("POST", "/ui/api/processes/1/profile", nil, "Authorization: Bearer "+key); resp.StatusCode != 404 {
		t.Errorf("POST with the API key: %d %s", resp.StatusCode, body)
	}

	// Signing out (a form post with the token) ends the session.
	if resp, _ := b.req("POST", "/ui/logout", url.Values{"csrf": {"wrong"}}); resp.StatusCode != 403 {
		t.Errorf("logout with a wrong token: %d", resp.StatusCode)
	}
	if resp, _ := b.req("POST", "/ui/logout", url.Values{"csrf": {b.csrf}}); resp.StatusCode != 303 || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("logout: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", "/ui/", nil, "Cookie: "+monitor.SessionCookie+"="+sc.Value); resp.StatusCode != 303 {
		t.Errorf("the ended session still opens the dashboard: %d", resp.StatusCode)
	}

	// The API key signs in through the form.
	resp, _ = b.req("POST", "/ui/login", url.Values{"key": {key}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("login form: %d", resp.StatusCode)
	}
	b.loadIndex()
}

func TestDashboardNoAuth(t *testing.T) {
	m, hs := serveUI(t, monitor.Config{NoAuth: true, NoMetrics: true, Source: monitor.StaticSource{}})
	if m.LoginToken() != "" || m.DashboardPath() != "/ui/" {
		t.Errorf("token %q path %q", m.LoginToken(), m.DashboardPath())
	}
	b := newBrowser(t, hs)
	if resp, _ := b.req("GET", "/ui/", nil); resp.StatusCode != 200 {
		t.Errorf("/ui/: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", "/ui/login", nil); resp.StatusCode != 303 {
		t.Errorf("/ui/login: %d", resp.StatusCode)
	}
	if resp, body := b.req("POST", "/ui/api/processes/1/profile", nil); resp.StatusCode != 404 {
		t.Errorf("POST: %d %s, want 404 (no CSRF token needed)", resp.StatusCode, body)
	}
}

// The charts' data comes from the /metrics collector's own session: the
// values the runtime publishes appear, newer ones after ?after=, and
// polling opens no session.
func TestDashboardCounters(t *testing.T) {
	cr := newCounterRuntime(t, 4242)
	cr.value.Store(10)
	m, hs := serveUI(t, monitor.Config{MetricsWindow: 100 * time.Millisecond, DiscoveryInterval: 50 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 4242, Name: "app", Dialer: cr}}})
	b := newBrowser(t, hs)
	b.req("GET", m.DashboardPath(), nil)
	type counters struct {
		Up     bool
		Window int64
		Series map[string]struct {
			Label, Unit string
			Points      [][2]float64
		}
	}
	poll := func(after int64, want float64) (counters, int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, body := b.req("GET", "/ui/api/processes/4242/counters?after="+strconv.FormatInt(after, 10), nil)
			var c counters
			if resp.StatusCode == 200 {
				if err := json.Unmarshal([]byte(body), &c); err != nil {
					t.Fatal(err)
				}
				s := c.Series["cpu-usage"]
				for _, p := range s.Points {
					// The newest point the page has comes again (its
					// collection may have had more to come), not older ones.
					if p[0] < float64(after) {
						t.Fatalf("after=%d returned the older point %v", after, p)
					}
				}
				if n := len(s.Points); n > 0 && s.Points[n-1][1] == want {
					return c, int64(s.Points[n-1][0])
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no cpu-usage %v: %d %s", want, resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	c, last := poll(0, 10)
	if !c.Up || c.Window != 100 || c.Series["cpu-usage"].Label != "CPU Usage" || c.Series["cpu-usage"].Unit != "%" {
		t.Errorf("counters %+v", c)
	}
	cr.value.Store(20)
	poll(last, 20)
	if n := cr.sessions.Load(); n != 1 {
		t.Errorf("%d counters sessions; the dashboard must use the collector's one", n)
	}
	resp, body := b.req("GET", "/ui/api/processes", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"counters": "up"`) || !strings.Contains(body, `"pid": 4242`) {
		t.Errorf("processes: %s", body)
	}
	for path, want := range map[string]int{"/ui/api/processes/77/counters": 404, "/ui/api/processes/x/counters": 400, "/ui/api/processes/4242/counters?after=z": 400} {
		if resp, body := b.req("GET", path, nil); resp.StatusCode != want {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// job polls a dashboard job until it ends.
func (b *browser) job(id string) map[string]any {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := b.req("GET", "/ui/api/jobs/"+id, nil)
		var j map[string]any
		if err := json.Unmarshal([]byte(body), &j); err != nil || resp.StatusCode != 200 {
			b.t.Fatalf("job %s: %d %s", id, resp.StatusCode, body)
		}
		if j["state"] != monitor.JobRunning || time.Now().After(deadline) {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startJob posts an action and returns its job id.
func (b *browser) startJob(path string) string {
	b.t.Helper()
	resp, body := b.req("POST", path, nil, monitor.CSRFHeader+": "+b.csrf)
	var j struct {
		ID    string
		State string
	}
	if err := json.Unmarshal([]byte(body), &j); err != nil || resp.StatusCode != 202 || j.State != monitor.JobRunning {
		b.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
	}
	return j.ID
}

// A CPU profile taken from the dashboard opens in the viewer under
// /ui/profiles/ID/.
func TestDashboardProfile(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 88, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}})
	broken := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 89, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return errors.New("the fake's session broke")
	}})
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 88, Name: "app", Dialer: f}, {PID: 89, Dialer: broken}}})
	b := newBrowser(t, hs)
	b.req("GET", m.DashboardPath(), nil)
	b.loadIndex()

	id := b.startJob("/ui/api/processes/88/profile?duration=200ms")
	j := b.job(id)
	if j["state"] != monitor.JobDone || !strings.Contains(j["summary"].(string), "samples in 200ms, weighted by wall time") || j["url"] != "profiles/"+id+"/flamegraph" {
		t.Fatalf("job %v", j)
	}
	for _, view := range []string{"flamegraph", "top"} {
		if resp, body := b.req("GET", "/ui/profiles/"+id+"/"+view, nil); resp.StatusCode != 200 || !strings.Contains(body, "App.Worker.Spin") {
			t.Errorf("%s: %d %.300s", view, resp.StatusCode, body)
		}
	}
	if resp, _ := b.req("GET", "/ui/profiles/999/flamegraph", nil); resp.StatusCode != 404 {
		t.Errorf("unknown profile: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", "/ui/api/jobs/999", nil); resp.StatusCode != 404 {
		t.Errorf("unknown job: %d", resp.StatusCode)
	}
	for path, want := range map[string]int{
		"/ui/api/processes/88/profile?duration=forever": 400, "/ui/api/processes/88/profile?duration=100h": 400,
		"/ui/api/processes/5/profile": 404, "/ui/api/processes/x/profile": 400, "/ui/api/processes/88/profile?sample=heap": 400,
	} {
		if resp, body := b.req("POST", path, nil, monitor.CSRFHeader+": "+b.csrf); resp.StatusCode != want {
			t.Errorf("POST %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
	// A measure whose events the session did not carry says what it needs.
	j = b.job(b.startJob("/ui/api/processes/88/profile?duration=100ms&sample=alloc"))
	if j["state"] != monitor.JobFailed || !strings.Contains(j["error"].(string), "no allocation ticks in 100ms: the measure needs GCAllocationTick events") {
		t.Errorf("alloc job: %v", j)
	}
	if _, body := b.req("GET", "/ui/api/processes", nil); !strings.Contains(body, `"name": "contention"`) {
		t.Errorf("the measures are not offered: %s", body)
	}
	// A runtime's failure is the job's error, for the page to show.
	j = b.job(b.startJob("/ui/api/processes/89/profile?duration=100ms"))
	if j["state"] != monitor.JobFailed || !strings.Contains(j["error"].(string), "the runtime ended the session before sending anything") {
		t.Errorf("failed job: %v", j)
	}
	t.Logf("failed job's error: %v", j["error"])
}

// A heap snapshot from the dashboard: the report by type and the heap's
// flame graph.
func TestDashboardGCDump(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 91, Tracing: gcdumptest.Session(gcdumptest.Leaky(20), gcdumptest.Options{})})
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 91, Name: "app", Dialer: f}}})
	b := newBrowser(t, hs)
	b.req("GET", m.DashboardPath(), nil)
	b.loadIndex()
	j := b.job(b.startJob("/ui/api/processes/91/gcdump"))
	if j["state"] != monitor.JobDone || !strings.Contains(j["report"].(string), "App.Item") {
		t.Fatalf("job %v", j)
	}
	if resp, body := b.req("GET", "/ui/"+j["url"].(string), nil); resp.StatusCode != 200 || !strings.Contains(body, "App.Item") {
		t.Errorf("heap flame graph: %d %.300s", resp.StatusCode, body)
	}
}

// Stacks and dumps from the dashboard go through the API's own routes.
func TestDashboardStacksAndDump(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 92, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}})
	dir := t.TempDir()
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, DumpDir: dir, Source: monitor.StaticSource{{PID: 92, Dialer: f}}})
	b := newBrowser(t, hs)
	b.req("GET", m.DashboardPath(), nil)
	b.loadIndex()
	if resp, body := b.req("GET", "/ui/api/processes/92/stacks", nil); resp.StatusCode != 200 || !strings.Contains(body, "App!App.Worker.Spin") {
		t.Errorf("stacks: %d %s", resp.StatusCode, body)
	}
	if resp, _ := b.req("POST", "/ui/api/processes/92/dump?type=mini", nil); resp.StatusCode != 403 {
		t.Errorf("dump without CSRF: %d", resp.StatusCode)
	}
	resp, body := b.req("POST", "/ui/api/processes/92/dump?type=mini", nil, monitor.CSRFHeader+": "+b.csrf)
	if resp.StatusCode != 201 || !strings.Contains(body, dir) || len(f.Dumps()) != 1 {
		t.Errorf("dump: %d %s %v", resp.StatusCode, body, f.Dumps())
	}
}

// The runtime version: from ProcessInfo2 on .NET 5 and later; a 3.1
// runtime reached through no local endpoint says why it is unknown.
func TestDashboardRuntimeVersion(t *testing.T) {
	f8 := fake(t, ipctest.Config{PID: 801})
	f31 := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 301})
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{{PID: 801, Dialer: f8}, {PID: 301, Dialer: f31}}})
	b := newBrowser(t, hs)
	b.req("GET", m.DashboardPath(), nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := b.req("GET", "/ui/api/processes", nil)
		var out struct {
			Processes []struct {
				PID                   int
				Runtime, RuntimeError string
				Counters              string
			}
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Processes) == 2 && out.Processes[0].Runtime != "" && out.Processes[1].RuntimeError != "" {
			if strings.Contains(out.Processes[0].Runtime, "+") || out.Processes[0].Counters != "off" || !strings.Contains(out.Processes[1].RuntimeError, "ProcessInfo2") {
				t.Errorf("processes %+v", out.Processes)
			}
			t.Logf("versions: %+v", out.Processes)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("versions not found: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The API's Host and origin checks apply to the dashboard too: a
// DNS-rebinding page (another host name) and a cross-site form are refused
// before any sign-in.
func TestDashboardGuarded(t *testing.T) {
	m, hs := serveUI(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{}})
	b := newBrowser(t, hs)
	if resp, _ := b.req("GET", m.DashboardPath(), nil, "Host: evil.example"); resp.StatusCode != http.StatusMisdirectedRequest || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("login link under another host name: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := b.req("POST", "/ui/login", url.Values{"key": {key}}, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("cross-site sign-in: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", m.DashboardPath(), nil, "Sec-Fetch-Site: none"); resp.StatusCode != 303 {
		t.Errorf("the link opened from outside the browser (Sec-Fetch-Site: none): %d", resp.StatusCode)
	}
}
