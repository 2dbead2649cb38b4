//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clrdiag/clrdiag/internal/browsertest"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/nettrace"
)

// startWebOn starts the ASP.NET Core target (testdata/targets/Web.cs) on rt
// and returns it with the URL it serves.
func startWebOn(t *testing.T, rt *dotnettest.Runtime) (*dotnettest.Target, string) {
	t.Helper()
	tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
	return tg, dotnettest.WebURL(t, tg)
}

var webClient = &http.Client{Timeout: 30 * time.Second}

// get requests url and returns the status code.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := webClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// traceHas reports whether the trace at path, which may still be written,
// holds an event that ok accepts (in the blocks complete so far).
func traceHas(path string, ok func(*nettrace.Event) bool) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	rd, err := nettrace.NewReader(f)
	if err != nil {
		return false
	}
	var ev nettrace.Event
	for rd.ReadEvent(&ev) == nil {
		if ok(&ev) {
			return true
		}
	}
	return false
}

// webWarning accepts the Web target's ILogger warning (category
// Clrdiag.Web.Requests) as the EventSourceLogger writes it.
func webWarning(ev *nettrace.Event) bool {
	if ev.Metadata.ProviderName != loggingProvider || ev.Metadata.EventName != "FormattedMessage" {
		return false
	}
	fs, err := ev.Fields()
	if err != nil {
		return false
	}
	name, _ := fs.Get("LoggerName")
	return name == "Clrdiag.Web.Requests"
}

