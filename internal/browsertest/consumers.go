package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// This file holds what tests of clrdiag's outputs in their consumers need
// beyond driving a page: the DevTools frontend, text from shadow roots,
// local servers with CORS, and the npm packages of the consumers.

// openDevTools reads the port Chromium wrote in its profile directory and
// lets pages fetch across local origins.
func (b *Browser) openDevTools(profileDir string) error {
	active, err := os.ReadFile(filepath.Join(profileDir, "DevToolsActivePort"))
	if err == nil {
		b.DevToolsPort, err = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(active), "\n", 2)[0]))
	}
	if err != nil || b.DevToolsPort <= 0 {
		return fmt.Errorf("the DevTools port: %v (DevToolsActivePort %q)", err, active)
	}
	_, err = chromedp.Call(b.ctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
	return err
}

// missing skips the test, or fails it under CI=true.
func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s (CI=true: scripts/test.sh installs it)", msg)
	}
	tb.Skipf("SKIP (consumer missing): %s; scripts/test.sh installs it", msg)
}

// cacheDirs are where scripts/test.sh puts what it downloads: $CLRDIAG_CACHE,
// then .cache at the module root.
func cacheDirs() []string {
	var dirs []string
	if c := os.Getenv("CLRDIAG_CACHE"); c != "" {
		dirs = append(dirs, c)
	}
	_, file, _, _ := runtime.Caller(0)
	return append(dirs, filepath.Join(filepath.Dir(file), "..", "..", ".cache"))
}

// NodeModules returns the node_modules directory that holds the npm
// packages pkgs: $CLRDIAG_NODE_MODULES, or npm/node_modules in a cache
// directory (see cacheDirs), where scripts/test.sh installs them. It skips
// the test (fails it under CI=true) when one is missing.
func NodeModules(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	dirs := []string{os.Getenv("CLRDIAG_NODE_MODULES")}
	if dirs[0] == "" {
		dirs = nil
		for _, c := range cacheDirs() {
			dirs = append(dirs, filepath.Join(c, "npm", "node_modules"))
		}
	}
	for _, dir := range dirs {
		ok := true
		for _, p := range pkgs {
			if _, err := os.Stat(filepath.Join(dir, p, "package.json")); err != nil {
				ok = false
			}
		}
		if ok {
			return dir
		}
	}
	missing(tb, "npm packages %v not in %v", pkgs, dirs)
	return ""
}

// SpeedscopeApp returns the directory of the built speedscope app
// (index.html and file-format-schema.json) of the npm package speedscope,
// which scripts/test.sh unpacks into speedscope/package of the cache
// directory.
func SpeedscopeApp(tb testing.TB) string {
	tb.Helper()
	var tried []string
	for _, c := range cacheDirs() {
		for _, pkg := range []string{filepath.Join(c, "speedscope", "package"), filepath.Join(c, "npm", "node_modules", "speedscope")} {
			dir := filepath.Join(pkg, "dist", "release")
			if _, err := os.Stat(filepath.Join(dir, "index.html")); err == nil {
				return dir
			}
			tried = append(tried, dir)
		}
	}
	missing(tb, "the speedscope app (npm package speedscope) is not in %v", tried)
	return ""
}

// Node returns the node binary, skipping (failing under CI=true) without
// one.
func Node(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		missing(tb, "no node on PATH (Debian package nodejs)")
	}
	return p
}

// Serve serves files (URL path without the leading slash -> content) and,
// for other paths, the directory dir ("" for none) on 127.0.0.1, with CORS
// headers so that pages of another origin may fetch them. It returns the
// base URL, ending in "/".
func Serve(tb testing.TB, dir string, files map[string][]byte) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if b, ok := files[strings.TrimPrefix(r.URL.Path, "/")]; ok {
			http.ServeContent(w, r, r.URL.Path, time.Time{}, strings.NewReader(string(b)))
			return
		}
		if dir == "" {
			http.NotFound(w, r)
			return
		}
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/"
}

// Texts returns the text of every text node of the page, closed shadow
// roots and frames included (the DevTools frontend renders in closed shadow
// roots, out of reach of the page's own scripts).
func (b *Browser) Texts() ([]string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	depth, pierce := int64(-1), true
	res, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: &depth, Pierce: &pierce})
	if err != nil {
		return nil, err
	}
	// Without the DOM domain the page's mutations are not streamed to the
	// test between two looks.
	if _, err := chromedp.Call(ctx, dom.Disable, cdp.Empty{}); err != nil {
		return nil, err
	}
	var out []string
	var walk func(n *cdp.Node)
	walk = func(n *cdp.Node) {
		if n == nil {
			return
		}
		if n.NodeType == 3 { // a text node
			if s := strings.TrimSpace(n.NodeValue); s != "" {
				out = append(out, s)
			}
		}
		if n.NodeName == "SCRIPT" || n.NodeName == "STYLE" {
			return
		}
		for _, c := range n.Children {
			walk(c)
		}
		for _, c := range n.ShadowRoots {
			walk(c)
		}
		walk(n.ContentDocument)
	}
	walk(res.Root)
	return out, nil
}

// ErrTimeout is returned by WaitText when nothing matched in time.
var ErrTimeout = errors.New("browsertest: timed out")

// WaitText looks at the page's text nodes every few seconds until match
// accepts one, and returns it.
func (b *Browser) WaitText(timeout time.Duration, match func(string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		texts, err := b.Texts()
		if err == nil {
			for _, s := range texts {
				if match(s) {
					return s, nil
				}
			}
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			if err != nil {
				return "", fmt.Errorf("%w after %v (the page's text cannot be read: %v)", ErrTimeout, timeout, err)
			}
			return "", fmt.Errorf("%w after %v (texts: %q)", ErrTimeout, timeout, texts)
		}
		time.Sleep(5 * time.Second)
	}
}

// ViewportScreenshot is Screenshot of the viewport only, as the page draws
// it: a full-page capture resizes the page for a moment, which makes pages
// that draw on canvases (the DevTools flame chart) redraw blank.
func (b *Browser) ViewportScreenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	return b.savePNG(name, png)
}
