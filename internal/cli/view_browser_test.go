//go:build linux

package cli

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/internal/browsertest"
	"github.com/clrdiag/clrdiag/internal/testcapture"
)

// hotWorker returns the OS thread id of the Hot target's worker (the thread
// with Hot.Burner.Loop on its stacks) in a pprof profile.
func hotWorker(t *testing.T, pb string) int64 {
	t.Helper()
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pp, err := pprofile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	workers := map[int64]bool{}
	for _, s := range pp.Sample {
		for _, loc := range s.Location {
			if len(loc.Line) > 0 && loc.Line[0].Function.Name == "Hot.Burner.Loop" {
				workers[s.NumLabel["thread"][0]] = true
			}
		}
	}
	if len(workers) != 1 {
		t.Fatalf("threads running Hot.Burner.Loop: %v, want one", workers)
	}
	for id := range workers {
		return id
	}
	return 0
}

// flameBox is where a flame graph box is on the page.
type flameBox struct {
	X, Y, Width, Chart float64
}

// hoverShare moves the mouse over the flame graph box of the method whose
// name ends with name and returns the method and the share pprof's flame
// graph shows for it in its details line ("2.99s (74.8%)").
func hoverShare(t *testing.T, b *browsertest.Browser, name string) (string, float64, flameBox) {
	t.Helper()
	box := browsertest.Wait[flameBox](b, "the flame graph box of "+name, `(() => {
		const el = [...document.querySelectorAll('#stack-chart .boxbg')].find(e => e.innerText.trim().endsWith(`+strconv.Quote(name)+`));
		if (!el) return null;
		el.scrollIntoView({block: 'center'});
		const r = el.getBoundingClientRect();
		return {X: r.left + r.width/2, Y: r.top + r.height/2, Width: r.width, Chart: document.getElementById('stack-chart').clientWidth};
	})()`, 20*time.Second)
	b.Do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X, box.Y))
	left := browsertest.Wait[string](b, "the details of "+name, `document.getElementById('current-details-left').innerText`, 10*time.Second)
	right := browsertest.Run(b, chromedp.Text(chromedp.ID("current-details-right")))
	m := regexp.MustCompile(`\(([\d.]+)%\)`).FindStringSubmatch(right)
	if m == nil {
		t.Fatalf("details of %s: %q %q", name, left, right)
	}
	pct, _ := strconv.ParseFloat(m[1], 64)
	return left, pct, box
}

// TestBrowserTraceView collects a CPU trace of the real Hot target, whose
// worker thread spends 3/4 of its time in MostlyHot and 1/4 in
// SometimesHot, serves it with trace view --thread WORKER, and checks in
// Chromium that the flame graph shows both methods with those shares (in
// the hover details pprof prints and in the widths of the boxes) and that
// the top view ranks MostlyHot first.
func TestBrowserTraceView(t *testing.T) {
	b := browsertest.Start(t, browsertest.Config{})
	tg := startHot(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "hot.nettrace")
	code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--profile", "dotnet-sampled-thread-time",
		"--duration", "3s", "-o", trace, "--format", "pprof")
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	tg.Kill()
	worker := hotWorker(t, filepath.Join(dir, "hot.pb.gz"))

	s := startServed(t, "trace", "view", trace, "--thread", fmt.Sprint(worker), "--no-browser")
	url := s.wait(t, viewURL, 60*time.Second)
	b.Do(chromedp.Navigate(url))
	mostly, pm, boxM := hoverShare(t, b, "MostlyHot")
	shot := b.Screenshot("trace-view-flamegraph")
	sometimes, ps, boxS := hoverShare(t, b, "SometimesHot")
	t.Logf("flame graph of thread %d: %s %.1f%% (box %.0f of %.0f px), %s %.1f%% (box %.0f px); screenshot %s",
		worker, mostly, pm, boxM.Width, boxM.Chart, sometimes, ps, boxS.Width, shot)
	if mostly != "Hot.Burner.MostlyHot" || sometimes != "Hot.Burner.SometimesHot" {
		t.Errorf("hovered boxes name %q and %q", mostly, sometimes)
	}
	// About 75% and 25%; on a loaded machine a preempted worker stays in
	// the method it was in, which favours the longer slices (86/14 has been
	// seen with two CPU hogs running).
	if pm < 55 || pm > 95 || ps < 5 || ps > 45 || pm <= ps {
		t.Errorf("shares: MostlyHot %.1f%%, SometimesHot %.1f%%; want about 75%% and 25%%", pm, ps)
	}
	// The boxes are drawn to those shares.
	if r, want := boxM.Width/boxS.Width, pm/ps; r < want*0.85 || r > want*1.15 {
		t.Errorf("box widths %.0f and %.0f px: ratio %.2f, want %.2f as the shares", boxM.Width, boxS.Width, r, want)
	}

	b.Do(chromedp.Navigate(url[:len(url)-len("flamegraph")] + "top"))
	first := browsertest.Wait[string](b, "the top table", `(() => { const r = document.querySelector('#toptable tbody tr'); return r && r.innerText; })()`, 10*time.Second)
	if !regexp.MustCompile(`Hot\.Burner\.MostlyHot`).MatchString(first) {
		t.Errorf("top view's first row: %q", first)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the pages reported errors: %q", p)
	}
}

