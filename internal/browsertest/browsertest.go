package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// DefaultPath is where Debian's chromium package installs the browser.
const DefaultPath = "/usr/bin/chromium"

// Config configures Start. The zero value is a 1280x800 page, a
// two-minute budget, and the browser at $CLRDIAG_CHROMIUM or DefaultPath.
type Config struct {
	// Width and Height are the page's size; 0 means 1280x800.
	Width, Height int
	// Timeout bounds everything the browser does in the test; 0 means two
	// minutes.
	Timeout time.Duration
	// DevTools opens Chromium's remote-debugging port, on which it serves
	// Chrome DevTools' own frontend (Browser.DevToolsPort), and lets pages
	// fetch from other local origins in spite of their Content Security
	// Policy (the DevTools trace viewer loads a trace from a test server).
	DevTools bool
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context
	// DevToolsPort is the remote-debugging port with Config.DevTools: the
	// DevTools frontend is at http://127.0.0.1:DevToolsPort/devtools/.
	DevToolsPort int

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// Path returns the Chromium to run: $CLRDIAG_CHROMIUM, DefaultPath, or
// chromium or chromium-browser on PATH.
func Path() (string, error) {
	if p := os.Getenv("CLRDIAG_CHROMIUM"); p != "" {
		return p, nil
	}
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("chromium not found (%s, or chromium on PATH); install it with apt-get install chromium, or set CLRDIAG_CHROMIUM", DefaultPath)
}

// Start starts a headless Chromium for the test and ends it with the test.
// With -short, the quick loop of unit tests, it skips the test, CI or not.
func Start(t testing.TB, cfg Config) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: full mode only (go test without -short)")
	}
	path, err := Path()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser test cannot run (CI=true): %v", err)
		}
		t.Skipf("SKIP (browser test): %v", err)
	}
	if cfg.Width == 0 || cfg.Height == 0 {
		cfg.Width, cfg.Height = 1280, 800
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	// Not t.TempDir: Chromium's helper processes (crashpad) may still write
	// there for a moment after the browser has exited, which would fail the
	// test in TempDir's cleanup; the profile is removed with retries.
	profileDir, err := os.MkdirTemp("", "clrdiag-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profileDir),
		chromedp.WindowSize(cfg.Width, cfg.Height),
	}
	if cfg.DevTools {
		// Chromium picks a free port; chromedp then talks to it over a
		// websocket instead of a pipe.
		opts = append(opts, chromedp.Flag("remote-debugging-port", "0"), remote.WebSocket)
	}
	base, cancelTimeout := context.WithTimeout(context.Background(), cfg.Timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	b := &Browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
		var err error
		for range 50 {
			if err = os.RemoveAll(profileDir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("leaving the browser profile %s: %v", profileDir, err)
	})
	// Starting the browser is the first action; Console subscribes the
	// tab's messages before any page loads.
	messages := chromedp.Console(ctx)
	if err := ctx.Err(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	// The page gets the whole window: the window size counts the
	// browser's own bars.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(cfg.Width), int64(cfg.Height))); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	if cfg.DevTools {
		if err := b.openDevTools(profileDir); err != nil {
			t.Fatalf("start %s: %v", path, err)
		}
	}
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// Context is the tab's context, for chromedp calls the helpers do not cover.
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs actions in the tab and fails the test on an error.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v%s", err, b.consoleText())
	}
}

// Run runs one action in b's tab and returns its value; it fails the test
// on an error.
func Run[T any](b *Browser, action chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, action)
	if err != nil {
		b.t.Fatalf("browser: %v%s", err, b.consoleText())
	}
	return v
}

// Wait waits until the JavaScript expression is truthy and returns its
// value decoded into T; it fails the test, with a screenshot and what the
// page logged, when that does not happen within timeout. An evaluation that
// fails (the page is navigating) is retried.
func Wait[T any](b *Browser, what, expr string, timeout time.Duration) T {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	wrapped := "(() => { const v = (" + expr + "); return v ? v : null; })()"
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](wrapped, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil && len(raw) > 0 && string(raw) != "null" {
			var v T
			if err = json.Unmarshal(raw, &v); err == nil {
				return v
			}
		}
		if err != nil {
			last = err
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			shot := b.Screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
			b.t.Fatalf("browser: %s did not come within %v (%s; last error: %v); screenshot %s%s", what, timeout, expr, last, shot, b.consoleText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Console returns what the pages logged so far: console calls, uncaught
// exceptions and browser log entries (failed loads, CSP violations).
func (b *Browser) Console() []chromedp.ConsoleMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), b.console...)
}

// ExpectConsole waits until the page logs a message containing substr (an
// expected refusal, which the browser logs as an error) and forgets it; it
// fails the test when none comes within timeout.
func (b *Browser) ExpectConsole(substr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b.mu.Lock()
		for i, m := range b.console {
			if strings.Contains(m.Text, substr) || strings.Contains(m.URL, substr) {
				b.console = append(b.console[:i], b.console[i+1:]...)
				b.mu.Unlock()
				return
			}
		}
		b.mu.Unlock()
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: the page did not log %q within %v%s", substr, timeout, b.consoleText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ClearConsole forgets the messages logged so far, after a step whose
// errors are expected (a refused request).
func (b *Browser) ClearConsole() {
	b.mu.Lock()
	b.console = nil
	b.mu.Unlock()
}

// Problems returns the console messages that report an error: exceptions
// and error-level entries.
func (b *Browser) Problems() []string {
	var out []string
	for _, m := range b.Console() {
		if m.IsException() || m.Type == "error" {
			out = append(out, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m.Text))
		}
	}
	return out
}

func (b *Browser) consoleText() string {
	msgs := b.Console()
	if len(msgs) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("\npage console:")
	for _, m := range msgs {
		fmt.Fprintf(&s, "\n  [%s] %s:%d %s", m.Type, m.URL, m.Line+1, m.Text)
	}
	return s.String()
}

// Screenshot saves a PNG of the whole page as name.png and returns its
// path (see the package comment for where).
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	return b.savePNG(name, png)
}

// savePNG writes a screenshot as name.png and returns its path.
func (b *Browser) savePNG(name string, png []byte) string {
	b.t.Helper()
	dir := os.Getenv("CLRDIAG_SCREENSHOTS")
	if dir == "" {
		if at, ok := b.t.(interface{ ArtifactDir() string }); ok {
			dir = at.ArtifactDir()
		} else {
			dir = b.t.TempDir()
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot: %s", path)
	return path
}
