//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/profile"
)

func startEvents(t *testing.T) *dotnettest.Target {
	t.Helper()
	return startEventsOn(t, dotnettest.Find(t))
}

// startEventsOn starts the Events target on rt.
func startEventsOn(t *testing.T, rt *dotnettest.Runtime) *dotnettest.Target {
	t.Helper()
	return rt.Start(t, rt.Build(t, "Events"), nil, nil)
}

func TestRealCollectCustomEventSource(t *testing.T) {
	tg := startEvents(t)
	out := filepath.Join(t.TempDir(), "custom.nettrace")
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0xF:Verbose", "-o", out, "--duration", "4s")
	r.waitSession(t)
	waitEnabled(t, tg)
	tg.Send(t, "emit 20")
	tg.Expect(t, "EMITTED", 10*time.Second)
	r.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("collect exit %d:\n%s", r.code, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "duration reached") || !strings.Contains(r.stderr.String(), "rundown completed") {
		t.Errorf("summary does not tell how it ended:\n%s", r.stderr.String())
	}
	evs, stats := readTrace(t, out)
	if !stats.Complete || stats.DroppedEvents != 0 {
		t.Fatalf("stats = %+v", stats)
	}
	counts := map[string]int{}
	rundown := 0
	for _, e := range evs {
		if e.provider == "Microsoft-Windows-DotNETRuntimeRundown" {
			rundown++
		}
		if e.provider != "Clrdiag-Test" {
			continue
		}
		counts[e.name]++
		switch e.name {
		case "Hello":
			i, _ := e.fields.Get("index")
			msg, _ := e.fields.Get("message")
			if msg != fmt.Sprintf("hello %v", i) {
				t.Errorf("Hello payload = %v", e.fields)
			}
		case "Numbers":
			a, _ := e.fields.Get("a")
			b, _ := e.fields.Get("b")
			big, _ := e.fields.Get("big")
			d, _ := e.fields.Get("d")
			flag, _ := e.fields.Get("flag")
			ai, ok := a.(int32)
			if !ok || b != -ai || big != int64(ai)*1000000000 || d != 1.5*float64(ai) || flag != (ai%2 == 0) {
				t.Errorf("Numbers payload = %v", e.fields)
			}
		case "Mixed":
			g, _ := e.fields.Get("g")
			if fmt.Sprint(g) != "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" {
				t.Errorf("Mixed guid = %v (%T)", g, g)
			}
		}
	}
	for _, name := range []string{"Hello", "Numbers", "Warn", "Mixed"} {
		if counts[name] != 20 {
			t.Errorf("%d %s events, want 20 (all: %v)", counts[name], name, counts)
		}
	}
	if rundown == 0 {
		t.Error("no rundown events after the stop")
	}
}

func TestRealCollectKeywordAndLevelFilter(t *testing.T) {
	tg := startEvents(t)
	out := filepath.Join(t.TempDir(), "filtered.nettrace")
	// Keyword Basic (1) at Informational: Hello only (Numbers is Verbose,
	// Warn and Mixed have keyword Detail).
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0x1:informational", "-o", out, "--duration", "3s", "--rundown", "false", "--quiet")
	waitEnabled(t, tg)
	tg.Send(t, "emit 10")
	tg.Expect(t, "EMITTED", 10*time.Second)
	r.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("collect exit %d:\n%s", r.code, r.stderr.String())
	}
	if r.stderr.String() != "" {
		t.Errorf("--quiet printed:\n%s", r.stderr.String())
	}
	evs, _ := readTrace(t, out)
	counts := map[string]int{}
	for _, e := range evs {
		counts[e.provider+"/"+e.name]++
	}
	if counts["Clrdiag-Test/Hello"] != 10 || counts["Clrdiag-Test/Numbers"] != 0 || counts["Clrdiag-Test/Warn"] != 0 || counts["Clrdiag-Test/Mixed"] != 0 {
		t.Fatalf("filtering failed: %v", counts)
	}
	if counts["Microsoft-Windows-DotNETRuntimeRundown/"] != 0 {
		t.Fatalf("rundown events with --rundown false: %v", counts)
	}
}

// waitEnabled waits until a session has enabled the target's EventSource:
// the runtime enables it asynchronously after the session starts.
func waitEnabled(t *testing.T, tg *dotnettest.Target) {
	t.Helper()
	tg.Send(t, "wait-enabled")
	tg.Expect(t, "ENABLED", 30*time.Second)
}