// menuEntry is an entry of pprof's UI as the browser shows it: the menu it
// is in, its label and where it leads.
type menuEntry struct {
	Menu, Entry, Href string
}

// uiPage is what a page of the viewer shows: its HTTP status, pprof's
// error box, whether it is one of pprof's pages (its header), the start of
// its text.
type uiPage struct {
	URL    string
	Status int
	Errors string
	Header bool
	Text   string
}

// visibleJS defines visible(a): whether a person can click the entry a,
// shown and not disabled.
const visibleJS = `const visible = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden' && !el.classList.contains('disabled');`

// menuEntries opens every menu of the page in the browser's tab (a real
// click on its name; the flame graph's right-click menu with a real right
// click on the box of the method named box, when box is not empty) and
// returns the entries it offers, and the names of the entries that are in
// the page but not offered.
func menuEntries(t *testing.T, b *browsertest.Browser, box string) (offered []menuEntry, hidden []string) {
	t.Helper()
	type rect struct{ X, Y float64 }
	menus := browsertest.Wait[[]rect](b, "the menus", `(() => {
		const out = [];
		for (const item of document.querySelectorAll('.header .menu-item')) {
			const name = item.querySelector('.menu-name');
			if (!item.querySelector('.submenu') || name.getClientRects().length == 0) continue;
			const r = name.getBoundingClientRect();
			out.push({X: r.left + r.width/2, Y: r.top + r.height/2});
		}
		return out.length ? out : null;
	})()`, 20*time.Second)
	list := func(scope string) []menuEntry {
		return browsertest.Run(b, chromedp.Evaluate[[]menuEntry](`(() => { `+visibleJS+`
			const out = [];
			for (const a of document.querySelectorAll(`+strconv.Quote(scope)+`)) {
				if (!visible(a)) continue;
				a.dispatchEvent(new MouseEvent('mouseenter')); // pprof sets the selection in the link then
				if (!a.href) continue;
				const menu = a.closest('.menu-item, #action-menu');
				const name = menu && menu.querySelector('.menu-name');
				out.push({Menu: name ? name.innerText.trim() : (menu ? menu.id : ''), Entry: a.innerText.trim(), Href: a.href});
			}
			return out;
		})()`))
	}
	for _, m := range menus {
		b.Do(chromedp.MouseClickXY(m.X, m.Y))
		offered = append(offered, list(".header .submenu a")...)
	}
	offered = append(offered, list(".header .menu-name a, .header h1 a")...) // Download, the title
	if box != "" {
		at := browsertest.Wait[rect](b, "the flame graph box of "+box, `(() => {
			const el = [...document.querySelectorAll('#stack-chart .boxbg')].find(e => e.innerText.trim().endsWith(`+strconv.Quote(box)+`));
			if (!el) return null;
			const r = el.getBoundingClientRect();
			return {X: r.left + r.width/2, Y: r.top + r.height/2};
		})()`, 20*time.Second)
		b.Do(chromedp.MouseClickXY(at.X, at.Y, chromedp.ButtonRight))
		browsertest.Wait[bool](b, "the flame graph's right-click menu", `getComputedStyle(document.getElementById('action-menu')).display == 'block'`, 10*time.Second)
		offered = append(offered, list("#action-menu a")...)
	}
	hidden = browsertest.Run(b, chromedp.Evaluate[[]string](`(() => { `+visibleJS+`
		const out = [];
		for (const a of document.querySelectorAll('.header a, #action-menu a')) {
			const menu = a.closest('.menu-item, #action-menu');
			const shown = visible(a) || (a.closest('.submenu') && getComputedStyle(a).display != 'none' && (!menu || menu.getClientRects().length > 0));
			if (!shown) out.push(a.innerText.trim());
		}
		return out;
	})()`))
	return offered, hidden
}

