//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Addresses of the fake process's methods.
const (
	fakeMain = 0x10000000 + 0x10
	fakeWait = 0x10001000 + 0x20
	fakeLeaf = 0x10002000 + 0x30
	fakeNone = 0xdead0000
)

// fakeStackSession plays a runtime for clrdiag stack: with samples, two
// threads each sampled twice before the stop (the first sample differs from
// the second), then a rundown after the stop, delayed by rundownDelay.
func fakeStackSession(t *testing.T, s *ipctest.TracingSession, samples bool, rundownDelay time.Duration) {
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{PointerSize: 8, ProcessID: 4242, ExpectedCPUSamplingRate: 1000000})
	if err != nil {
		t.Error(err)
		return
	}
	mds := map[[2]uint32]*nettrace.Metadata{}
	md := func(provider string, id, version uint32) *nettrace.Metadata {
		if m := mds[[2]uint32{id, version}]; m != nil && m.ProviderName == provider {
			return m
		}
		m := &nettrace.Metadata{ID: uint32(len(mds) + 1), ProviderName: provider, EventID: id, Version: version}
		if err := w.AddMetadata(m); err != nil {
			t.Error(err)
		}
		mds[[2]uint32{id, version}] = m
		return m
	}
	seq := map[uint64]uint32{}
	write := func(m *nettrace.Metadata, thread uint64, ts int64, stack uint32, payload []byte) {
		seq[thread]++
		ev := &nettrace.Event{Metadata: m, ThreadID: thread, CaptureThreadID: thread, SequenceNumber: seq[thread], Timestamp: ts, StackID: stack, Payload: payload}
		if err := w.WriteEvent(ev); err != nil {
			t.Error(err)
		}
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	if samples {
		if err := w.WriteStacks(1, [][]uint64{
			{fakeLeaf, fakeMain},           // 1: worker busy
			{fakeWait, fakeMain},           // 2: main blocked
			{fakeNone, fakeLeaf, fakeMain}, // 3: worker in unknown code
		}); err != nil {
			t.Error(err)
			return
		}
		sample := md(clrevents.ProviderSampleProfiler, 0, 0)
		write(sample, 0x101, 1000, 2, u32(1))
		write(sample, 0x202, 1000, 3, u32(2))
		write(sample, 0x101, 2000, 1, u32(2))
		write(sample, 0x202, 2000, 1, u32(2))
		if err := w.Flush(); err != nil {
			t.Error(err)
			return
		}
	}
	<-s.Stopped
	time.Sleep(rundownDelay)
	module := binary.LittleEndian.AppendUint64(nil, 7)
	module = binary.LittleEndian.AppendUint64(module, 0)
	module = binary.LittleEndian.AppendUint32(module, 0)
	module = binary.LittleEndian.AppendUint32(module, 0)
	module = appendUTF16(module, "/app/App.dll")
	module = appendUTF16(module, "")
	write(md(clrevents.ProviderRundown, 154, 1), 0x303, 9000, 0, append(module, 9, 0))
	for _, m := range []struct {
		start      uint64
		ns, method string
	}{{0x10000000, "App.Program", "Main"}, {0x10001000, "App.Program", "Wait"}, {0x10002000, "App.Worker", "Spin"}} {
		write(md(clrevents.ProviderRundown, 144, 2), 0x303, 9000, 0, fakeMethodPayload(m.start, 0x100, 7, m.ns, m.method))
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

func appendUTF16(b []byte, s string) []byte {
	for _, r := range s {
		b = binary.LittleEndian.AppendUint16(b, uint16(r))
	}
	return append(b, 0, 0)
}

// fakeMethodPayload is a MethodDCEndVerbose (version 2) payload.
func fakeMethodPayload(start uint64, size uint32, module uint64, ns, name string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, start) // MethodID
	b = binary.LittleEndian.AppendUint64(b, module)
	b = binary.LittleEndian.AppendUint64(b, start)
	b = binary.LittleEndian.AppendUint32(b, size)
	b = binary.LittleEndian.AppendUint32(b, 0x06000001)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = appendUTF16(b, ns)
	b = appendUTF16(b, name)
	b = appendUTF16(b, "void ()")
	b = binary.LittleEndian.AppendUint16(b, 9)
	return binary.LittleEndian.AppendUint64(b, 0) // ReJITID
}

func TestFakeStack(t *testing.T) {
	var req atomic.Pointer[ipctest.TracingSession]
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		req.Store(s)
		fakeStackSession(t, s, true, 0)
		return nil
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
	var snap stackSnapshot
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

// TestFakeStackRetriesAndSlowRundown: a session without samples is retried
// for longer, and a slow rundown gets the note about large applications.
func TestFakeStackRetriesAndSlowRundown(t *testing.T) {
	var sessions atomic.Int32
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		n := sessions.Add(1)
		fakeStackSession(t, s, n == 2, 300*time.Millisecond) // only the second session has samples
		return nil
	}})
	var errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	tf := e.targetFlags()
	tf.port = port
	tg, err := tf.resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	s := &stackRun{e: e, t: tg, duration: time.Millisecond, slowNote: 100 * time.Millisecond, attempts: 3,
		stopTimeout: 10 * time.Second, rundownTimeout: 10 * time.Second}
	p, err := s.capture(context.Background())
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, errb.String())
	}
	if sessions.Load() != 2 || len(p.Threads) != 2 {
		t.Errorf("%d sessions, %d threads; want 2 and 2", sessions.Load(), len(p.Threads))
	}
	msg := errb.String()
	if !strings.Contains(msg, "sampling again for 10ms") || !strings.Contains(msg, "large application") {
		t.Errorf("stderr:\n%s", msg)
	}

	// With a single attempt, no samples is a clear error.
	errb.Reset()
	s.attempts = 1
	if _, err := s.capture(context.Background()); err == nil {
		t.Error("capture without samples succeeded")
	} else if !strings.Contains(err.Error(), "no thread samples") {
		t.Errorf("error = %v", err)
	}
}

