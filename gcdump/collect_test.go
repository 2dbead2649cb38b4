//go:build unix

package gcdump_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

func TestCollectFake(t *testing.T) {
	for _, tc := range []struct {
		rt        ipctest.Runtime
		buffering gcdump.Buffering
		mode      ipc.BufferMode
		warned    bool // a fallback warning
	}{
		{ipctest.NET3_1, gcdump.BufferingAuto, 0, false}, // Drop is all it has: no news
		{ipctest.NET3_1, gcdump.BufferingBlock, 0, true}, // asked for: warned
		{ipctest.NET3_1, gcdump.BufferingDrop, 0, false},
		{ipctest.NET11, gcdump.BufferingAuto, ipc.BufferBlock, false},
		{ipctest.NET11, gcdump.BufferingBlock, ipc.BufferBlock, false},
		{ipctest.NET11, gcdump.BufferingDrop, 0, false},
	} {
		t.Run(tc.rt.String()+"/"+tc.buffering.String(), func(t *testing.T) {
			srv, err := ipctest.NewServer(ipctest.Config{Runtime: tc.rt, Tracing: gcdumptest.Session(gcdumptest.Leaky(20), gcdumptest.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var notes []gcdump.Note
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			g, err := gcdump.Collect(ctx, diag.NewClient(srv, nil), gcdump.CollectConfig{Buffering: tc.buffering,
				ProcessName: "app", ProcessID: 42, Notify: func(n gcdump.Note) { notes = append(notes, n) }})
			if err != nil {
				t.Fatal(err)
			}
			r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Objects != 44 || g.Info.ProcessName != "app" || g.Info.ProcessID != 42 {
				t.Fatalf("%d objects, info %+v", r.Objects, g.Info)
			}
			for _, s := range r.Types {
				if s.Name == "App.Item" && s.Module != "/app/App.dll" {
					t.Errorf("module names from the rundown missing: %+v", s)
				}
			}
			// A flush session (SampleProfiler, no rundown), then the heap
			// session with the GCHeapSnapshot keywords.
			var sessions []*ipc.CollectTracingRequest
			for _, rq := range srv.Requests() {
				if ct, ok := rq.Request.(*ipc.CollectTracingRequest); ok {
					sessions = append(sessions, ct)
				}
			}
			last := sessions[len(sessions)-1]
			if sessions[0].Providers[0].Name != "Microsoft-DotNETCore-SampleProfiler" || sessions[0].RequestRundown {
				t.Errorf("flush session %+v", sessions[0])
			}
			p := last.Providers[0]
			if p.Name != "Microsoft-Windows-DotNETRuntime" || p.Keywords != 0x1980001 || p.Level != 5 || last.CircularBufferMB != 1024 || !last.RequestRundown && last.RundownKeyword == 0 {
				t.Errorf("heap session %+v %+v", last, p)
			}
			var warned bool
			for _, n := range notes {
				warned = warned || n.Warning()
			}
			if warned != tc.warned {
				t.Errorf("warned %v, want %v: %v", warned, tc.warned, notes)
			}
			if last.BufferMode != tc.mode {
				t.Errorf("buffer mode %v, want %v", last.BufferMode, tc.mode)
			}
			var walked bool
			for _, n := range notes {
				walked = walked || (n.Kind == gcdump.NoteWalked && n.Objects == 44 && n.References == 42)
			}
			if !walked {
				t.Errorf("notes %v", notes)
			}
		})
	}
}

func TestCollectTimeout(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1,
		Tracing: gcdumptest.Session(gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = gcdump.Collect(context.Background(), diag.NewClient(srv, nil), gcdump.CollectConfig{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, gcdump.ErrTimeout) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("%v", err)
	}
}

// The collection's end comes before the heap walk's events (server GC
// writes them from different threads): the snapshot is still whole.
func TestCollectEndFirst(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1,
		Tracing: gcdumptest.Session(gcdumptest.Leaky(50), gcdumptest.Options{EndFirst: true, NodesPerEvent: 7, EdgesPerEvent: 5})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g, err := gcdump.Collect(context.Background(), diag.NewClient(srv, nil), gcdump.CollectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil || r.Objects != 104 {
		t.Fatalf("%v %+v", err, r)
	}
}

// collectFake runs Collect against a fake 3.1 runtime serving h with opt.
func collectFake(t *testing.T, ctx context.Context, h gcdumptest.Heap, opt gcdumptest.Options, fault func(set, id uint8) ipctest.Fault, cfg gcdump.CollectConfig) (*gcdump.Graph, []gcdump.Note, *ipctest.Server, error) {
	t.Helper()
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(h, opt), Fault: fault})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var notes []gcdump.Note
	notify := cfg.Notify
	cfg.Notify = func(n gcdump.Note) {
		notes = append(notes, n)
		if notify != nil {
			notify(n)
		}
	}
	g, err := gcdump.Collect(ctx, diag.NewClient(srv, nil), cfg)
	return g, notes, srv, err
}

// opOf is the Op of Collect's error.
func opOf(t *testing.T, err error) string {
	t.Helper()
	var ce *gcdump.CollectError
	if !errors.As(err, &ce) {
		t.Fatalf("not a CollectError: %v", err)
	}
	return ce.Op
}

func kinds(notes []gcdump.Note) []gcdump.NoteKind {
	var k []gcdump.NoteKind
	for _, n := range notes {
		if n.Kind != gcdump.NoteProgress && n.Kind != gcdump.NoteFallback {
			k = append(k, n.Kind)
		}
	}
	return k
}

// The timeout during the walk names what was seen so far; the session is
// abandoned (and stopped) without waiting for a rundown.
func TestCollectTimeoutDuringWalk(t *testing.T) {
	_, notes, srv, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true}, nil,
		gcdump.CollectConfig{Timeout: time.Second, RundownTimeout: time.Hour})
	if !errors.Is(err, gcdump.ErrTimeout) || opOf(t, err) != "collect the heap snapshot" ||
		!strings.Contains(err.Error(), "after 1s: the heap walk was still running (10 objects, 8 references so far)") {
		t.Fatalf("%v", err)
	}
	if n := ipctest.CountRequests[*ipc.StopTracingRequest](srv); n != 2 { // the flush session's and the heap session's
		t.Errorf("%d StopTracing sent, want 2", n)
	}
	for _, n := range notes {
		if n.Kind == gcdump.NoteWalked || n.Kind == gcdump.NoteRundownTimeout {
			t.Errorf("note %v", n)
		}
	}
}

// A runtime that never starts the walk times out with a hint at its
// version.
func TestCollectTimeoutBeforeWalk(t *testing.T) {
	_, notes, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoWalk: true}, nil,
		gcdump.CollectConfig{Timeout: 500 * time.Millisecond})
	if !errors.Is(err, gcdump.ErrTimeout) || opOf(t, err) != "collect the heap snapshot" ||
		!strings.Contains(err.Error(), "the runtime did not start the heap walk (heap snapshots need .NET Core 3.0 or later)") {
		t.Fatalf("%v", err)
	}
	if k := kinds(notes); len(k) != 0 {
		t.Errorf("notes %v", notes)
	}
}

