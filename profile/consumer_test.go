package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
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

	"github.com/chromedp/chromedp"

	"github.com/clrdiag/clrdiag/internal/browsertest"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/clrdiag/clrdiag/weighted/weightedtest"
)

// devToolsLoad is how long DevTools may take to process a trace on a loaded
// machine.
const devToolsLoad = 3 * time.Minute

// openInDevTools loads a Chromium trace-event file into the trace viewer of
// Chrome DevTools (the Performance panel's standalone app that Chromium
// serves on its remote-debugging port) in a new browser, waits until it has
// processed it, and returns the browser and the length of the whole trace
// the viewer shows, in milliseconds.
//
// Reading the page's DOM while DevTools processes a trace sometimes leaves
// the page unable to answer the debugger at all; so the page is left alone
// for a while before the first look, and a page that stops answering is
// tried once more in a fresh browser (said in the log).
func openInDevTools(t *testing.T, name string, trace []byte) (*browsertest.Browser, int) {
	t.Helper()
	base := browsertest.Serve(t, "", map[string][]byte{name: trace})
	// Once the trace is processed, the range menu offers its whole length
	// ("Full range (10,450.34 ms)"; an empty trace shows -∞).
	length := regexp.MustCompile(`^Full range \(([0-9,]+)(\.[0-9]+)?\x{a0}ms\)$`)
	for try := 1; ; try++ {
		b := browsertest.Start(t, browsertest.Config{Width: 1400, Height: 900, Timeout: 2*devToolsLoad + time.Minute, DevTools: true})
		u := fmt.Sprintf("http://127.0.0.1:%d/devtools/trace_app.html?loadTimelineFromURL=%s", b.DevToolsPort, url.QueryEscape(base+name))
		b.Do(chromedp.Navigate(u))
		time.Sleep(15 * time.Second)
		s, err := b.WaitText(devToolsLoad, length.MatchString)
		if err == nil {
			ms, _ := strconv.Atoi(strings.ReplaceAll(length.FindStringSubmatch(s)[1], ",", ""))
			t.Logf("DevTools shows %s: %q", name, s)
			return b, ms
		}
		if _, terr := b.Texts(); terr != nil && try == 1 {
			t.Logf("DevTools stopped answering while it processed %s (%v); trying once more in a fresh browser", name, err)
			continue
		}
		b.Screenshot("devtools-" + name + "-timeout")
		t.Fatalf("DevTools did not show the trace %s: %v (opened %s); page errors: %q", name, err, u, b.Problems())
	}
}

