//go:build unix

package eventpipe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

var helloMeta = &nettrace.Metadata{
	ID: 1, ProviderName: "Fake-Source", EventID: 1, EventName: "Hello", Level: 4,
	Fields: []nettrace.Field{{Name: "index", Type: nettrace.TypeInt32}},
}

// events writes n Hello events (numbered from i) and flushes them as one
// block.
func events(w *nettrace.Writer, i, n int) error {
	for k := i; k < i+n; k++ {
		p, err := nettrace.AppendPayload(nil, helloMeta.Fields, nettrace.Object{{Name: "index", Value: int32(k)}})
		if err != nil {
			return err
		}
		ev := nettrace.Event{Metadata: helloMeta, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: uint32(k + 1), Timestamp: int64(1000 + k), Payload: p}
		if err := w.WriteEvent(&ev); err != nil {
			return err
		}
	}
	return w.Flush()
}

// runtimeStyle is how the fake runtime behaves once its session starts.
type runtimeStyle struct {
	before, after int  // events before the stop, and after it (the rundown)
	endless       bool // keep writing blocks until the connection breaks, stopped or not
	fast          bool // with endless: zeros after the first events, as fast as the socket takes them
	rundownHangs  bool // after the stop, hold the stream open without writing
	junk          bool // write an endless stream that is not nettrace
	stopNever     bool // never answer StopTracing
	// rundownAfter, when set, holds the rundown back until it is closed.
	rundownAfter <-chan struct{}
}

func fakeSession(t *testing.T, st runtimeStyle) (*ipctest.Server, *diag.Client) {
	t.Helper()
	cfg := ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		if st.junk {
			junk := bytes.Repeat([]byte("HTTP/1.1 200 OK junk "), 1<<14)
			for {
				if _, err := s.Stream.Write(junk); err != nil {
					return nil
				}
			}
		}
		w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		if err != nil {
			return err
		}
		if err := w.AddMetadata(helloMeta); err != nil {
			return err
		}
		if err := events(w, 0, st.before); err != nil {
			return nil
		}
		if st.endless && st.fast {
			// Bytes, not blocks: only their count matters to the test.
			chunk := make([]byte, 1<<20)
			for {
				if _, err := s.Stream.Write(chunk); err != nil {
					return nil
				}
			}
		}
		if st.endless {
			for i := st.before; ; i += 100 {
				if err := events(w, i, 100); err != nil {
					return nil // the client closed the connection
				}
			}
		}
		select {
		case <-s.Stopped:
		case <-ctx.Done():
			return nil
		}
		if st.rundownHangs {
			<-ctx.Done()
			return nil
		}
		if st.rundownAfter != nil {
			select {
			case <-st.rundownAfter:
			case <-ctx.Done():
				return nil
			}
		}
		if err := events(w, st.before, st.after); err != nil {
			return nil
		}
		return w.Close()
	}}
	if st.stopNever {
		cfg.Fault = func(set, id uint8) ipctest.Fault {
			if set == ipc.SetEventPipe && id == ipc.CmdStopTracing {
				return ipctest.FaultNeverAnswer
			}
			return ipctest.FaultNone
		}
	}
	srv, err := ipctest.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, diag.NewClient(srv, nil)
}

func start(t *testing.T, c *diag.Client) *eventpipe.Session {
	t.Helper()
	s, err := eventpipe.Start(context.Background(), c, eventpipe.Config{Providers: []eventpipe.Provider{{Name: "Fake-Source"}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hellos decodes b and counts its events; it fails unless b is a complete
// trace (or, with cut, a trace whose decoding stops with a truncation).
func hellos(t *testing.T, b []byte, cut bool) int {
	t.Helper()
	rd, err := nettrace.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var ev nettrace.Event
	for {
		err := rd.ReadEvent(&ev)
		if err == io.EOF {
			if cut {
				t.Errorf("the stream is complete, want it cut")
			}
			return n
		}
		var fe *nettrace.FormatError
		if cut && errors.As(err, &fe) && fe.Truncated() {
			return n
		}
		if err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
		n++
	}
}

func TestDrainDurationThenRundown(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 5, after: 3})
	s := start(t, c)
	var buf bytes.Buffer
	var mu sync.Mutex
	var phases []eventpipe.DrainPhase
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Duration: 100 * time.Millisecond, Progress: func(p eventpipe.DrainProgress) {
		mu.Lock()
		defer mu.Unlock()
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != eventpipe.StopDuration || res.Rundown != eventpipe.RundownComplete || res.StopErr != nil || res.StreamErr != nil || res.Deadline {
		t.Fatalf("result %+v", res)
	}
	if res.Bytes != int64(buf.Len()) {
		t.Errorf("Bytes %d, %d written", res.Bytes, buf.Len())
	}
	if n := hellos(t, buf.Bytes(), false); n != 8 {
		t.Errorf("%d events, want 8", n)
	}
	if n := ipctest.CountRequests[*ipc.StopTracingRequest](srv); n != 1 {
		t.Errorf("%d StopTracing sent", n)
	}
	mu.Lock()
	defer mu.Unlock()
	// The rundown phase may not be seen: the fake ends the stream as soon
	// as it sees the stop, which can be before the reply arrives.
	if len(phases) < 2 || phases[0] != eventpipe.PhaseCollecting || phases[1] != eventpipe.PhaseStopping {
		t.Errorf("phases %v", phases)
	}
}

func TestDrainStopReasonFromCaller(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 2, after: 1})
	s := start(t, c)
	stop := make(chan eventpipe.StopReason, 1)
	stop <- eventpipe.StopEvent
	var buf bytes.Buffer
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Stop: stop})
	if err != nil || res.Reason != eventpipe.StopEvent || res.Rundown != eventpipe.RundownComplete {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Reason.String() != "stopping event seen" {
		t.Errorf("String %q", res.Reason)
	}
}