// Canceling during the walk abandons the session at once.
func TestCollectCanceledDuringWalk(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin := time.Now()
	_, notes, _, err := collectFake(t, ctx, gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true}, nil, gcdump.CollectConfig{
		Timeout: time.Hour, Notify: func(n gcdump.Note) {
			if n.Kind == gcdump.NoteProgress {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || opOf(t, err) != "collect the heap snapshot" {
		t.Fatalf("%v", err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	// Progress is reported while the walk runs.
	if k := kinds(notes); len(k) != 1 || k[0] != gcdump.NoteStarted || notes[len(notes)-1].Kind != gcdump.NoteProgress ||
		notes[len(notes)-1].Objects != 10 || notes[len(notes)-1].References != 8 {
		t.Errorf("notes %v", notes)
	}
}

// The stream ends (the process exited) in the middle of the walk: the
// error says so, with what had come; before the walk: that too.
func TestCollectEndedEarly(t *testing.T) {
	_, _, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true, Exit: true}, nil,
		gcdump.CollectConfig{Timeout: time.Hour})
	if !errors.Is(err, gcdump.ErrTargetExited) || opOf(t, err) != "collect the heap snapshot" ||
		!strings.Contains(err.Error(), "the target process exited during the heap walk (10 objects and 8 references had come)") {
		t.Fatalf("%v", err)
	}
	_, _, _, err = collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoWalk: true, Exit: true}, nil,
		gcdump.CollectConfig{Timeout: time.Hour})
	if !errors.Is(err, gcdump.ErrEndedEarly) || !strings.Contains(err.Error(), "exited before the heap walk began") {
		t.Fatalf("%v", err)
	}
}

// A stream that ends right after the walk (the process exited) still
// gives the whole graph; types keep no module.
func TestCollectWalkEndsWithStream(t *testing.T) {
	g, notes, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(20), gcdumptest.Options{Exit: true}, nil,
		gcdump.CollectConfig{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil || r.Objects != 44 {
		t.Fatalf("%v %+v", err, r)
	}
	if k := kinds(notes); len(k) != 2 || k[0] != gcdump.NoteStarted || k[1] != gcdump.NoteWalked {
		t.Errorf("notes %v", notes)
	}
}

// A damaged stream fails the collection at once, not at the timeout.
func TestCollectDamaged(t *testing.T) {
	_, _, srv, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true, Damaged: true}, nil,
		gcdump.CollectConfig{Timeout: 20 * time.Second})
	var fe *nettrace.FormatError
	if !errors.As(err, &fe) || opOf(t, err) != "read the heap session" {
		t.Fatalf("%v", err)
	}
	if n := ipctest.CountRequests[*ipc.StopTracingRequest](srv); n != 2 {
		t.Errorf("%d StopTracing sent, want 2", n)
	}
}