// devToolsErrors returns the page's errors, without the one resource
// DevTools always fails to fetch when it runs outside Chrome's own UI.
func devToolsErrors(b *browsertest.Browser) []string {
	var out []string
	for _, e := range b.Problems() {
		if strings.Contains(e, "/favicon.ico") && strings.Contains(e, "status of 404") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// barRows counts the rows of flame-chart bars crossing column x between y0
// and y1 of a screenshot: runs of at least 8 rows of pixels whose colour
// differs from the background.
func barRows(img image.Image, x, y0, y1 int) int {
	bg := img.At(x, y1)
	rows, run := 0, 0
	for y := y0; y <= y1; y++ {
		r, g, bl, _ := img.At(x, y).RGBA()
		br, bgc, bb, _ := bg.RGBA()
		diff := absDiff(r, br) + absDiff(g, bgc) + absDiff(bl, bb)
		if diff > 3*0x1000 {
			run++
			continue
		}
		if run >= 8 {
			rows++
		}
		run = 0
	}
	if run >= 8 {
		rows++
	}
	return rows
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// Chrome DevTools opens the Chromium export of real captures: no
// "Begin/End events mismatch" or any other error, the whole trace length
// shown, and (only_managed_samples) the busiest thread's flame chart drawn
// as nested frames, one row per stack level, not flattened.
func TestChromiumInDevTools(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	for _, c := range []struct {
		rel   string
		depth int // rows the busiest thread's flame chart must show (0: not checked)
	}{
		{"perfview/only_managed_samples.nettrace.zip", 3},
		// Two threads: the busiest (the worker, ThreadStart > ... > Loop >
		// MostlyHot) is sorted first, above the main thread waiting in
		// Console.ReadLine.
		{"clrdiag/hot-3.1.2-linux-x64.nettrace", 4},
		{"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip", 0},
		{"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace", 0},
	} {
		t.Run(c.rel, func(t *testing.T) {
			p, err := Read(bytes.NewReader(capture(t, c.rel)), Config{Timeline: true})
			if p == nil {
				t.Fatal(err)
			}
			wp := weightedOf(t, p, "")
			var buf bytes.Buffer
			if err := weighted.WriteChromium(&buf, wp); err != nil {
				t.Fatal(err)
			}
			if _, problems := weightedtest.ValidateTraceEvents(buf.Bytes()); len(problems) > 0 {
				t.Fatalf("the file breaks the format's rules: %q", problems[:min(5, len(problems))])
			}
			name := strings.NewReplacer("/", "_", ".zip", "").Replace(c.rel) + ".json"
			b, ms := openInDevTools(t, name, buf.Bytes())
			// DevTools shows the span from the first event to the last.
			var events struct {
				TraceEvents []struct {
					Ph string  `json:"ph"`
					Ts float64 `json:"ts"`
				} `json:"traceEvents"`
			}
			if err := json.Unmarshal(buf.Bytes(), &events); err != nil {
				t.Fatal(err)
			}
			first, last := math.Inf(1), math.Inf(-1)
			for _, e := range events.TraceEvents {
				if e.Ph != "M" {
					first, last = min(first, e.Ts), max(last, e.Ts)
				}
			}
			if want := int((last - first) / 1000); ms < want*98/100 || ms > want*102/100+1 {
				t.Errorf("DevTools shows a %d ms trace, the file spans %d ms", ms, want)
			}
			if errs := devToolsErrors(b); len(errs) > 0 {
				t.Errorf("DevTools reported errors: %q", errs[:min(10, len(errs))])
			}
			if c.depth == 0 {
				b.ViewportScreenshot("devtools-" + name)
				return
			}
			// Expand the process track, then its first thread, which is the
			// busiest (thread_sort_index), and count the flame chart's rows.
			busiest := wp.Groups[wp.Active]
			for _, step := range []struct {
				x, y   float64
				expect string
			}{
				{252, 130, fmt.Sprintf("%s (%d) expanded", wp.Name, wp.ProcessID)},
				{265, 150, fmt.Sprintf("%s (%d) expanded", busiest.Name, busiest.ThreadID)},
			} {
				// The first click may come before the track listens: click
				// until the track says it expanded.
				var err error
				for try := 0; try < 5; try++ {
					b.Do(chromedp.MouseClickXY(step.x, step.y))
					if _, err = b.WaitText(10*time.Second, func(s string) bool { return s == step.expect }); err == nil {
						break
					}
				}
				if err != nil {
					b.Screenshot("devtools-" + name + "-click")
					t.Fatalf("clicked at %v,%v for %q: %v", step.x, step.y, step.expect, err)
				}
			}
			time.Sleep(time.Second) // let the flame chart draw
			shot, err := os.ReadFile(b.ViewportScreenshot("devtools-" + name))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatal(err)
			}
			// The flame chart starts under the thread's header; the middle
			// of the timeline crosses every level of the stack.
			x := img.Bounds().Dx() * 2 / 3
			if rows := barRows(img, x, 160, 400); rows < c.depth {
				t.Errorf("the flame chart of %s shows %d rows of frames at x=%d, want at least %d (stacks flattened?)",
					busiest.Name, rows, x, c.depth)
			}
		})
	}
}

// validateSpeedscope validates speedscope files against the
// file-format-schema.json that the speedscope npm package ships, with ajv,
// and returns the problems found per file.
func validateSpeedscope(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	nm := browsertest.NodeModules(t, "ajv")
	app := browsertest.SpeedscopeApp(t)
	node := browsertest.Node(t)
	dir := t.TempDir()
	script := `const fs = require('fs');
const Ajv = require(process.argv[2] + '/ajv');
const schema = JSON.parse(fs.readFileSync(process.argv[3] + '/file-format-schema.json'));
const validate = new Ajv({allErrors: true, strict: false}).compile(schema);
const out = {};
for (const f of process.argv.slice(4)) {
  if (!validate(JSON.parse(fs.readFileSync(f)))) out[f] = JSON.stringify(validate.errors.slice(0, 5));
}
console.log(JSON.stringify(out));
`
	args := []string{filepath.Join(dir, "validate.js"), nm, app}
	if err := os.WriteFile(args[0], []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for name, b := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, path)
		byPath[path] = name
	}
	out, err := exec.Command(node, args...).Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var problems map[string]string
	if err := json.Unmarshal(out, &problems); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	named := map[string]string{}
	for path, p := range problems {
		named[byPath[path]] = p
	}
	return named
}

// The speedscope export of every capture with samples, in every measure,
// is valid against speedscope's own schema (ajv), and so is a file that the
// schema must reject (so the check can fail). -short exports
// shortMeasureCaptures only, the smallest capture of each combination of
// measures (4 have samples: hot-3.1.2, a workloads default capture,
// counters-truncated and objver4; events of every measure among them),
// of objver4 the thread of shortMeasureThreads, not the 30 MB VoiceMemo
// nor the other workloads captures.
// The list is TestConfigMeasure's, whose full mode checks it.
func TestSpeedscopeSchema(t *testing.T) {
	files := map[string][]byte{"broken.speedscope.json": []byte(`{"$schema":"` + weighted.SpeedscopeSchema + `","shared":{"frames":[{}]},"profiles":[{"type":"sampled"}]}`)}
	files["synthetic.speedscope.json"] = speedscopeOf(t, readSynth(t, 8, Config{Timeline: true}), "")
	for _, rel := range testcapture.Traces() {
		if !testcapture.Available(rel) || testing.Short() && !slices.Contains(shortMeasureCaptures, rel) {
			continue
		}
		cfg := Config{Timeline: true}
		if thread, ok := shortMeasureThreads[rel]; ok && testing.Short() {
			cfg.Threads = []uint64{thread} // objver4: one thread of 13
		}
		p, _ := Read(bytes.NewReader(capture(t, rel)), cfg)
		if p == nil || p.Activity().Samples == 0 {
			continue
		}
		for _, m := range Measures() {
			files[strings.ReplaceAll(rel, "/", "_")+"."+m+".speedscope.json"] = speedscopeOf(t, p, m)
		}
	}
	problems := validateSpeedscope(t, files)
	if _, ok := problems["broken.speedscope.json"]; !ok {
		t.Error("ajv accepted a file without frame names or profile fields: the check checks nothing")
	}
	delete(problems, "broken.speedscope.json")
	for name, p := range problems {
		t.Errorf("%s breaks speedscope's schema: %s", name, p)
	}
	t.Logf("%d files validated", len(files))
}

func speedscopeOf(t *testing.T, p *Profile, measure string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := weighted.WriteSpeedscope(&buf, weightedOf(t, p, measure)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openInSpeedscope opens a file in the speedscope app (served from its npm
// package) and waits until speedscope shows it: the page is titled after
// the file's name.
func openInSpeedscope(t *testing.T, b *browsertest.Browser, base, name, title string) []string {
	t.Helper()
	b.Do(chromedp.Navigate(base + "index.html#profileURL=" + url.QueryEscape(base+name)))
	if _, err := b.WaitText(time.Minute, func(s string) bool { return s == title+" - speedscope" }); err != nil {
		b.Screenshot("speedscope-" + name + "-timeout")
		t.Fatalf("speedscope did not open %s: %v; page errors %q", name, err, b.Problems())
	}
	texts, err := b.Texts()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if strings.Contains(s, "Something went wrong") || strings.Contains(s, "Unrecognized format") {
			t.Errorf("speedscope could not import %s: %q", name, s)
		}
	}
	if errs := b.Problems(); len(errs) > 0 {
		t.Errorf("speedscope reported errors opening %s: %q", name, errs)
	}
	b.Screenshot("speedscope-" + name)
	return texts
}

// speedscope (the npm package's app, in headless Chromium) opens the
// speedscope export on the busiest thread with "All threads" and every
// thread in its profile list, and imports the folded and Chromium exports.
func TestSpeedscopeOpens(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	app := browsertest.SpeedscopeApp(t)
	// The Hot target on .NET Core 3.1: the main thread (first in the trace)
	// waits in Console.ReadLine, the worker burns CPU: speedscope must open
	// on the worker.
	const rel = "clrdiag/hot-3.1.2-linux-x64.nettrace"
	p := readCapture(t, rel, Config{Timeline: true})
	wp := weightedOf(t, p, "")
	files := map[string][]byte{}
	for _, f := range weighted.Formats() {
		if f.Name == "pprof" {
			continue
		}
		var buf bytes.Buffer
		if err := f.Write(&buf, wp); err != nil {
			t.Fatal(err)
		}
		files["Hot"+f.Suffix] = buf.Bytes()
	}
	base := browsertest.Serve(t, app, files)
	b := browsertest.Start(t, browsertest.Config{Width: 1400, Height: 900, Timeout: 5 * time.Minute})

	// The toolbar names the profile shown and its place in the list:
	// "Thread 6920 (6/14)".
	texts := openInSpeedscope(t, b, base, "Hot.speedscope.json", wp.Title())
	busiest := wp.Groups[wp.Active].Name
	found := false
	for i := 0; i+5 < len(texts); i++ {
		if texts[i] == busiest && texts[i+1] == "(" && texts[i+3] == "/" && texts[i+4] == strconv.Itoa(len(wp.Groups)+1) && texts[i+5] == ")" {
			found = true
		}
	}
	if !found {
		t.Errorf("speedscope does not open on the busiest thread %q of %d profiles: %q", busiest, len(wp.Groups)+1, texts)
	}
	if !slices.Contains(texts, "All threads") {
		t.Errorf("speedscope's profile list has no All threads: %q", texts)
	}
	for _, g := range wp.Groups {
		if !slices.Contains(texts, g.Name) {
			t.Errorf("speedscope's profile list lacks %s", g.Name)
		}
	}

	// Folded stacks and Chromium trace events, through speedscope's
	// importers: titled after the file.
	openInSpeedscope(t, b, base, "Hot.folded", "Hot.folded")
	openInSpeedscope(t, b, base, "Hot.chromium.json", "Hot.chromium.json")
}