// TestBrowserTraceViewMenus serves the Hot capture with trace view and
// walks pprof's UI in Chromium: on each view it opens every menu with the
// mouse (on the flame graph also the right-click menu of a method, and
// the menus again with a method searched for) and follows every entry the
// page offers. None may lead to an error page (a status of 400 or more,
// pprof's error box, a page that is not one of the views): Source and
// Disassemble, which cannot work for a .NET profile, Config, whose "Save
// as" the viewer refuses, and Graph without Graphviz are not offered.
func TestBrowserTraceViewMenus(t *testing.T) {
	b := browsertest.Start(t, browsertest.Config{Timeout: 6 * time.Minute})
	in := testcapture.Path(t, "clrdiag/hot-3.1.2-linux-x64.nettrace")
	s := startServed(t, "trace", "view", in, "--no-browser")
	start := s.wait(t, viewURL, 60*time.Second)
	_, dotErr := exec.LookPath("dot")

	check := func(u string) uiPage {
		t.Helper()
		b.Do(chromedp.Navigate(u))
		p := browsertest.Wait[uiPage](b, "the page "+u, `(() => {
			if (document.readyState != 'complete') return null;
			const nav = performance.getEntriesByType('navigation')[0];
			const errs = document.getElementById('errors');
			return {URL: location.href, Status: nav ? nav.responseStatus : 0, Errors: errs ? errs.innerText.trim() : '',
				Header: !!document.querySelector('.header'), Text: document.body.innerText.slice(0, 300)};
		})()`, 30*time.Second)
		if p.Status == 0 || p.Status >= 400 || p.Errors != "" || !p.Header {
			t.Errorf("%s leads to an error page: status %d, errors %q, pprof page %v:\n%s", u, p.Status, p.Errors, p.Header, p.Text)
		}
		return p
	}
	walked := map[string]bool{} // views whose menus were walked
	seen := map[string]bool{start: true}
	queue := []string{start}
	entries, pages := 0, 0
	var hiddenSeen []string
	enqueue := func(from string, es []menuEntry) {
		for _, e := range es {
			entries++
			if strings.HasSuffix(e.Href, "/download") {
				code, body := httpGet(t, e.Href)
				if _, err := pprofile.ParseData([]byte(body)); code != 200 || err != nil {
					t.Errorf("%s: %s > %s: %d, not a profile (%v)", from, e.Menu, e.Entry, code, err)
				}
				continue
			}
			if !seen[e.Href] {
				seen[e.Href] = true
				queue = append(queue, e.Href)
			}
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		p := check(u)
		pages++
		pu, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		if walked[pu.Path] || p.Status >= 400 {
			continue
		}
		walked[pu.Path] = true
		box := ""
		if strings.HasSuffix(pu.Path, "/flamegraph") {
			box = "MostlyHot"
		}
		offered, hidden := menuEntries(t, b, box)
		hiddenSeen = append(hiddenSeen, hidden...)
		if box != "" {
			// The View menu open, to look at.
			check(u)
			names := browsertest.Wait[[]float64](b, "the View menu", `(() => { const r = document.querySelector('#view .menu-name').getBoundingClientRect(); return [r.left + r.width/2, r.top + r.height/2]; })()`, 10*time.Second)
			b.Do(chromedp.MouseClickXY(names[0], names[1]))
			t.Logf("screenshot of the flame graph with its View menu open: %s", b.Screenshot("trace-view-menu"))
			// With a method searched for, the entries act on it.
			check(u)
			b.Do(chromedp.SendKeys(chromedp.ID("search"), "MostlyHot"))
			browsertest.Wait[bool](b, "the search to select MostlyHot", `!document.getElementById('focus').classList.contains('disabled')`, 10*time.Second)
			searched, _ := menuEntries(t, b, "")
			offered = append(offered, searched...)
		}
		for _, e := range offered {
			for _, bad := range []string{"/source", "/disasm", "saveconfig"} {
				if strings.Contains(e.Href, bad) {
					t.Errorf("%s offers %s > %s (%s), which cannot work for a .NET profile", u, e.Menu, e.Entry, e.Href)
				}
			}
			if dotErr != nil && strings.Contains(e.Href, "/graph") {
				t.Errorf("%s offers %s > %s without Graphviz's dot", u, e.Menu, e.Entry)
			}
		}
		enqueue(u, offered)
	}
	for _, want := range []string{"Source", "Disassemble", "Save as ...", "Show source code", "Show source in new tab"} {
		if !slices.Contains(hiddenSeen, want) {
			t.Errorf("%q is not among the entries the pages hide: %q", want, hiddenSeen)
		}
	}
	if len(walked) < 3 || entries < 30 {
		t.Errorf("walked the menus of %d views (%v), %d entries: too few", len(walked), walked, entries)
	}
	t.Logf("walked the menus of %d views, %d entries, %d pages checked; hidden: %q", len(walked), entries, pages, hiddenSeen)
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the pages reported errors: %q", p)
	}
}