// A stream that ends by itself (the target exited) is StopEnded, with no
// StopTracing sent.
func TestDrainStreamEndsFirst(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 4})
	s := start(t, c)
	srv.Close() // the "process" goes away: every connection ends
	var buf bytes.Buffer
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{})
	if err != nil || res.Reason != eventpipe.StopEnded || res.Rundown != eventpipe.RundownMissing {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestDrainStopNeverAnswered(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 4, stopNever: true})
	s := start(t, c)
	var buf bytes.Buffer
	begin := time.Now()
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Duration: 50 * time.Millisecond, StopTimeout: 300 * time.Millisecond})
	if err != nil || res.Rundown != eventpipe.RundownUnacknowledged || res.StopErr == nil {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if n := hellos(t, buf.Bytes(), true); n != 4 {
		t.Errorf("%d events kept, want 4", n)
	}
}

func TestDrainRundownTimeout(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 6, rundownHangs: true})
	s := start(t, c)
	var buf bytes.Buffer
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Duration: 50 * time.Millisecond, RundownTimeout: 300 * time.Millisecond})
	if err != nil || res.Rundown != eventpipe.RundownTimedOut || res.Deadline {
		t.Fatalf("%+v %v", res, err)
	}
	if n := hellos(t, buf.Bytes(), true); n != 6 {
		t.Errorf("%d events kept, want 6", n)
	}
}

// Ending the context while StopTracing is pending abandons the session at
// once (this is the second Ctrl-C of trace collect).
func TestDrainAbandonWhileStopPending(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 3, stopNever: true})
	s := start(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan eventpipe.StopReason, 1)
	stop <- eventpipe.StopInterrupt
	var canceledAt time.Time
	progress := func(p eventpipe.DrainProgress) {
		if p.Phase == eventpipe.PhaseStopping && canceledAt.IsZero() {
			canceledAt = time.Now()
			cancel()
		}
	}
	var buf bytes.Buffer
	res, err := s.Drain(ctx, &buf, eventpipe.DrainConfig{Stop: stop, StopTimeout: time.Minute, Progress: progress})
	if err != nil || res.Reason != eventpipe.StopInterrupt || res.Rundown != eventpipe.RundownAbandoned {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(canceledAt); d > 5*time.Second {
		t.Errorf("the abandon took %v (the stop timeout is a minute)", d)
	}
}

// A stream that is not nettrace is refused from its first bytes, and the
// session is stopped.
func TestDrainNotNettrace(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{junk: true})
	s := start(t, c)
	var buf bytes.Buffer
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Duration: time.Hour})
	if !errors.Is(err, eventpipe.ErrNotNettrace) || res.Reason != eventpipe.StopNotNettrace {
		t.Fatalf("%+v %v", res, err)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes written", buf.Len())
	}
	if ipctest.CountRequests[*ipc.StopTracingRequest](srv) != 1 {
		t.Errorf("the session was not stopped")
	}
}

// MaxBytes bounds what an endless stream writes; the session is stopped.
func TestDrainMaxBytes(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 10, endless: true})
	s := start(t, c)
	var buf bytes.Buffer
	const max = 3<<20 + 5
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{MaxBytes: max})
	if !errors.Is(err, eventpipe.ErrMaxBytes) || res.Reason != eventpipe.StopMaxSize || res.Rundown != eventpipe.RundownNotWritten {
		t.Fatalf("%+v %v", res, err)
	}
	if buf.Len() != max || res.Bytes != max {
		t.Errorf("%d bytes written (%d), want %d", buf.Len(), res.Bytes, max)
	}
	if ipctest.CountRequests[*ipc.StopTracingRequest](srv) != 1 {
		t.Errorf("the session was not stopped")
	}
	if n := hellos(t, buf.Bytes(), true); n < 10 {
		t.Errorf("%d events before the cap", n)
	}
}