func TestRealCollectStopOnEvent(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testRealCollectStopOnEvent)
}

func testRealCollectStopOnEvent(t *testing.T, rt *dotnettest.Runtime) {
	tg := startEventsOn(t, rt)
	out := filepath.Join(t.TempDir(), "stop.nettrace")
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0xF:5", "-o", out,
		"--stopping-event-provider-name", "Clrdiag-Test", "--stopping-event-event-name", "Finish",
		"--stopping-event-payload-filter", "reason:done,code:42")
	r.waitSession(t)
	waitEnabled(t, tg)
	tg.Send(t, "emit 3")
	tg.Expect(t, "EMITTED", 10*time.Second)
	tg.Send(t, "stop-event")
	tg.Expect(t, "STOP-EVENT", 10*time.Second)
	r.wait(t, 60*time.Second)
	if r.code != 0 || !strings.Contains(r.stderr.String(), "stopping event seen") {
		t.Fatalf("collect exit %d:\n%s", r.code, r.stderr.String())
	}
	evs, _ := readTrace(t, out)
	stops := 0
	for _, e := range evs {
		if e.name == "Finish" {
			stops++
		}
	}
	if stops != 1 {
		t.Fatalf("%d Finish events in the file", stops)
	}
}

// TestRealCollectProfiles collects with the default providers and the
// cpu-sampling and gc-verbose profiles on every runtime, while the target
// collects garbage: each file is complete, decodes to the last payload,
// and holds the kinds of events its profile asks for.
func TestRealCollectProfiles(t *testing.T) {
	const (
		runtimeProvider = "Microsoft-Windows-DotNETRuntime"
		rundownProvider = "Microsoft-Windows-DotNETRuntimeRundown"
		sampleProvider  = "Microsoft-DotNETCore-SampleProfiler"
	)
	type kind struct {
		provider string
		id       uint32
	}
	var (
		threadSample = kind{sampleProvider, 0}
		gcStart      = kind{runtimeProvider, 1}
		gcEnd        = kind{runtimeProvider, 2}
		gcHeapStats  = kind{runtimeProvider, 4}
		methodDCEnd  = kind{rundownProvider, 144} // MethodDCEndVerbose
		jitStart     = kind{runtimeProvider, 145} // MethodJittingStarted: verbose JIT
	)
	dotnettest.ForEachSmoke(t, dotnettest.Majors, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startEventsOn(t, rt)
		for _, c := range []struct {
			profile string
			want    []kind
			not     []kind // kinds the profile leaves out
		}{
			{"", []kind{threadSample, gcStart, gcEnd, methodDCEnd}, nil},
			{"cpu-sampling", []kind{threadSample, gcStart, methodDCEnd}, nil},
			{"gc-verbose", []kind{gcStart, gcEnd, gcHeapStats, methodDCEnd}, []kind{threadSample}},
		} {
			name := c.profile
			if name == "" {
				name = "default"
			}
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), name+".nettrace")
				args := []string{"trace", "collect", "-p", fmt.Sprint(tg.PID), "-o", out}
				if c.profile != "" {
					args = append(args, "--profile", c.profile)
				}
				r := startCLIProcess(t, args...)
				r.waitSession(t)
				// Collect until the file holds an induced GC (the runtime
				// enables its providers a moment after the session starts),
				// then stop as a user would, with Ctrl-C's stop.
				deadline := time.Now().Add(60 * time.Second)
				for inducedGCStarts(out) == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("no induced GCStart in %s after 60s:\n%s", out, r.stderr.String())
					}
					tg.Send(t, "gc 1")
					tg.Expect(t, "GC done", 10*time.Second)
					for wait := time.Now().Add(time.Second); inducedGCStarts(out) == 0 && time.Now().Before(wait); {
						time.Sleep(50 * time.Millisecond)
					}
				}
				if code := r.interrupt(t, 90*time.Second); code != 0 || !strings.Contains(r.stderr.String(), "rundown completed") {
					t.Fatalf("collect exit %d:\n%s", code, r.stderr.String())
				}
				evs, stats := readTrace(t, out)
				if !stats.Complete || stats.DroppedEvents != 0 {
					t.Errorf("stats = %+v", stats)
				}
				counts := map[kind]int{}
				for _, e := range evs {
					counts[kind{e.provider, e.id}]++
				}
				for _, k := range c.want {
					if counts[k] == 0 {
						t.Errorf("no %s/%d events (of %d)", k.provider, k.id, len(evs))
					}
				}
				for _, k := range c.not {
					if counts[k] != 0 {
						t.Errorf("%d %s/%d events, which --profile %s leaves out", counts[k], k.provider, k.id, c.profile)
					}
				}
				if c.profile == "" && counts[jitStart] != 0 {
					t.Errorf("verbose JIT events in a default trace")
				}
			})
		}
	})
}