// A rundown that does not come in time costs the module names, not the
// snapshot.
func TestCollectRundownTimeout(t *testing.T) {
	g, notes, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(20), gcdumptest.Options{RundownHangs: true}, nil,
		gcdump.CollectConfig{Timeout: time.Hour, RundownTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	if err != nil || r.Objects != 44 {
		t.Fatalf("%v %+v", err, r)
	}
	for _, s := range r.Types {
		if s.Module != "" {
			t.Errorf("module without a rundown: %+v", s)
		}
	}
	k := kinds(notes)
	if len(k) != 3 || k[0] != gcdump.NoteStarted || k[1] != gcdump.NoteWalked || k[2] != gcdump.NoteRundownTimeout ||
		notes[len(notes)-1].Duration != 300*time.Millisecond {
		t.Errorf("notes %v", notes)
	}
}

// A StopTracing the runtime never answers fails the collection after the
// stop timeout.
func TestCollectStopUnanswered(t *testing.T) {
	never := func(set, id uint8) ipctest.Fault {
		if set == ipc.SetEventPipe && id == ipc.CmdStopTracing {
			return ipctest.FaultNeverAnswer
		}
		return ipctest.FaultNone
	}
	_, notes, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{}, never,
		gcdump.CollectConfig{Timeout: time.Hour, StopTimeout: 300 * time.Millisecond, NoFlush: true})
	if err == nil || opOf(t, err) != "stop the heap session" {
		t.Fatalf("%v", err)
	}
	if k := kinds(notes); len(k) != 2 || k[1] != gcdump.NoteWalked {
		t.Errorf("notes %v", notes)
	}
}

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A Config.Trace that fails fails the collection at once.
func TestCollectTraceWriteFails(t *testing.T) {
	_, _, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(3), gcdumptest.Options{NoGCEnd: true}, nil,
		gcdump.CollectConfig{Timeout: 20 * time.Second, Trace: failWriter{}})
	if !errors.Is(err, syscall.ENOSPC) || opOf(t, err) != "read the heap session" {
		t.Fatalf("%v", err)
	}
}

// Config.Trace gets the heap session's stream, rundown included: it reads
// back into the same graph.
func TestCollectTrace(t *testing.T) {
	var trace bytes.Buffer
	g, _, _, err := collectFake(t, context.Background(), gcdumptest.Leaky(20), gcdumptest.Options{}, nil, gcdump.CollectConfig{Trace: &trace})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := gcdump.FromTrace(bytes.NewReader(trace.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := gcdump.BuildReport(g, nil, gcdump.ReportConfig{})
	r2, err := gcdump.BuildReport(g2, nil, gcdump.ReportConfig{})
	if err != nil || r2.Objects != r.Objects || r2.TotalSize != r.TotalSize || len(r2.Types) != len(r.Types) {
		t.Fatalf("%v: %+v vs %+v", err, r2, r)
	}
	for _, s := range r2.Types {
		if s.Name == "App.Item" && s.Module != "/app/App.dll" {
			t.Errorf("rundown missing from the trace: %+v", s)
		}
	}
}
