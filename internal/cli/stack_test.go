//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

func TestFakeStack(t *testing.T) {
	var req atomic.Pointer[ipctest.TracingSession]
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		req.Store(s)
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}})
	code, out, errOut := run(t, "stack", "--diagnostic-port", port)
	if code != 0 {
		t.Fatalf("stack: exit %d\n%s", code, errOut)
	}
	// The first sample of each thread, in order of appearance.
	want := "Thread (0x101):\n  App!App.Program.Wait\n  App!App.Program.Main\n\n" +
		"Thread (0x202):\n  0xdead0000 (unresolved)\n  App!App.Worker.Spin\n  App!App.Program.Main\n"
	if out != want {
		t.Errorf("stack output:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "thread names are not available") {
		t.Errorf("no note about thread names:\n%s", errOut)
	}
	s := req.Load()
	if s == nil || s.Request == nil {
		t.Fatal("no session request")
	}
	r := s.Request
	if len(r.Providers) != 1 || r.Providers[0].Name != eventpipe.ProviderSampleProfiler || r.Providers[0].Level != uint32(eventpipe.LevelInformational) || !r.RequestRundown {
		t.Errorf("session request = %+v", r)
	}

	code, out, errOut = run(t, "stack", "--diagnostic-port", port, "--json")
	if code != 0 {
		t.Fatalf("stack --json: exit %d\n%s", code, errOut)
	}
	var snap stacks.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if snap.ProcessID != 4242 || len(snap.Threads) != 2 || snap.Unresolved != 1 || !snap.Rundown {
		t.Fatalf("snapshot = %+v", snap)
	}
	th := snap.Threads[1]
	if th.ID != 0x202 || th.State != "managed" || len(th.Frames) != 3 || th.Frames[0].Resolved || th.Frames[0].Address != "0xdead0000" ||
		th.Frames[1].Method != "App.Worker.Spin" || th.Frames[1].Module != "App" || !th.Frames[1].Resolved || th.Frames[1].Signature != "void ()" {
		t.Errorf("thread 0x202 = %+v", th)
	}
	if snap.Threads[0].State != "external" {
		t.Errorf("thread 0x101 state %q, want external", snap.Threads[0].State)
	}
}

func TestStackFlagErrors(t *testing.T) {
	if code, _, errOut := run(t, "stack"); code != exitUsage || !strings.Contains(errOut, "no target process") {
		t.Errorf("no target: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "stack", "-p", "1", "--duration", "0s"); code != exitUsage || !strings.Contains(errOut, "--duration") {
		t.Errorf("zero duration: %d %s", code, errOut)
	}
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Fault: func(set, id uint8) ipctest.Fault {
		if set == 2 { // EventPipe command set
			return ipctest.FaultCloseEarly
		}
		return ipctest.FaultNone
	}})
	// A connection closed without an answer: the target went away.
	if code, _, errOut := run(t, "stack", "--diagnostic-port", port); code != exitTargetGone || !strings.Contains(errOut, "start the session") {
		t.Errorf("session closed unanswered: %d %s", code, errOut)
	}
}

// startHot starts the Hot target (testdata/targets/Hot.cs).
func startHot(t *testing.T) *dotnettest.Target {
	t.Helper()
	return startHotOn(t, dotnettest.Find(t))
}

// startHotOn starts the Hot target on rt.
func startHotOn(t *testing.T, rt *dotnettest.Runtime) *dotnettest.Target {
	t.Helper()
	return rt.Start(t, rt.Build(t, "Hot"), nil, nil)
}

// realStack runs clrdiag stack --json against a live process.
func realStack(t *testing.T, pid int) stacks.Snapshot {
	t.Helper()
	code, out, errOut := run(t, "stack", "-p", fmt.Sprint(pid), "--json")
	if code != 0 {
		t.Fatalf("stack: exit %d\n%s", code, errOut)
	}
	var snap stacks.Snapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return snap
}

func frameList(th stacks.Thread) []string {
	var out []string
	for _, f := range th.Frames {
		out = append(out, f.Method)
	}
	return out
}

// hotProblem says what in a snapshot of the Hot target is not yet the
// state TestRealStackHot checks ("" when all is): the worker in a Burner
// method under Burner.Loop, the main thread blocked in Console.ReadLine.
func hotProblem(snap stacks.Snapshot, pid int) string {
	var worker, main *stacks.Thread
	for i := range snap.Threads {
		th := &snap.Threads[i]
		if strings.Contains(strings.Join(frameList(*th), " "), "Hot.Burner.Loop") {
			worker = th
		}
		if th.ID == uint64(pid) { // the main thread's id is the process id on Linux
			main = th
		}
	}
	if worker == nil || main == nil {
		return fmt.Sprintf("no HotWorker (Burner.Loop) or main thread %d in %+v", pid, snap.Threads)
	}
	fr := frameList(*worker)
	if fr[0] != "Hot.Burner.MostlyHot" && fr[0] != "Hot.Burner.SometimesHot" && !strings.HasPrefix(fr[0], "System.Diagnostics.Stopwatch") {
		return fmt.Sprintf("HotWorker (0x%X) leaf is %q, want a Burner method: %v", worker.ID, fr[0], fr)
	}
	if !strings.Contains(strings.Join(fr, " "), "Hot.Burner.MostlyHot") && !strings.Contains(strings.Join(fr, " "), "Hot.Burner.SometimesHot") {
		return fmt.Sprintf("HotWorker stack has no hot method: %v", fr)
	}
	mfr := strings.Join(frameList(*main), " ")
	if !strings.Contains(mfr, "System.Console.ReadLine") || !strings.Contains(mfr, "Hot.Program.Main") || main.State != "external" {
		return fmt.Sprintf("main thread (0x%X, %s) is not blocked in Console.ReadLine: %v", main.ID, main.State, frameList(*main))
	}
	return ""
}

// TestRealStackHot waits for the state it checks: on a loaded machine the
// main thread may still be on its way from printing READY into
// Console.ReadLine, or the worker between two slices, when a snapshot is
// taken, so snapshots are taken until one shows it (or a minute passes).
func TestRealStackHot(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, testRealStackHot)
}

func testRealStackHot(t *testing.T, rt *dotnettest.Runtime) {
	tg := startHotOn(t, rt)
	var snap stacks.Snapshot
	var problem string
	for attempt, deadline := 1, time.Now().Add(time.Minute); ; attempt++ {
		snap = realStack(t, tg.PID)
		if problem = hotProblem(snap, tg.PID); problem == "" {
			if attempt > 1 {
				t.Logf("the state was reached at snapshot %d", attempt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d snapshots in a minute: %s", attempt, problem)
		}
		t.Logf("snapshot %d: %s; taking another", attempt, problem)
	}
	if snap.ProcessID != tg.PID {
		t.Errorf("process id %d, want %d", snap.ProcessID, tg.PID)
	}
	for _, th := range snap.Threads {
		for _, f := range th.Frames {
			if f.Resolved && f.Module == "" {
				t.Errorf("resolved frame without module: %+v", f)
			}
		}
	}
	if snap.Unresolved > 0 {
		t.Logf("%d unresolved frames", snap.Unresolved)
	}
	// The target is still alive and responsive afterwards.
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)

	// The text form names the threads by id.
	code, out, _ := run(t, "stack", "-p", fmt.Sprint(tg.PID))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Thread (0x%X):", tg.PID)) || !strings.Contains(out, "  Hot!Hot.Burner.Loop\n") {
		t.Errorf("stack text (exit %d):\n%s", code, out)
	}
}