func TestRealCollectTargetKilled(t *testing.T) {
	tg := startEvents(t)
	out := filepath.Join(t.TempDir(), "killed.nettrace")
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0xF:5", "-o", out)
	r.waitSession(t)
	waitEnabled(t, tg)
	tg.Send(t, "emit 50")
	tg.Expect(t, "EMITTED", 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // let the runtime flush a block
	if err := syscall.Kill(tg.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("collect exit %d:\n%s", r.code, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "target ended the session") {
		t.Errorf("no clear message about the target:\n%s", r.stderr.String())
	}
	evs, stats := readTrace(t, out)
	if !stats.Complete {
		t.Fatalf("file not terminated: %+v", stats)
	}
	hello := 0
	for _, e := range evs {
		if e.name == "Hello" {
			hello++
		}
	}
	if hello == 0 {
		t.Fatalf("no events kept from before the kill (%d events)", len(evs))
	}
}

func TestCollectArgumentErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "collect", "-p", "1", "--providers", "X:zz"}, "not hexadecimal"},
		{[]string{"trace", "collect", "-p", "1", "--profile", "nope"}, "unknown profile"},
		{[]string{"trace", "collect", "-p", "1", "--duration", "5"}, "--duration"},
		{[]string{"trace", "collect", "-p", "1", "--stopping-event-event-name", "x"}, "need --stopping-event-provider-name"},
		{[]string{"trace", "collect", "-p", "1", "--rundown", "perhaps"}, "--rundown"},
		{[]string{"trace", "collect", "-p", "1", "--buffersize", "0"}, "--buffersize"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want exitUsage and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestRealStreamJSON(t *testing.T) {
	tg := startEvents(t)
	r := startCLI("trace", "stream", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0x1:5", "--json", "--duration", "4s")
	waitEnabled(t, tg)
	tg.Send(t, "emit 7")
	tg.Expect(t, "EMITTED", 10*time.Second)
	r.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Fatalf("stream exit %d:\n%s", r.code, r.stderr.String())
	}
	var hello, numbers int
	for _, line := range strings.Split(strings.TrimSpace(r.stdout.String()), "\n") {
		var ev struct {
			Provider  string         `json:"provider"`
			EventName string         `json:"eventName"`
			EventID   uint32         `json:"eventID"`
			ThreadID  uint64         `json:"threadID"`
			Timestamp time.Time      `json:"timestamp"`
			Payload   map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line is not JSON: %v\n%s", err, line)
		}
		if ev.Provider != "Clrdiag-Test" {
			continue
		}
		if ev.Timestamp.IsZero() || ev.ThreadID == 0 {
			t.Errorf("event without time or thread: %s", line)
		}
		switch ev.EventName {
		case "Hello":
			hello++
			if ev.Payload["message"] != fmt.Sprintf("hello %v", ev.Payload["index"]) {
				t.Errorf("Hello payload: %s", line)
			}
		case "Numbers":
			numbers++
		}
	}
	if hello != 7 || numbers != 7 {
		t.Fatalf("streamed %d Hello and %d Numbers events, want 7 each:\n%s", hello, numbers, r.stdout.String())
	}
}

// TestRealCollectDiskFull fills a 1 MB file system with a real 3.1
// target's events: trace collect says the disk is full (not that the
// target ended the session), exits 6, leaves a valid file, and the runtime
// is left without the session (a new one works).
func TestRealCollectDiskFull(t *testing.T) {
	dir := smallDisk(t)
	if dir == "" {
		t.Skip("needs root to mount a 1 MB tmpfs (the fake-runtime test covers the rest)")
	}
	tg := startEvents(t)
	out := filepath.Join(dir, "full.nettrace")
	r := startCLI("trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0xF:5", "-o", out)
	r.waitSession(t)
	waitEnabled(t, tg)
	tg.Send(t, "flood 10")
	r.wait(t, 60*time.Second)
	if r.code != exitIO || !strings.Contains(r.stderr.String(), "no space left on device") || strings.Contains(r.stderr.String(), "target ended the session") {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr.String())
	}
	evs, stats := readTrace(t, out)
	if !stats.Complete || len(evs) == 0 {
		t.Fatalf("%d events, complete %v", len(evs), stats.Complete)
	}
	// The flood looks at its 10 s every 1000 events, and on a loaded
	// machine it can end well after them: once, with two test suites on
	// two cores, it printed nothing within 30 s.
	tg.Expect(t, "FLOODED", 2*time.Minute)
	out2 := filepath.Join(t.TempDir(), "after.nettrace")
	code, _, errOut := run(t, "trace", "collect", "-p", fmt.Sprint(tg.PID), "--providers", "Clrdiag-Test:0xF:5", "--duration", "1s", "-o", out2)
	if code != 0 {
		t.Fatalf("a new session after the full disk: exit %d\n%s", code, errOut)
	}
}

