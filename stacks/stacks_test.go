//go:build unix

package stacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// fakeClient serves tracing sessions with tracing and returns a client.
func fakeClient(t *testing.T, tracing func(ctx context.Context, s *ipctest.TracingSession) error) *diag.Client {
	t.Helper()
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: tracing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return diag.NewClient(srv, nil)
}

// notes collects the notes of a capture.
type notes struct {
	mu sync.Mutex
	n  []stacks.Note
}

func (ns *notes) add(n stacks.Note) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.n = append(ns.n, n)
}

func (ns *notes) kinds() []stacks.NoteKind {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []stacks.NoteKind
	for _, n := range ns.n {
		out = append(out, n.Kind)
	}
	return out
}

func TestCapture(t *testing.T) {
	var req atomic.Pointer[ipctest.TracingSession]
	c := fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		req.Store(s)
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	})
	var started atomic.Int32
	snap, err := stacks.Capture(context.Background(), c, stacks.Config{
		Started: func(context.Context) error { started.Add(1); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if started.Load() != 1 {
		t.Errorf("Started called %d times, want 1", started.Load())
	}
	r := req.Load().Request
	if len(r.Providers) != 1 || r.Providers[0].Name != eventpipe.ProviderSampleProfiler ||
		r.Providers[0].Level != uint32(eventpipe.LevelInformational) || !r.RequestRundown {
		t.Errorf("session request = %+v", r)
	}
	if snap.ProcessID != stackstest.DefaultProcessID || len(snap.Threads) != 2 || snap.Unresolved != 1 || !snap.Rundown {
		t.Fatalf("snapshot = %+v", snap)
	}
	if !strings.Contains(snap.NamesNote, "process id is unknown") && !strings.Contains(snap.NamesNote, "no /proc") {
		t.Errorf("names note %q", snap.NamesNote)
	}
	th := snap.Threads[1]
	if th.ID != 0x202 || th.State != stacks.StateManaged || len(th.Frames) != 3 || th.Frames[0].Resolved || th.Frames[0].Address != "0xdead0000" ||
		th.Frames[1].Method != "App.Worker.Spin" || th.Frames[1].Module != "App" || !th.Frames[1].Resolved || th.Frames[1].Signature != "void ()" {
		t.Errorf("thread 0x202 = %+v", th)
	}
	if snap.Threads[0].State != stacks.StateExternal {
		t.Errorf("thread 0x101 state %q, want external", snap.Threads[0].State)
	}

	var b bytes.Buffer
	if err := snap.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "Thread (0x101):\n  App!App.Program.Wait\n  App!App.Program.Main\n\n" +
		"Thread (0x202):\n  0xdead0000 (unresolved)\n  App!App.Worker.Spin\n  App!App.Program.Main\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}

	// The JSON keeps the names clrdiag stack --json has always used.
	j, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"process_id":4242`, `"thread_names_note":`, `"unresolved_frames":1`, `"rundown":true`, `"state":"managed"`, `"address":"0xdead0000"`} {
		if !bytes.Contains(j, []byte(k)) {
			t.Errorf("JSON has no %s: %s", k, j)
		}
	}
}

func TestWriteTextNamesAndLostRundown(t *testing.T) {
	snap := &stacks.Snapshot{Threads: []stacks.Thread{
		{ID: 0x1F, Name: ".NET Timer", Frames: []stacks.Frame{{Method: "Sys.Tick", Resolved: true}}},
		{ID: 0x20},
		{ID: 0x21, Frames: []stacks.Frame{{Method: "0x1234"}}},
	}, Unresolved: 1}
	var b bytes.Buffer
	if err := snap.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "Thread (0x1F) .NET Timer:\n  Sys.Tick\n\nThread (0x20):\n  (no managed frames)\n\nThread (0x21):\n  0x1234 (unresolved)\n" +
		"\nSome frames stayed addresses: the rundown (method names) did not arrive.\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A session without samples is retried for longer, and a slow rundown gets
// the note about large applications.
func TestCaptureRetriesAndSlowRundown(t *testing.T) {
	var sessions atomic.Int32
	c := fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		n := sessions.Add(1)
		// Only the second session has samples.
		return stackstest.WriteSession(ctx, s, stackstest.Config{NoSamples: n != 2, RundownDelay: time.Second})
	})
	var ns notes
	cfg := stacks.Config{Duration: time.Millisecond, SlowRundown: 100 * time.Millisecond, StopTimeout: 10 * time.Second,
		RundownTimeout: 10 * time.Second, Notify: ns.add}
	snap, err := stacks.Capture(context.Background(), c, cfg)
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	if sessions.Load() != 2 || len(snap.Threads) != 2 {
		t.Errorf("%d sessions, %d threads; want 2 and 2", sessions.Load(), len(snap.Threads))
	}
	var msgs []string
	for _, n := range ns.n {
		msgs = append(msgs, n.String())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "sampling again for 10ms") || !strings.Contains(all, "large application") {
		t.Errorf("notes:\n%s", all)
	}
	want := []stacks.NoteKind{stacks.NoteSlowRundown, stacks.NoteRetry, stacks.NoteSlowRundown}
	if k := ns.kinds(); fmt.Sprint(k) != fmt.Sprint(want) {
		t.Errorf("note kinds %v, want %v", k, want)
	}

	// With a single attempt, no samples is a clear error.
	sessions.Store(0)
	cfg.Attempts = 1
	if _, err := stacks.Capture(context.Background(), c, cfg); !errors.Is(err, stacks.ErrNoSamples) {
		t.Errorf("capture without samples: %v, want ErrNoSamples", err)
	} else if !strings.Contains(err.Error(), "in 1ms") {
		t.Errorf("error %q does not say how long it sampled", err)
	}
}

// A rundown that never ends is abandoned after RundownTimeout; the samples
// stay, as addresses.
func TestCaptureRundownTimeout(t *testing.T) {
	c := fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{RundownDelay: time.Minute})
	})
	var ns notes
	snap, err := stacks.Capture(context.Background(), c, stacks.Config{RundownTimeout: 200 * time.Millisecond, Notify: ns.add})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Rundown || snap.Unresolved != 5 || len(snap.Threads) != 2 {
		t.Errorf("snapshot = %+v, want 5 unresolved frames and no rundown", snap)
	}
	k := ns.kinds()
	if len(k) == 0 || k[0] != stacks.NoteRundownTimeout {
		t.Errorf("note kinds %v, want the rundown timeout", k)
	}
}

func TestCaptureErrors(t *testing.T) {
	// The target ends the session before the stop.
	c := fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error { return nil })
	_, err := stacks.Capture(context.Background(), c, stacks.Config{Duration: 10 * time.Second})
	if !errors.Is(err, stacks.ErrEndedEarly) {
		t.Errorf("ended early: %v", err)
	}

	// Cancellation while sampling.
	c = fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = stacks.Capture(ctx, c, stacks.Config{Duration: time.Minute})
	var se *stacks.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &se) || se.Local {
		t.Errorf("cancelled: %v", err)
	}

	// A runtime that refuses the session.
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Fault: func(set, id uint8) ipctest.Fault {
		if set == 2 { // EventPipe
			return ipctest.FaultCloseEarly
		}
		return ipctest.FaultNone
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = stacks.Capture(context.Background(), diag.NewClient(srv, nil), stacks.Config{})
	if !errors.As(err, &se) || se.Op != "start the session" {
		t.Errorf("refused session: %v", err)
	}

	// A temporary directory that does not exist is a local error.
	_, err = stacks.Capture(context.Background(), c, stacks.Config{TempDir: t.TempDir() + "/missing"})
	if !errors.As(err, &se) || !se.Local {
		t.Errorf("missing temp dir: %v", err)
	}

	for _, cfg := range []stacks.Config{{Duration: -1}, {Attempts: -1}, {StopTimeout: -time.Second}, {RundownTimeout: -1}} {
		if _, err := stacks.Capture(context.Background(), c, cfg); !errors.Is(err, stacks.ErrBadConfig) {
			t.Errorf("%+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}

// A thread name (any process can set its own with prctl) and method and
// module names from the target reach the text escaped.
func TestWriteTextEscapesTargetText(t *testing.T) {
	const evil = "\x1b[2J\u009b1m\u202e"
	snap := &stacks.Snapshot{Threads: []stacks.Thread{
		{ID: 1, Name: "T" + evil, Frames: []stacks.Frame{{Method: "M" + evil, Module: "Mod" + evil, Resolved: true}, {Method: "U" + evil}}},
	}, Rundown: true}
	var b bytes.Buffer
	if err := snap.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	const esc = `\x1b[2J\u009b1m\u202e`
	want := "Thread (0x1) T" + esc + ":\n  Mod" + esc + "!M" + esc + "\n  U" + esc + " (unresolved)\n"
	if b.String() != want {
		t.Errorf("text:\n%q\nwant:\n%q", b.String(), want)
	}
}

// A runtime that answers with an endless stream that is not nettrace is
// refused from its first bytes; one that pushes valid blocks without end
// is cut at MaxBytes. Neither spools more than the cap nor runs long.
func TestCaptureHostileStreams(t *testing.T) {
	c := fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		junk := bytes.Repeat([]byte("junk "), 1<<16)
		for ctx.Err() == nil {
			if _, err := s.Stream.Write(junk); err != nil {
				return nil
			}
		}
		return nil
	})
	begin := time.Now()
	_, err := stacks.Capture(context.Background(), c, stacks.Config{Duration: time.Hour})
	var se *stacks.Error
	if !errors.Is(err, eventpipe.ErrNotNettrace) || !errors.As(err, &se) || se.Local {
		t.Errorf("junk stream: %v", err)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("junk stream: took %v", d)
	}

	md := &nettrace.Metadata{ID: 1, ProviderName: "Fake", EventID: 1, EventName: "E", Level: 4}
	c = fakeClient(t, func(ctx context.Context, s *ipctest.TracingSession) error {
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil || w.AddMetadata(md) != nil {
			return nil
		}
		payload := make([]byte, 300)
		for i := 0; ctx.Err() == nil; i++ {
			ev := nettrace.Event{Metadata: md, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: uint32(i + 1), Timestamp: int64(i), Payload: payload}
			if w.WriteEvent(&ev) != nil || (i%300 == 0 && w.Flush() != nil) {
				return nil
			}
		}
		return nil
	})
	var ns notes
	begin = time.Now()
	_, err = stacks.Capture(context.Background(), c, stacks.Config{Attempts: 1, MaxBytes: 1 << 20, Notify: ns.add})
	if !errors.Is(err, stacks.ErrNoSamples) {
		t.Errorf("endless stream: %v", err)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("endless stream: took %v", d)
	}
	if k := ns.kinds(); len(k) == 0 || k[0] != stacks.NoteMaxBytes {
		t.Errorf("notes %v, want NoteMaxBytes first", k)
	}
}