// TestRealWebLogs traces the ILogger messages of an ASP.NET Core app on
// .NET 8, 10 and 11 (the Microsoft-Extensions-Logging provider) until its
// warning arrives, stopping on it by category and by ILogger level (3), and
// reads them back with 'trace events': the message, the category and the
// level by ILogger's name. The payload's Level is a LogLevel, not an
// EventSource level: 3 is Warning in both, but the requests' 2 is
// Information (EventSource's 2 is Error).
func TestRealWebLogs(t *testing.T) {
	dotnettest.ForEachSmoke(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg, url := startWebOn(t, rt)
		out := filepath.Join(t.TempDir(), "logs.nettrace")
		r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", loggingProvider+":0xE:4", "-o", out,
			"--stopping-event-provider-name", loggingProvider, "--stopping-event-event-name", "FormattedMessage",
			"--stopping-event-payload-filter", "LoggerName:Clrdiag.Web.Requests,Level:3")
		r.waitSession(t)
		// The runtime enables the logger's EventSource a moment after the
		// session starts: log until the session stops on the warning.
		for deadline := time.Now().Add(60 * time.Second); ; {
			if code := get(t, url+"/log"); code != 200 {
				t.Fatalf("GET /log: %d", code)
			}
			select {
			case <-r.done:
			case <-time.After(200 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				t.Fatalf("no stop on the warning after 60s of requests:\n%s", r.stderr.String())
			}
			break
		}
		if r.code != 0 || !strings.Contains(r.stderr.String(), "stopping event seen") {
			t.Fatalf("collect exit %d:\n%s", r.code, r.stderr.String())
		}

		code, text, errOut := run(t, "trace", "events", out, "--provider", loggingProvider, "--event", "FormattedMessage")
		if code != 0 {
			t.Fatalf("trace events: exit %d %s", code, errOut)
		}
		var warning, request string
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, `LoggerName="Clrdiag.Web.Requests"`) {
				warning = line
			}
			if strings.Contains(line, `LoggerName="Microsoft.AspNetCore.Hosting.Diagnostics"`) && strings.Contains(line, "Request starting") {
				request = line
			}
		}
		wantOutput(t, "the warning's line", warning, "  Level=Warning  ", `  EventId=42  EventName="SlowRequest"  `,
			`  FormattedMessage="Slow request /log took 123 ms"`)
		wantOutput(t, "a request's line", request, "  Level=Information  ")

		code, text, _ = run(t, "trace", "events", out, "--provider", loggingProvider, "--event", "FormattedMessage", "--json")
		found := false
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			var ev struct {
				Payload map[string]any `json:"payload"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if ev.Payload["LoggerName"] == "Clrdiag.Web.Requests" {
				found = true
				if ev.Payload["Level"] != "Warning" || ev.Payload["EventId"] != 42.0 || ev.Payload["FormattedMessage"] != "Slow request /log took 123 ms" {
					t.Errorf("the warning in JSON: %v", ev.Payload)
				}
			}
		}
		if code != 0 || !found {
			t.Errorf("trace events --json (exit %d) lacks the warning", code)
		}
	})
}

// dotnetTrace is Microsoft's dotnet-trace collecting from a process, run
// beside clrdiag as a second source of truth.
type dotnetTrace struct {
	cmd    *exec.Cmd
	out    syncbuf.Buffer
	stdin  io.WriteCloser
	done   chan struct{}
	output string
}

func startDotnetTrace(t *testing.T, tools *dotnettest.Tools, output string, args ...string) *dotnetTrace {
	t.Helper()
	d := &dotnetTrace{cmd: tools.Command("dotnet-trace", append([]string{"collect", "-o", output}, args...)...), done: make(chan struct{}), output: output}
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	var err error
	// An input that stays open: dotnet-trace stops on Enter or end of input.
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		d.stdin.Close()
	})
	return d
}

// waitSession waits until dotnet-trace has begun writing its file (the
// session runs and its stream started).
func (d *dotnetTrace) waitSession(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, err := os.Stat(d.output); err == nil && st.Size() > 0 {
			return
		}
		select {
		case <-d.done:
			t.Fatalf("dotnet-trace ended before its session started (exit %d):\n%s", d.cmd.ProcessState.ExitCode(), d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dotnet-trace's session did not start within 60s:\n%s", d.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interrupt stops dotnet-trace as Ctrl-C does and waits for it.
func (d *dotnetTrace) interrupt(t *testing.T, timeout time.Duration) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		if code := d.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("dotnet-trace exit %d:\n%s", code, d.out.String())
		}
	case <-time.After(timeout):
		t.Fatalf("dotnet-trace did not end within %v of SIGINT:\n%s", timeout, d.out.String())
	}
}

// eventKinds returns the provider/event-id pairs of a trace, each with its
// count, decoding every event (payloads included) and failing on damage.
func eventKinds(t *testing.T, path string) map[string]int {
	t.Helper()
	evs, stats := readTrace(t, path)
	if !stats.Complete {
		t.Errorf("%s is not complete: %+v", path, stats)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[fmt.Sprintf("%s/%d", e.provider, e.id)]++
	}
	return kinds
}

// TestRealSameKindsAsDotnetTrace has clrdiag and Microsoft's dotnet-trace
// trace the same ASP.NET Core process at once, with the same providers
// (the runtime's GC and exception events, ILogger's messages, CPU samples),
// while it serves requests that log, throw and allocate: both files decode
// completely, and hold the same providers and the same kinds of events.
func TestRealSameKindsAsDotnetTrace(t *testing.T) {
	tools := dotnettest.FindTools(t)
	const providers = "Microsoft-Windows-DotNETRuntime:0x8001:4,Microsoft-Extensions-Logging:0xE:4,Microsoft-DotNETCore-SampleProfiler"
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg, url := startWebOn(t, rt)
		dir := t.TempDir()
		ours, theirs := filepath.Join(dir, "clrdiag.nettrace"), filepath.Join(dir, "dotnet-trace.nettrace")
		pid := fmt.Sprint(tg.PID)
		dt := startDotnetTrace(t, tools, theirs, "-p", pid, "--providers", providers)
		us := startCLIProcess(t, "trace", "collect", "-p", pid, "--providers", providers, "-o", ours)
		dt.waitSession(t)
		us.waitSession(t)
		// Serve until both files hold the warning and a GC (each session's
		// providers are enabled a moment after it starts), then a last
		// round that both sessions see whole.
		thrown := func(ev *nettrace.Event) bool {
			return ev.Metadata.ProviderName == "Microsoft-Windows-DotNETRuntime" && ev.Metadata.EventID == 80
		}
		for deadline := time.Now().Add(90 * time.Second); ; {
			get(t, url+"/log")
			get(t, url+"/throw")
			get(t, url+"/alloc?mb=8")
			if traceHas(ours, webWarning) && traceHas(theirs, webWarning) && traceHas(ours, thrown) && traceHas(theirs, thrown) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 90s of requests the traces lack the warning or the exception:\nclrdiag:\n%s\ndotnet-trace:\n%s", us.stderr.String(), dt.out.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, path := range []string{"/", "/log", "/throw", "/lock", "/alloc?mb=8"} {
			get(t, url+path)
		}
		dt.interrupt(t, 2*time.Minute)
		if code := us.interrupt(t, 2*time.Minute); code != 0 {
			t.Fatalf("clrdiag exit %d:\n%s", code, us.stderr.String())
		}
		a, b := eventKinds(t, ours), eventKinds(t, theirs)
		var onlyOurs, onlyTheirs []string
		for k, n := range a {
			if b[k] == 0 {
				onlyOurs = append(onlyOurs, fmt.Sprintf("%s (%d)", k, n))
			}
		}
		for k, n := range b {
			if a[k] == 0 {
				onlyTheirs = append(onlyTheirs, fmt.Sprintf("%s (%d)", k, n))
			}
		}
		slices.Sort(onlyOurs)
		slices.Sort(onlyTheirs)
		if len(onlyOurs)+len(onlyTheirs) > 0 {
			t.Errorf("the kinds of events differ: only in clrdiag's %v, only in dotnet-trace's %v", onlyOurs, onlyTheirs)
		}
		if len(a) < 10 {
			t.Errorf("only %d kinds of events: %v", len(a), a)
		}
		t.Logf("%d kinds of events in both", len(a))
	})
}

// speedscopeShape is what a speedscope file says about each thread: the
// methods on its stacks and the time its samples cover, in milliseconds.
type speedscopeShape struct {
	profiles int                     // profiles in the file
	methods  map[int]map[string]bool // thread id -> method names
	lastOnly map[int]map[string]bool // thread id -> the methods of its last sample only (sampled profiles)
	millis   map[int]float64         // thread id -> time
	names    map[int]string          // thread id -> profile name
}

// tracePseudoFrame matches the frames TraceEvent's speedscope export adds
// above the stacks and for what it cannot name: the process, "Threads",
// the thread, "(Non-Activities)", CPU_TIME / UNMANAGED_CODE_TIME, "?!?".
var tracePseudoFrame = regexp.MustCompile(`^(Process(32|64) .*|Threads|Thread \(\d+\)|\(Non-Activities\)|[A-Z_]+_TIME|\?!\?)$`)

// readSpeedscope reads a speedscope file as clrdiag writes it ("sampled"
// profiles named "Thread N" beside "All threads", frames named
// Namespace.Type.Method, addresses for what it cannot name) or as
// dotnet-trace convert does (TraceEvent's "evented" profiles named
// "Thread (N)", frames named Module!Namespace.Type.Method(args)), and
// returns the shape both can be compared in.
func readSpeedscope(t *testing.T, path string) speedscopeShape {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type    string    `json:"type"`
			Name    string    `json:"name"`
			Unit    string    `json:"unit"`
			Samples [][]int   `json:"samples"`
			Weights []float64 `json:"weights"`
			Events  []struct {
				Type  string  `json:"type"`
				At    float64 `json:"at"`
				Frame int     `json:"frame"`
			} `json:"events"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := speedscopeShape{profiles: len(f.Profiles), methods: map[int]map[string]bool{}, lastOnly: map[int]map[string]bool{},
		millis: map[int]float64{}, names: map[int]string{}}
	frame := func(i int) string {
		if i < 0 || i >= len(f.Shared.Frames) {
			t.Fatalf("%s: frame %d of %d", path, i, len(f.Shared.Frames))
		}
		n := f.Shared.Frames[i].Name
		if tracePseudoFrame.MatchString(n) || strings.HasPrefix(n, "0x") {
			return ""
		}
		if _, m, ok := strings.Cut(n, "!"); ok { // Module!Method(args)
			n = m
			if i := strings.IndexByte(n, '('); i > 0 {
				n = n[:i]
			}
		}
		return n
	}
	unit := map[string]float64{"milliseconds": 1, "nanoseconds": 1e-6, "microseconds": 1e-3, "seconds": 1e3}
	for _, p := range f.Profiles {
		var tid int
		if _, err := fmt.Sscanf(strings.NewReplacer("(", "", ")", "").Replace(p.Name), "Thread %d", &tid); err != nil {
			if p.Name != "All threads" {
				t.Errorf("%s: a profile named %q", path, p.Name)
			}
			continue
		}
		ms, ok := unit[p.Unit]
		if !ok {
			t.Fatalf("%s: unit %q", path, p.Unit)
		}
		methods := map[string]bool{}
		total := 0.0
		switch p.Type {
		case "sampled":
			last := map[string]bool{}
			for i, st := range p.Samples {
				for _, fr := range st {
					if n := frame(fr); n != "" {
						if i == len(p.Samples)-1 && !methods[n] {
							last[n] = true
						}
						methods[n] = true
					}
				}
				total += p.Weights[i] * ms
			}
			s.lastOnly[tid] = last
		case "evented": // the time the outermost frames stay open
			depth, open := 0, 0.0
			for _, e := range p.Events {
				if n := frame(e.Frame); n != "" {
					methods[n] = true
				}
				switch e.Type {
				case "O":
					if depth == 0 {
						open = e.At
					}
					depth++
				case "C":
					if depth--; depth == 0 {
						total += (e.At - open) * ms
					}
				}
			}
		default:
			t.Fatalf("%s: profile type %q", path, p.Type)
		}
		s.methods[tid], s.millis[tid], s.names[tid] = methods, total, p.Name
	}
	return s
}

