//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/profile"
)

func startEvents(t *testing.T) *dotnettest.Target {
	t.Helper()
	rt := dotnettest.Find(t)
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
	tg := startEvents(t)
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
	tg.Expect(t, "FLOODED", 30*time.Second)
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