// failAfter accepts n bytes, then fails every write with ENOSPC, as a
// full disk does.
type failAfter struct {
	n   int
	got bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		k := f.n - f.got.Len()
		f.got.Write(p[:k])
		return k, &os.PathError{Op: "write", Path: "x.nettrace", Err: syscall.ENOSPC}
	}
	return f.got.Write(p)
}

func TestDrainWriteError(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 10, endless: true})
	s := start(t, c)
	w := &failAfter{n: 1 << 20}
	res, err := s.Drain(context.Background(), w, eventpipe.DrainConfig{})
	var oe *eventpipe.OutputError
	if !errors.As(err, &oe) || !errors.Is(err, syscall.ENOSPC) || res.Reason != eventpipe.StopWriteError || oe.Written != 1<<20 {
		t.Fatalf("%+v %v", res, err)
	}
	if ipctest.CountRequests[*ipc.StopTracingRequest](srv) != 1 {
		t.Errorf("the session was not stopped")
	}
}

// /dev/full fails every write with ENOSPC.
func TestDrainDevFull(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/full is Linux's")
	}
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	_, c := fakeSession(t, runtimeStyle{before: 10, endless: true})
	s := start(t, c)
	_, err = s.Drain(context.Background(), f, eventpipe.DrainConfig{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%v", err)
	}
}

// MaxTime cuts a runtime that keeps pushing after the stop.
func TestDrainHardDeadline(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 1, endless: true})
	s := start(t, c)
	begin := time.Now()
	res, err := s.Drain(context.Background(), io.Discard, eventpipe.DrainConfig{Duration: 50 * time.Millisecond, StopTimeout: 200 * time.Millisecond, RundownTimeout: time.Hour, MaxTime: 500 * time.Millisecond})
	if err != nil || !res.Deadline || res.Rundown != eventpipe.RundownTimedOut || res.Reason != eventpipe.StopDuration {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if res.Bytes == 0 {
		t.Errorf("nothing copied")
	}
}

// CollectTimeout abandons a collection that did not end in time: the
// stream is kept, the session is closed and stopped, no rundown is awaited.
func TestDrainCollectTimeout(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 3, after: 2})
	s := start(t, c)
	var buf bytes.Buffer
	begin := time.Now()
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{CollectTimeout: 200 * time.Millisecond, RundownTimeout: time.Hour})
	if err != nil || res.Reason != eventpipe.StopDeadline || !res.Deadline || res.Rundown != eventpipe.RundownTimedOut {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d < 200*time.Millisecond || d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if n := hellos(t, buf.Bytes(), true); n != 3 {
		t.Errorf("%d events kept, want 3 (and no rundown)", n)
	}
	if n := ipctest.CountRequests[*ipc.StopTracingRequest](srv); n != 1 {
		t.Errorf("%d StopTracing sent", n)
	}
}

// CollectTimeout bounds the collection only: a rundown that outlasts it
// once the caller stopped the session is read to its end.
func TestDrainCollectTimeoutNotAfterStop(t *testing.T) {
	const limit = time.Second
	release := make(chan struct{})
	_, c := fakeSession(t, runtimeStyle{before: 4, after: 3, rundownAfter: release})
	s := start(t, c)
	stop := make(chan eventpipe.StopReason, 1)
	stop <- eventpipe.StopEvent
	begin := time.Now()
	var once sync.Once
	progress := func(p eventpipe.DrainProgress) {
		if p.Phase == eventpipe.PhaseRundown {
			// Let the rundown come only once the limit is well past.
			once.Do(func() { time.AfterFunc(time.Until(begin.Add(limit+500*time.Millisecond)), func() { close(release) }) })
		}
	}
	var buf bytes.Buffer
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{Stop: stop, CollectTimeout: limit, Progress: progress})
	if err != nil || res.Reason != eventpipe.StopEvent || res.Deadline || res.Rundown != eventpipe.RundownComplete {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d < limit {
		t.Errorf("the rundown came after %v, before the limit", d)
	}
	if n := hellos(t, buf.Bytes(), false); n != 7 {
		t.Errorf("%d events, want 7", n)
	}
}

