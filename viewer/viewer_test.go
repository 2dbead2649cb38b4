package viewer

import (
	"context"
	"errors"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// testProfile is a small CPU profile: Main calls Hot (3 samples) and Cold
// (1 sample). file names the functions' file.
func testProfile(file string) *profile.Profile {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: file}
	}
	main, hot, cold := fn(1, "App.Program.Main"), fn(2, "App.Burner.MostlyHot"), fn(3, "App.Burner.SometimesHot")
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Address: 0x1000 * id, Line: []profile.Line{{Function: f, Line: 1}}}
	}
	lm, lh, lc := loc(1, main), loc(2, hot), loc(3, cold)
	return &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "wall", Unit: "nanoseconds"}},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            1e6,
		Function:          []*profile.Function{main, hot, cold},
		Location:          []*profile.Location{lm, lh, lc},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lh, lm}, Value: []int64{3, 3e6}},
			{Location: []*profile.Location{lc, lm}, Value: []int64{1, 1e6}},
		},
	}
}

// serveTest serves v as Serve does and returns the base URL.
func serveTest(t *testing.T, v http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, v) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestViews(t *testing.T) {
	v, err := New(testProfile("App"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, v)
	for _, view := range []string{"flamegraph", "top", "peek"} {
		code, h, body := get(t, "GET", base+"/ui/"+view)
		if code != 200 || !strings.Contains(body, "App.Burner.MostlyHot") {
			t.Errorf("%s: %d\n%.400s", view, code, body)
		}
		if !strings.Contains(body, "<head>\n<style>"+hiddenCSS) {
			t.Errorf("%s: the menu entries that cannot work are not hidden:\n%.400s", view, body)
		}
		if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") || h.Get("X-Frame-Options") != "SAMEORIGIN" {
			t.Errorf("%s: security headers %v", view, h)
		}
		if strings.Contains(body, "https://") && view != "flamegraph" {
			// pprof's pages carry no external resources; links to its
			// documentation are the only absolute URLs allowed.
			for _, line := range strings.Split(body, "\n") {
				if strings.Contains(line, "https://") && !strings.Contains(line, "github.com/google/pprof") {
					t.Errorf("%s: external URL in %q", view, line)
				}
			}
		}
	}
	// The top view's data ranks MostlyHot first, with 3 of 4 ms (the
	// page's script computes the percentages).
	_, _, top := get(t, "GET", base+"/ui/top")
	if !strings.Contains(top, `makeTopTable( 4000000 , [{"Name":"App.Burner.MostlyHot","InlineLabel":"","Flat":3000000,`) {
		t.Errorf("top does not rank MostlyHot first with 3 of 4 ms:\n%s", top)
	}
	// Source and Disassemble have nothing to show for a .NET profile: a
	// page says so and leads to the views of the same method.
	for _, view := range []string{"source?f=MostlyHot", "disasm?f=MostlyHot"} {
		code, _, body := get(t, "GET", base+"/ui/"+view)
		if code != 404 || !strings.Contains(body, "No source or disassembly for a .NET profile") ||
			!strings.Contains(body, `href="./peek?f=MostlyHot"`) || strings.Contains(body, "App.Burner") {
			t.Errorf("%s: %d\n%s", view, code, body)
		}
	}
	for path, want := range map[string]int{"/": 303, "/ui/": 301, "/ui": 307, "/ui/nope": 404} {
		if code, h, body := get(t, "GET", base+path); code != want {
			t.Errorf("GET %s: %d (want %d) %s %s", path, code, want, h.Get("Location"), body)
		}
	}
	// Mounted elsewhere without a trailing slash, the mount point
	// redirects relatively.
	rec := httptest.NewRecorder()
	http.StripPrefix("/p/1", v).ServeHTTP(rec, httptest.NewRequest("GET", "/p/1?si=samples", nil))
	if rec.Code != 303 || rec.Header().Get("Location") != "1/flamegraph?si=samples" {
		t.Errorf("GET /p/1: %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
	if code, _, _ := get(t, "POST", base+"/ui/top"); code != 405 {
		t.Errorf("POST /ui/top: %d", code)
	}
	code, h, body := get(t, "GET", base+"/ui/download")
	if code != 200 || !strings.Contains(h.Get("Content-Type"), "protobuf") {
		t.Fatalf("download: %d %v", code, h)
	}
	p, err := profile.ParseData([]byte(body))
	if err != nil || len(p.Sample) != 2 {
		t.Fatalf("downloaded profile: %v", err)
	}
}

func TestGraphNeedsGraphviz(t *testing.T) {
	v, err := New(testProfile("App"), Config{LookPath: func(string) (string, error) { return "", errors.New(`exec: "dot": executable file not found in $PATH`) }})
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, v)
	code, _, body := get(t, "GET", base+"/ui/graph")
	if code != 501 || !strings.Contains(body, "needs Graphviz") || !strings.Contains(body, "apt-get install graphviz") || !strings.Contains(body, `href="./flamegraph"`) {
		t.Errorf("graph without dot: %d\n%s", code, body)
	}
	// The menus do not offer it.
	if _, _, body := get(t, "GET", base+"/ui/top"); !strings.Contains(body, hiddenGraphCSS) {
		t.Errorf("without dot, the Graph entry is not hidden:\n%.400s", body)
	}
	v, err = New(testProfile("App"), Config{LookPath: func(string) (string, error) { return "/usr/bin/dot", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, body := get(t, "GET", serveTest(t, v)+"/ui/top"); strings.Contains(body, hiddenGraphCSS) || !strings.Contains(body, hiddenCSS) {
		t.Errorf("with dot, the Graph entry is hidden:\n%.400s", body)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Logf("dot is not installed here (%v): the graph view with Graphviz is not checked", err)
		return
	}
	v, err = New(testProfile("App"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	base = serveTest(t, v)
	code, _, body = get(t, "GET", base+"/ui/graph")
	if code != 200 || !strings.Contains(body, "<svg") || !strings.Contains(body, "MostlyHot") {
		t.Errorf("graph with dot: %d\n%.300s", code, body)
	}
}

// TestNothingWritten serves every view, tries the settings routes, and
// checks that no file appeared in $HOME, the configuration, cache and
// temporary directories, pprof's PPROF_TMPDIR or the working directory,
// and that the source view does not show the file a function names.
func TestNothingWritten(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOPSECRET-LINE-1\nTOPSECRET-LINE-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, env := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "PPROF_TMPDIR", "TMPDIR"} {
		d := filepath.Join(root, env)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(env, d)
		dirs = append(dirs, d)
	}
	wd := filepath.Join(root, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	dirs = append(dirs, wd)
	// A relative name too: the source view searches the working
	// directory and its parents.
	for _, file := range []string{secret, "../secret.txt"} {
		v, err := New(testProfile(file), Config{})
		if err != nil {
			t.Fatal(err)
		}
		base := serveTest(t, v)
		for _, view := range []string{"flamegraph", "top", "peek", "source", "graph", "download", "disasm?f=Hot",
			"source?f=MostlyHot", "saveconfig?config=x", "deleteconfig?config=x"} {
			for _, method := range []string{"GET", "POST"} {
				_, _, body := get(t, method, base+"/ui/"+view)
				if strings.Contains(body, "TOPSECRET") {
					t.Errorf("%s %s shows the file %s:\n%s", method, view, file, body)
				}
			}
		}
		if code, _, body := get(t, "POST", base+"/ui/saveconfig?config=x"); code != 403 || !strings.Contains(body, "nothing is written to disk") {
			t.Errorf("saveconfig: %d %s", code, body)
		}
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				t.Error(err)
				return nil
			}
			if path != d {
				t.Errorf("written while serving: %s", path)
			}
			return nil
		})
	}
}

func TestHostCheck(t *testing.T) {
	v, err := New(testProfile("App"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, v)
	port := base[strings.LastIndexByte(base, ':')+1:]
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200,
		"evil.example:" + port: 403, "127.0.0.1:1": 403, "evil.example": 403,
	} {
		req, _ := http.NewRequest("GET", base+"/ui/top", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestEmpty(t *testing.T) {
	p := testProfile("App")
	p.Sample = nil
	if _, err := New(p, Config{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty profile: %v", err)
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("nil profile: %v", err)
	}
}

func TestURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/ui/flamegraph",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/ui/flamegraph",
		"[::]:8080":      "http://127.0.0.1:8080/ui/flamegraph",
		"[::1]:8080":     "http://[::1]:8080/ui/flamegraph",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := URL(a); got != want {
			t.Errorf("URL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// Serve returns when its context ends.
func TestServeStops(t *testing.T) {
	v, err := New(testProfile("App"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, v) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("still listening after Serve returned")
	}
}

// TestMenuEntries follows every link of every page the viewer serves,
// from the flame graph on, but those hiddenCSS hides: each leads to a page
// (or the download), none to an error. The hidden entries are there to
// hide, so a pprof that renames them fails the test rather than showing
// them.
func TestMenuEntries(t *testing.T) {
	noDot := func(string) (string, error) { return "", errors.New("no dot") }
	v, err := New(testProfile("App"), Config{LookPath: noDot})
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, v)
	hidden := map[string]bool{}
	for _, m := range regexp.MustCompile(`#([\w-]+)`).FindAllStringSubmatch(hiddenCSS+hiddenGraphCSS, -1) {
		hidden[m[1]] = true
	}
	anchor := regexp.MustCompile(`<a\b([^>]*)>`)
	attr := func(tag, name string) (string, bool) {
		m := regexp.MustCompile(`\b` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return "", false
		}
		return html.UnescapeString(m[1]), true
	}
	start, _ := url.Parse(base + "/ui/flamegraph")
	queue, seen := []*url.URL{start}, map[string]bool{start.String(): true}
	ids := map[string]bool{}
	for len(queue) > 0 && len(seen) < 200 {
		u := queue[0]
		queue = queue[1:]
		resp, err := http.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		if resp.StatusCode != 200 || strings.Contains(body, `<div id="errors"><div>`) {
			t.Errorf("%s: %d\n%.600s", u, resp.StatusCode, body)
			continue
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			if _, err := profile.ParseData(b); err != nil {
				t.Errorf("%s: %s that is not a profile: %v", u, resp.Header.Get("Content-Type"), err)
			}
			continue
		}
		for _, m := range regexp.MustCompile(`\bid="([^"]*)"`).FindAllStringSubmatch(body, -1) {
			ids[m[1]] = true
		}
		for _, m := range anchor.FindAllStringSubmatch(body, -1) {
			id, _ := attr(m[1], "id")
			href, ok := attr(m[1], "href")
			if hidden[id] || !ok || strings.HasPrefix(href, "#") {
				continue
			}
			next, err := resp.Request.URL.Parse(href)
			if err != nil {
				t.Errorf("%s: link %q: %v", u, href, err)
				continue
			}
			if next.Host != start.Host {
				t.Errorf("%s: link to another site %s", u, next)
				continue
			}
			if !seen[next.String()] {
				seen[next.String()] = true
				queue = append(queue, next)
			}
		}
	}
	for id := range hidden {
		if !ids[id] {
			t.Errorf("pprof's pages have no element %q to hide (renamed?)", id)
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d pages reached: %v", len(seen), seen)
	}
	t.Logf("%d pages and links followed", len(seen))
}

// Names from a traced process reach every page escaped: control characters
// (a terminal escape sequence, a bidirectional override) as \x1b and
// \u202e, HTML as entities. The peek page used to carry the raw bytes.
func TestHostileNamesEscaped(t *testing.T) {
	p := testProfile("")
	evil := "Evil\x1b]0;owned\x07\x1b[2J\u202eMethod<b>bold</b>"
	p.Function[1].Name, p.Function[1].SystemName = evil, evil
	v, err := New(p, Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := serveTest(t, v)
	for _, page := range []string{"/top", "/peek", "/flamegraph"} {
		code, _, body := get(t, http.MethodGet, base+"/ui"+page)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", page, code)
		}
		for _, raw := range []string{"\x1b", "\x07", "\u202e", "<b>bold"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s carries %q raw", page, raw)
			}
		}
		if page == "/peek" && !strings.Contains(body, `Evil\x1b]0;owned`) {
			t.Errorf("%s does not show the escaped name", page)
		}
	}
}