func TestStackFlagErrors(t *testing.T) {
	if code, _, errOut := run(t, "stack"); code != 3 || !strings.Contains(errOut, "no target process") {
		t.Errorf("no target: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "stack", "-p", "1", "--duration", "0s"); code != 3 || !strings.Contains(errOut, "--duration") {
		t.Errorf("zero duration: %d %s", code, errOut)
	}
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET3_1, Fault: func(set, id uint8) ipctest.Fault {
		if set == 2 { // EventPipe command set
			return ipctest.FaultCloseEarly
		}
		return ipctest.FaultNone
	}})
	if code, _, errOut := run(t, "stack", "--diagnostic-port", port); code != 1 || !strings.Contains(errOut, "start the session") {
		t.Errorf("refused session: %d %s", code, errOut)
	}
}

// startHot starts the Hot target (testdata/targets/Hot.cs).
func startHot(t *testing.T) *dotnettest.Target {
	t.Helper()
	rt := dotnettest.Find(t)
	return rt.Start(t, rt.Build(t, "Hot"), nil, nil)
}

// realStack runs clrdiag stack --json against a live process.
func realStack(t *testing.T, pid int) stackSnapshot {
	t.Helper()
	code, out, errOut := run(t, "stack", "-p", fmt.Sprint(pid), "--json")
	if code != 0 {
		t.Fatalf("stack: exit %d\n%s", code, errOut)
	}
	var snap stackSnapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return snap
}

func frameList(th threadStack) []string {
	var out []string
	for _, f := range th.Frames {
		out = append(out, f.Method)
	}
	return out
}

func TestRealStackHot(t *testing.T) {
	tg := startHot(t)
	snap := realStack(t, tg.PID)
	if snap.ProcessID != tg.PID {
		t.Errorf("process id %d, want %d", snap.ProcessID, tg.PID)
	}
	var worker, main *threadStack
	for i := range snap.Threads {
		th := &snap.Threads[i]
		fr := frameList(*th)
		if len(fr) > 0 && strings.Contains(strings.Join(fr, " "), "Hot.Burner.Loop") {
			worker = th
		}
		if th.ID == uint64(tg.PID) { // the main thread's id is the process id on Linux
			main = th
		}
	}
	if worker == nil || main == nil {
		t.Fatalf("no HotWorker (Burner.Loop) or main thread %d in %+v", tg.PID, snap.Threads)
	}
	fr := frameList(*worker)
	if fr[0] != "Hot.Burner.MostlyHot" && fr[0] != "Hot.Burner.SometimesHot" && !strings.HasPrefix(fr[0], "System.Diagnostics.Stopwatch") {
		t.Errorf("HotWorker (0x%X) leaf is %q, want a Burner method: %v", worker.ID, fr[0], fr)
	}
	if !strings.Contains(strings.Join(fr, " "), "Hot.Burner.MostlyHot") && !strings.Contains(strings.Join(fr, " "), "Hot.Burner.SometimesHot") {
		t.Errorf("HotWorker stack has no hot method: %v", fr)
	}
	mfr := strings.Join(frameList(*main), " ")
	if !strings.Contains(mfr, "System.Console.ReadLine") || !strings.Contains(mfr, "Hot.Program.Main") || main.State != "external" {
		t.Errorf("main thread (0x%X, %s) is not blocked in Console.ReadLine: %v", main.ID, main.State, frameList(*main))
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
