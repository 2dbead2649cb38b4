//go:build linux

package monitor_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clrdiag/clrdiag/internal/browsertest"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport"
)

// TestBrowserDashboard drives the dashboard in Chromium against a real 3.1
// target (Hot): a page load without a session is sent to the sign-in form
// and the API refuses it, a wrong key is refused, the key and the login
// link both sign in, the process is listed with its runtime version, its
// counter values change over time in the charts, text can be selected, a
// state-changing call without the CSRF token is refused, a CPU profile
// taken from the page shows the hot method in the flame graph, the stacks
// action shows the worker's stack, the page fits a narrow window, and a
// failure is shown in the page. The monitor serves the target only (a
// monitor over every local process would open counters sessions in other
// tests' targets; a .NET Core 3.x runtime stops every session's counters
// when one session ends).
func TestBrowserDashboard(t *testing.T) {
	b := browsertest.Start(t, browsertest.Config{Timeout: 3 * time.Minute})
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
	p := monitor.Process{PID: tg.PID, Name: "dotnet", CommandLine: strings.Join(tg.Cmd.Args, " "),
		Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
	const key = "browser-test-key"
	m, err := monitor.New(monitor.Config{APIKey: key, MetricsWindow: time.Second, DiscoveryInterval: time.Second, Source: monitor.StaticSource{p}})
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
	base := "http://" + ln.Addr().String()
	link := base + m.DashboardPath()
	pid := fmt.Sprint(tg.PID)

	// No session: /ui/ sends the browser to the sign-in form, and the API
	// answers 401.
	b.Do(chromedp.Navigate(base + "/ui/"))
	if path := browsertest.Run(b, chromedp.Evaluate[string](`location.pathname`)); path != "/ui/login" {
		t.Fatalf("/ui/ without a session landed on %s, want /ui/login", path)
	}
	if code := browsertest.Run(b, chromedp.Evaluate[int](`fetch('api/processes').then(r => r.status)`, chromedp.EvalAwaitPromise)); code != 401 {
		t.Errorf("api/processes without a session: %d, want 401", code)
	}
	b.Do(chromedp.SendKeys(chromedp.ID("key"), "not-the-key"), chromedp.Submit(chromedp.ID("key")))
	msg := browsertest.Wait[string](b, "the wrong-key message", `(() => { const e = document.getElementById('login-error'); return e && e.innerText; })()`, 10*time.Second)
	if !strings.Contains(msg, "Wrong API key") {
		t.Errorf("wrong key: %q", msg)
	}

	b.ClearConsole() // the refusals above are logged as errors

	// The key signs in; signing out ends the session.
	b.Do(chromedp.SendKeys(chromedp.ID("key"), key), chromedp.Submit(chromedp.ID("key")))
	browsertest.Wait[bool](b, "the process list with the target", `!!document.querySelector('#process-rows tr[data-pid="`+pid+`"]')`, 30*time.Second)
	b.Do(chromedp.Click(chromedp.CSS(".logout button")))
	browsertest.Wait[bool](b, "the sign-in form after signing out", `location.pathname === '/ui/login' && !!document.getElementById('login-form')`, 10*time.Second)

	// The printed link signs in too, and lands on the dashboard.
	b.Do(chromedp.Navigate(link))
	browsertest.Wait[bool](b, "the dashboard after the link", `location.pathname === '/ui/' && !!document.querySelector('#process-rows tr[data-pid="`+pid+`"]')`, 30*time.Second)
	if strings.Contains(browsertest.Run(b, chromedp.Evaluate[string](`location.href`)), "token=") {
		t.Error("the token stays in the address bar")
	}
	row := browsertest.Wait[string](b, "the target's runtime version", `(() => {
		const r = document.querySelector('#process-rows tr[data-pid="`+pid+`"]');
		return r && r.cells[3].innerText.startsWith('3.1') && r.innerText;
	})()`, 30*time.Second)
	if !strings.Contains(row, "Hot") {
		t.Errorf("process row: %q", row)
	}

	// The charts: values arrive and change.
	b.Do(chromedp.Navigate(base + "/ui/#pid=" + pid))
	latest := `JSON.stringify([...document.querySelectorAll('#latest-rows tr')].map(r => r.textContent))`
	first := browsertest.Wait[string](b, "counter values", `(() => {
		const v = document.querySelector('.value[data-series="cpu-usage"]');
		const w = document.querySelector('.value[data-series="working-set"]');
		return v && w && v.innerText !== '–' && w.innerText !== '–' && `+latest+`;
	})()`, 40*time.Second)
	second := browsertest.Wait[string](b, "counter values that change", `(() => {
		const now = `+latest+`;
		return now !== `+jsString(first)+` && document.querySelectorAll('.chart[data-chart="cpu"] polyline.series').length > 0 &&
			document.querySelector('.chart[data-chart="cpu"] polyline.series').getAttribute('points').split(' ').length >= 3 && now;
	})()`, 40*time.Second)
	t.Logf("counters then: %s", first)
	t.Logf("counters later: %s", second)
	// Text can be selected (and copied): the command line, a value.
	sel := browsertest.Run(b, chromedp.Evaluate[string](`(() => {
		const s = window.getSelection();
		s.selectAllChildren(document.querySelector('#process-rows tr[data-pid="`+pid+`"] td.cmd'));
		const a = s.toString();
		s.selectAllChildren(document.querySelector('.value[data-series="working-set"]'));
		return a + ' | ' + s.toString();
	})()`))
	if !strings.Contains(sel, "Hot.dll") || strings.HasSuffix(sel, " | ") {
		t.Errorf("selected text: %q", sel)
	}
	cpu := browsertest.Run(b, chromedp.Text(chromedp.CSS(`.value[data-series="cpu-usage"]`)))
	t.Logf("CPU usage shown: %s", cpu)
	shot := b.Screenshot("monitor-dashboard")

	// A POST without the CSRF token is refused, with the session cookie.
	if code := browsertest.Run(b, chromedp.Evaluate[int](`fetch('api/processes/`+pid+`/profile?duration=1s', {method: 'POST'}).then(r => r.status)`, chromedp.EvalAwaitPromise)); code != 403 {
		t.Errorf("POST without the CSRF token: %d, want 403", code)
	}
	b.ExpectConsole("status of 403", 10*time.Second)

	// A CPU profile from the page: its flame graph in the page shows the
	// hot method.
	b.Do(chromedp.SetValue(chromedp.ID("profile-seconds"), "2"), chromedp.Click(chromedp.ID("profile-button")))
	hot := browsertest.Wait[string](b, "the flame graph of the profile", `(() => {
		const f = document.getElementById('result-frame');
		const d = f && !f.hidden && f.contentDocument;
		const box = d && [...d.querySelectorAll('#stack-chart .boxbg')].find(e => e.innerText.trim().endsWith('MostlyHot'));
		return box && box.innerText.trim();
	})()`, 90*time.Second)
	summary := browsertest.Run(b, chromedp.Text(chromedp.ID("result-summary")))
	t.Logf("profile: %s; box %q", summary, hot)
	b.Do(chromedp.Evaluate[chromedp.Void](`document.getElementById('result').scrollIntoView()`))
	profShot := b.Screenshot("monitor-dashboard-profile")

	// The stacks of all threads.
	b.Do(chromedp.Click(chromedp.ID("stacks-button")))
	stacks := browsertest.Wait[string](b, "the stacks", `(() => { const p = document.getElementById('result-text'); return !p.hidden && p.innerText; })()`, 60*time.Second)
	if !strings.Contains(stacks, "Hot.Burner.") {
		t.Errorf("stacks do not show the worker:\n%s", stacks)
	}

	// A narrow window: nothing wider than the viewport.
	b.Do(chromedp.EmulateViewport(400, 900), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	wide := browsertest.Wait[[]string](b, "the narrow layout", `(() => {
		if (document.documentElement.scrollWidth <= window.innerWidth + 1) return ['fits'];
		return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll, pre, iframe'))
			.map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 10);
	})()`, 10*time.Second)
	if len(wide) != 1 || wide[0] != "fits" {
		t.Errorf("wider than a 400 px window (%d px): %q", browsertest.Run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)), wide)
	}
	narrow := b.Screenshot("monitor-dashboard-narrow")
	t.Logf("screenshots: %s %s %s", shot, profShot, narrow)

	// A failure is shown in the page: the target is gone.
	tg.Kill()
	b.Do(chromedp.Click(chromedp.ID("stacks-button")))
	failure := browsertest.Wait[string](b, "the error of the stacks of a process that exited", `(() => {
		const e = document.getElementById('action-error'); return !e.hidden && e.innerText; })()`, 60*time.Second)
	if !strings.HasPrefix(failure, "Error: Stacks of process "+pid+" failed: ") {
		t.Errorf("error shown: %q", failure)
	}
	t.Logf("error shown: %s", failure)
	b.Screenshot("monitor-dashboard-error")
	b.ExpectConsole("api/processes/"+pid+"/stacks", 10*time.Second)

	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the pages reported errors: %q", p)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