func TestCollectSampleFlags(t *testing.T) {
	code, _, errOut := run(t, "trace", "collect", "-p", "1", "--sample", "alloc")
	if code != exitUsage || !strings.Contains(errOut, "give --format too") {
		t.Errorf("--sample without --format: exit %d\n%s", code, errOut)
	}
	code, _, errOut = run(t, "trace", "collect", "-p", "1", "--format", "pprof", "--sample", "heap")
	if code != exitUsage || !strings.Contains(errOut, `unknown --sample "heap"`) {
		t.Errorf("--sample heap: exit %d\n%s", code, errOut)
	}
	for _, c := range []struct {
		f       sessionFlags
		measure string
		want    string
	}{
		{sessionFlags{}, profile.MeasureAlloc, "Microsoft-Windows-DotNETRuntime:0x1:5"},
		{sessionFlags{}, profile.MeasureWall, ""}, // the default session samples
		{sessionFlags{providers: "My-Provider"}, profile.MeasureCPU, "My-Provider,Microsoft-DotNETCore-SampleProfiler:0xF00000000000:4"},
		{sessionFlags{providers: "My-Provider:0x1:4"}, profile.MeasureContention, "My-Provider:0x1:4,Microsoft-Windows-DotNETRuntime:0x4000:4"},
		{sessionFlags{providers: "microsoft-windows-dotnetruntime:0x8000:4"}, profile.MeasureAlloc, "microsoft-windows-dotnetruntime:0x8000:4"},
		{sessionFlags{profiles: []string{"gc-verbose"}}, profile.MeasureContention, ""},
		{sessionFlags{clrEvents: "gc"}, profile.MeasureAlloc, ""},
	} {
		m, _ := profile.LookupMeasure(c.measure)
		f := c.f
		f.addMeasure(m)
		if f.providers != c.want {
			t.Errorf("%+v with --sample %s: providers %q, want %q", c.f, c.measure, f.providers, c.want)
		}
	}
}

// cliProcess is clrdiag (the test binary's Main, see interrupt_linux_test.go)
// running as a process of its own, so that a test can stop it with a real
// SIGINT, as Ctrl-C does.
type cliProcess struct {
	cmd    *exec.Cmd
	stderr syncbuf.Buffer
	done   chan struct{}
}

func startCLIProcess(t *testing.T, args ...string) *cliProcess {
	t.Helper()
	a, _ := json.Marshal(args)
	p := &cliProcess{cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "CLRDIAG_TEST_MAIN_ARGS="+string(a))
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitSession waits until clrdiag says the session is running.
func (p *cliProcess) waitSession(t *testing.T) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.stderr.String(), "Session        :") {
		select {
		case <-p.done:
			t.Fatalf("clrdiag ended before the session started (exit %d):\n%s", p.cmd.ProcessState.ExitCode(), p.stderr.String())
		case <-deadline:
			t.Fatalf("session not started after 30s:\n%s", p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// interrupt sends SIGINT and returns the exit status.
func (p *cliProcess) interrupt(t *testing.T, timeout time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("clrdiag did not end within %v of SIGINT:\n%s", timeout, p.stderr.String())
		return -1
	}
}