// TestRealSpeedscopeLikeDotnetTrace converts the same CPU trace of the Hot
// target (collected by clrdiag on .NET 8, 10 and 11) with 'trace convert
// --format speedscope' and with Microsoft's 'dotnet-trace convert': both
// files open in speedscope (its own importer, in Chromium), with a profile
// for the same threads (clrdiag adds "All threads"); each thread has the
// same methods on its stacks, and the threads sampled from start to end
// cover the same time (within 2%). Where they differ by design: clrdiag
// weighs samples (a thread's time is its samples times the period),
// TraceEvent spans them (a thread's time runs from its first sample to its
// last), so threads sampled only part of the time are not compared by
// time; and TraceEvent's evented profile ends each thread at its last
// sample, whose stack it leaves out, so the methods only that sample has
// are only in clrdiag's file.
func TestRealSpeedscopeLikeDotnetTrace(t *testing.T) {
	tools := dotnettest.FindTools(t)
	files := map[string][]byte{}
	var counts []string
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startHotOn(t, rt)
		dir := t.TempDir()
		trace := filepath.Join(dir, "hot.nettrace")
		if code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--profile", "cpu-sampling", "--duration", "3s", "-o", trace); code != 0 {
			t.Fatalf("collect: exit %d %s", code, errOut)
		}
		ours := filepath.Join(dir, "clrdiag.speedscope.json")
		if code, _, errOut := run(t, "trace", "convert", trace, "--format", "speedscope", "-o", ours); code != 0 {
			t.Fatalf("trace convert: exit %d %s", code, errOut)
		}
		cmd := tools.Command("dotnet-trace", "convert", "--format", "speedscope", "-o", filepath.Join(dir, "dotnet-trace.json"), trace)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dotnet-trace convert: %v\n%s", err, out)
		}
		theirs := filepath.Join(dir, "dotnet-trace.speedscope.json") // it names the file so
		a, b := readSpeedscope(t, ours), readSpeedscope(t, theirs)
		if len(a.methods) == 0 || !maps.EqualFunc(a.names, b.names, func(string, string) bool { return true }) {
			t.Fatalf("threads: clrdiag %v, dotnet-trace %v", a.names, b.names)
		}
		if a.profiles != b.profiles+1 {
			t.Errorf("%d profiles in clrdiag's file, %d in dotnet-trace's: want one more (All threads)", a.profiles, b.profiles)
		}
		longest := slices.Max(slices.Collect(maps.Values(b.millis)))
		for tid, m := range a.methods {
			var onlyOurs, onlyTheirs []string
			for n := range m {
				if !b.methods[tid][n] && !a.lastOnly[tid][n] {
					onlyOurs = append(onlyOurs, n)
				}
			}
			for n := range b.methods[tid] {
				if !m[n] {
					onlyTheirs = append(onlyTheirs, n)
				}
			}
			if len(onlyOurs)+len(onlyTheirs) > 0 {
				t.Errorf("thread %d: methods only clrdiag shows %q, only dotnet-trace %q", tid, onlyOurs, onlyTheirs)
			}
			if b.millis[tid] >= 0.9*longest {
				if d := a.millis[tid] / b.millis[tid]; d < 0.98 || d > 1.02 {
					t.Errorf("thread %d: %.1f ms in clrdiag's file, %.1f ms in dotnet-trace's", tid, a.millis[tid], b.millis[tid])
				}
			}
		}
		// One pair goes through speedscope's importer (a browser for
		// each runtime would add half a minute for the same format).
		clear(files)
		for name, path := range map[string]string{"clrdiag": ours, "dotnet-trace": theirs} {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files[rt.String()+"-"+name+".speedscope.json"] = b
		}
		counts = append(counts, fmt.Sprintf("%s: %d threads", rt, len(a.methods)))
	})
	if len(files) == 0 {
		return
	}
	// speedscope's importer reads both: the page is titled after the
	// profile, no error, and the profile list counts the profiles.
	app := browsertest.SpeedscopeApp(t)
	base := browsertest.Serve(t, app, files)
	br := browsertest.Start(t, browsertest.Config{Width: 1400, Height: 900, Timeout: 5 * time.Minute})
	for _, name := range slices.Sorted(maps.Keys(files)) {
		br.Do(chromedp.Navigate(base + "index.html#profileURL=" + url.QueryEscape(base+name)))
		title, err := br.WaitText(time.Minute, func(s string) bool { return strings.HasSuffix(s, " - speedscope") })
		if err != nil {
			t.Fatalf("speedscope did not open %s: %v; page errors %q", name, err, br.Problems())
		}
		texts, err := br.Texts()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			if strings.Contains(s, "Something went wrong") || strings.Contains(s, "Unrecognized format") {
				t.Errorf("speedscope could not import %s: %q", name, s)
			}
		}
		if errs := br.Problems(); len(errs) > 0 {
			t.Errorf("speedscope reported errors opening %s: %q", name, errs)
		}
		t.Logf("speedscope opened %s as %q", name, title)
	}
	t.Log(strings.Join(counts, "; "))
}