func TestStopReasonStrings(t *testing.T) {
	for r := eventpipe.StopNone; r <= eventpipe.StopNotNettrace; r++ {
		if s := r.String(); s == "" || s[0] == 'S' {
			t.Errorf("%d: %q", r, s)
		}
	}
	if s := eventpipe.StopReason(200).String(); s != "StopReason(200)" {
		t.Errorf("%q", s)
	}
	for r := eventpipe.RundownComplete; r <= eventpipe.RundownNotWritten; r++ {
		if s := r.String(); s == "" || s[0] == 'R' {
			t.Errorf("%d: %q", r, s)
		}
	}
}

// countingWriter counts what it is given and keeps the first keep bytes.
type countingWriter struct {
	n    int64
	keep int
	head bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if room := w.keep - w.head.Len(); room > 0 {
		w.head.Write(p[:min(room, len(p))])
	}
	w.n += int64(len(p))
	return len(p), nil
}

// A runtime that keeps streaming after the stop is cut at the rundown's
// size cap, not at RundownTimeout: the session is closed, what arrived up
// to the cap is written, and the result says which bound ended it.
func TestDrainRundownSizeCap(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 10, endless: true})
	s := start(t, c)
	var buf bytes.Buffer
	const cap = 2 << 20
	begin := time.Now()
	atStop := atStopBytes()
	res, err := s.Drain(context.Background(), &buf, eventpipe.DrainConfig{
		Duration: 100 * time.Millisecond, RundownTimeout: time.Hour, MaxRundownBytes: cap, Progress: atStop.progress})
	if err != nil || res.Rundown != eventpipe.RundownTooLarge || res.Deadline {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d > time.Minute {
		t.Errorf("took %v", d)
	}
	if res.Rundown.String() != "cut at its size cap" {
		t.Errorf("state %q", res.Rundown)
	}
	if int64(buf.Len()) != res.Bytes {
		t.Errorf("%d bytes written, the result says %d", buf.Len(), res.Bytes)
	}
	atStop.check(t, res.Bytes, cap)
	if n := hellos(t, buf.Bytes(), true); n < 10 {
		t.Errorf("%d events kept", n)
	}
}

// stopBytes records how much was written when the stop began.
type stopBytes struct{ n int64 }

func atStopBytes() *stopBytes { return &stopBytes{n: -1} }

func (s *stopBytes) progress(p eventpipe.DrainProgress) {
	if p.Phase != eventpipe.PhaseCollecting && s.n < 0 {
		s.n = p.Bytes
	}
}

// check: after the stop, the cap was written, give or take the chunk that
// was being copied as the stop began (the copy reads 1 MiB at a time).
func (s *stopBytes) check(t *testing.T, total, cap int64) {
	t.Helper()
	if s.n < 0 {
		t.Fatal("no stop seen")
	}
	after := total - s.n
	if after < cap-1<<20 || after > cap+1<<20 {
		t.Errorf("%d bytes written after the stop (%d before), want the cap %d", after, s.n, cap)
	}
}

// The default cap applies without configuration: an endless rundown stops
// at DefaultMaxRundownBytes (256 MB) long before the 5-minute
// RundownTimeout.
func TestDrainRundownDefaultSizeCap(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MB")
	}
	_, c := fakeSession(t, runtimeStyle{before: 10, endless: true, fast: true})
	s := start(t, c)
	w := &countingWriter{keep: 1 << 10}
	atStop := atStopBytes()
	res, err := s.Drain(context.Background(), w, eventpipe.DrainConfig{Duration: 10 * time.Millisecond, Progress: atStop.progress})
	if err != nil || res.Rundown != eventpipe.RundownTooLarge {
		t.Fatalf("%+v %v", res, err)
	}
	atStop.check(t, w.n, eventpipe.DefaultMaxRundownBytes)
}

// StopDamaged abandons the session: nothing after damage can be read, so
// an endless stream is not read on (it was, up to the rundown's cap).
func TestDrainStopDamagedAbandons(t *testing.T) {
	srv, c := fakeSession(t, runtimeStyle{before: 10, endless: true, fast: true})
	s := start(t, c)
	stop := make(chan eventpipe.StopReason, 1)
	w := &countingWriter{}
	go func() {
		time.Sleep(50 * time.Millisecond)
		stop <- eventpipe.StopDamaged
	}()
	begin := time.Now()
	res, err := s.Drain(context.Background(), w, eventpipe.DrainConfig{Stop: stop})
	if err != nil || res.Reason != eventpipe.StopDamaged || res.Rundown != eventpipe.RundownNotWritten {
		t.Fatalf("%+v %v", res, err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if ipctest.CountRequests[*ipc.StopTracingRequest](srv) != 1 {
		t.Errorf("the session was not stopped on the runtime")
	}
	t.Logf("%d bytes read", w.n)
}
