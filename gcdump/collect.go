package gcdump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// HeapKeywords are the Microsoft-Windows-DotNETRuntime keywords of a heap
// snapshot (TraceEvent's GCHeapSnapshot): GC (0x1), Type (0x80000),
// GCHeapDump (0x100000), GCHeapCollect (0x800000: enabling it makes the
// runtime induce a blocking gen-2 collection and walk the heap) and
// GCHeapAndTypeNames (0x1000000).
const HeapKeywords = 0x1 | 0x80000 | 0x100000 | 0x800000 | 0x1000000

// Defaults of CollectConfig's zero fields.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultBufferSizeMB   = 1024
	DefaultStopTimeout    = 30 * time.Second
	DefaultRundownTimeout = 2 * time.Minute
	// DefaultFlushTimeout bounds the wait for the type-table flush
	// session's first event.
	DefaultFlushTimeout = 5 * time.Second
)

// ErrTimeout is wrapped by Collect's error when the heap walk does not end
// within CollectConfig.Timeout.
var ErrTimeout = errors.New("the heap walk did not finish in time")

// ErrEndedEarly is wrapped by Collect's error when the session stream
// ends before the heap walk does (the target exited, or the runtime ended
// the session).
var ErrEndedEarly = errors.New("the session ended before the heap walk did (did the target exit?)")

// CollectError is a failed step of Collect.
type CollectError struct {
	// Op says what failed, e.g. "start the heap session".
	Op  string
	Err error
}

func (e *CollectError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *CollectError) Unwrap() error { return e.Err }

// CollectConfig configures Collect. The zero value does what dotnet-gcdump
// collect does.
type CollectConfig struct {
	// Timeout bounds the whole collection, up to the end of the heap walk;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// BufferSizeMB is the session's buffer; 0 means DefaultBufferSizeMB.
	BufferSizeMB uint32
	// StopTimeout bounds the StopTracing command; RundownTimeout the wait
	// for the module names that the runtime sends after the stop (when it
	// passes, types keep no module name). 0 means the defaults.
	StopTimeout    time.Duration
	RundownTimeout time.Duration
	// NoFlush skips the type-table flush session that dotnet-gcdump runs
	// first (a runtime logs a type's name only the first time a session
	// asks for it; the short session resets that).
	NoFlush bool
	// ProcessName and ProcessID are recorded in the graph's Info.
	ProcessName string
	ProcessID   int
	// Trace, when set, receives a copy of the heap session's nettrace
	// stream (FromTrace reads it back).
	Trace io.Writer
	// Started, when set, is called once the heap session has started (to
	// resume a runtime paused at startup).
	Started func(ctx context.Context) error
	// Notify, when set, receives progress and warnings. Calls never
	// overlap.
	Notify func(Note)
}

// NoteKind says what a Note reports.
type NoteKind int

// The kinds of Note.
const (
	// NoteFallback: a session feature was given up for an older runtime
	// (Text says which).
	NoteFallback NoteKind = iota + 1
	// NoteFlushFailed: the type-table flush session failed (Err); types
	// already logged by an earlier snapshot may stay unnamed.
	NoteFlushFailed
	// NoteStarted: the runtime started the collection and its heap walk.
	NoteStarted
	// NoteProgress: Objects and References seen so far.
	NoteProgress
	// NoteWalked: the heap walk ended (Objects, References; Duration is
	// the collection's, by the runtime's clock).
	NoteWalked
	// NoteRundownTimeout: the module names did not come within Duration.
	NoteRundownTimeout
	// NoteDropped: the runtime dropped Objects events outside the heap
	// walk (type names may be missing).
	NoteDropped
	// NoteResumeFailed: Started failed (Err).
	NoteResumeFailed
)

// Note is progress or a recoverable problem during Collect.
type Note struct {
	Kind       NoteKind
	Objects    int64
	References int64
	Duration   time.Duration
	Text       string
	Err        error
}

// Warning reports whether the note is a problem rather than progress.
func (n Note) Warning() bool {
	switch n.Kind {
	case NoteStarted, NoteProgress, NoteWalked:
		return false
	}
	return true
}

// String describes the note in a sentence.
func (n Note) String() string {
	switch n.Kind {
	case NoteFallback:
		return n.Text
	case NoteFlushFailed:
		return fmt.Sprintf("the type-table flush session failed (%v); some types may stay unnamed", n.Err)
	case NoteStarted:
		return "The runtime is walking the heap (an induced, blocking gen 2 collection)..."
	case NoteProgress:
		return fmt.Sprintf("  %s objects, %s references", group(n.Objects), group(n.References))
	case NoteWalked:
		return fmt.Sprintf("Heap walked: %s objects, %s references; the collection paused the process for %v.", group(n.Objects), group(n.References), n.Duration.Round(time.Millisecond/10))
	case NoteRundownTimeout:
		return fmt.Sprintf("no module names after %v; types keep no module", n.Duration)
	case NoteDropped:
		return fmt.Sprintf("the runtime dropped %d events outside the heap walk; some types may be unnamed", n.Objects)
	case NoteResumeFailed:
		return fmt.Sprintf("resuming the runtime: %v", n.Err)
	}
	return fmt.Sprintf("note %d: %s %v", n.Kind, n.Text, n.Err)
}

// HeapSessionConfig is the session Collect runs: the runtime provider at
// Verbose level with HeapKeywords, rundown for module names, Block
// buffering where the runtime has it (.NET 11) so that no event is lost.
func HeapSessionConfig(bufferMB uint32) eventpipe.Config {
	if bufferMB == 0 {
		bufferMB = DefaultBufferSizeMB
	}
	return eventpipe.Config{
		Providers:    []eventpipe.Provider{{Name: eventpipe.ProviderRuntime, Keywords: HeapKeywords, Level: eventpipe.LevelVerbose}},
		BufferSizeMB: bufferMB,
		Buffering:    eventpipe.Block,
	}
}

func (c CollectConfig) withDefaults() CollectConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.RundownTimeout <= 0 {
		c.RundownTimeout = DefaultRundownTimeout
	}
	if c.BufferSizeMB == 0 {
		c.BufferSizeMB = DefaultBufferSizeMB
	}
	return c
}

// Collect takes a heap snapshot of a live process: it enables the heap
// keywords in an EventPipe session, which makes the runtime run a blocking
// gen-2 collection and report every live object and reference, and builds
// the graph from the events as they stream in. It works on .NET Core 3.0
// and later.
func Collect(ctx context.Context, t eventpipe.Tracer, cfg CollectConfig) (*Graph, error) {
	c := cfg.withDefaults()
	var mu sync.Mutex
	note := func(n Note) {
		if c.Notify != nil {
			mu.Lock()
			defer mu.Unlock()
			c.Notify(n)
		}
	}
	deadline := time.Now().Add(c.Timeout)
	if !c.NoFlush {
		if err := flushTypes(ctx, t, c); err != nil {
			var ce *CollectError
			if errors.As(err, &ce) && ce.Op == "start the type-table flush session" {
				return nil, err // the target cannot be reached at all
			}
			note(Note{Kind: NoteFlushFailed, Err: err})
		}
	}

	sess, err := eventpipe.Start(ctx, t, HeapSessionConfig(c.BufferSizeMB))
	if err != nil {
		return nil, &CollectError{Op: "start the heap session", Err: err}
	}
	defer sess.Close()
	for _, w := range sess.Warnings {
		note(Note{Kind: NoteFallback, Text: w})
	}
	if c.Started != nil {
		if err := c.Started(ctx); err != nil {
			note(Note{Kind: NoteResumeFailed, Err: err})
		}
	}

	var src io.Reader = sess
	if c.Trace != nil {
		src = io.TeeReader(sess, c.Trace)
	}
	walked := make(chan struct{}) // closed when the heap walk ends
	finished := make(chan struct{})
	var (
		h       *HeapBuilder
		readErr error
		dropped int64
		objects atomic.Int64
		refs    atomic.Int64
		started atomic.Bool
		walkDur atomic.Int64 // the collection's duration
	)
	go func() {
		defer close(finished)
		tr, err := nettrace.NewReader(src)
		if err != nil {
			readErr = err
			return
		}
		h = NewHeapBuilder(tr.Header().PointerSize)
		var ev nettrace.Event
		signalled := false
		for {
			if err := tr.ReadEvent(&ev); err != nil {
				if err != io.EOF {
					readErr = err
				}
				break
			}
			if err := h.Event(&ev); err != nil {
				readErr = err
				break
			}
			o, r := h.Progress()
			objects.Store(o)
			refs.Store(r)
			if h.Started() {
				started.Store(true)
			}
			if !signalled && h.Done() {
				signalled = true
				walkDur.Store(int64(h.WalkDuration()))
				close(walked)
			}
		}
		dropped = int64(tr.Stats().DroppedEvents)
	}()
	abandon := func() {
		sess.Close()
		<-finished
	}

	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	announced := false
	var lastObjects int64 = -1
wait:
	for {
		select {
		case <-walked:
			break wait
		case <-finished:
			select {
			case <-walked:
				break wait // the walk ended with the stream
			default:
			}
			// The stream ended or failed before the walk did.
			if readErr != nil {
				return nil, &CollectError{Op: "read the heap session", Err: readErr}
			}
			return nil, &CollectError{Op: "read the heap session", Err: ErrEndedEarly}
		case <-ticker.C:
			if started.Load() && !announced {
				announced = true
				note(Note{Kind: NoteStarted})
			}
			if o := objects.Load(); announced && o != lastObjects {
				lastObjects = o
				note(Note{Kind: NoteProgress, Objects: o, References: refs.Load()})
			}
		case <-timeout.C:
			o, r := objects.Load(), refs.Load()
			stopSession(ctx, sess, c.StopTimeout)
			abandon()
			what := "the runtime did not start the heap walk (heap snapshots need .NET Core 3.0 or later)"
			if started.Load() {
				what = fmt.Sprintf("the heap walk was still running (%s objects, %s references so far); raise --timeout for a large heap", group(o), group(r))
			}
			return nil, &CollectError{Op: "collect the heap snapshot", Err: fmt.Errorf("%w after %v: %s", ErrTimeout, c.Timeout, what)}
		case <-ctx.Done():
			abandon()
			return nil, &CollectError{Op: "collect the heap snapshot", Err: ctx.Err()}
		}
	}
	if !announced {
		note(Note{Kind: NoteStarted})
	}
	note(Note{Kind: NoteWalked, Objects: objects.Load(), References: refs.Load(), Duration: time.Duration(walkDur.Load())})

	// Stop: the rundown that follows names the modules.
	if err := stopSession(ctx, sess, c.StopTimeout); err != nil {
		abandon()
		return nil, &CollectError{Op: "stop the heap session", Err: err}
	}
	rundown := time.NewTimer(c.RundownTimeout)
	defer rundown.Stop()
	select {
	case <-finished:
	case <-rundown.C:
		note(Note{Kind: NoteRundownTimeout, Duration: c.RundownTimeout})
		abandon()
		readErr = nil // the cut is ours
	case <-ctx.Done():
		abandon()
		return nil, &CollectError{Op: "wait for the rundown", Err: ctx.Err()}
	}
	if readErr != nil && !IsTruncation(readErr) {
		return nil, &CollectError{Op: "read the heap session", Err: readErr}
	}
	if dropped > 0 {
		note(Note{Kind: NoteDropped, Objects: dropped})
	}
	g, err := h.Finish()
	if err != nil {
		return nil, &CollectError{Op: "build the heap graph", Err: err}
	}
	g.Info.ProcessName, g.Info.ProcessID = c.ProcessName, c.ProcessID
	return g, nil
}

// IsTruncation reports whether err is a nettrace stream that merely stops
// (a session cut after the heap walk still has all of it).
func IsTruncation(err error) bool {
	var fe *nettrace.FormatError
	return errors.As(err, &fe) && fe.Truncated()
}

func stopSession(ctx context.Context, s *eventpipe.Session, timeout time.Duration) error {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.Stop(sctx)
}

// flushTypes runs the short SampleProfiler session dotnet-gcdump runs
// before a snapshot: starting and stopping a session resets the runtime's
// record of the types it has already named, so that the snapshot's events
// name them all again.
func flushTypes(ctx context.Context, t eventpipe.Tracer, c CollectConfig) error {
	sess, err := eventpipe.Start(ctx, t, eventpipe.Config{
		Providers: []eventpipe.Provider{{Name: eventpipe.ProviderSampleProfiler, Level: eventpipe.LevelInformational}},
		NoRundown: true,
	})
	if err != nil {
		return &CollectError{Op: "start the type-table flush session", Err: err}
	}
	defer sess.Close()
	first := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr, err := nettrace.NewReader(sess)
		if err != nil {
			first <- err
			return
		}
		var ev nettrace.Event
		sent := false
		for {
			err := tr.ReadEvent(&ev)
			if !sent {
				sent = true
				if err == io.EOF {
					err = nil
				}
				first <- err
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(DefaultFlushTimeout)
	defer timer.Stop()
	select {
	case err = <-first:
	case <-timer.C:
	case <-ctx.Done():
		sess.Close()
		<-done
		return ctx.Err()
	}
	if serr := stopSession(ctx, sess, c.StopTimeout); serr != nil {
		sess.Close()
		<-done
		return serr
	}
	select {
	case <-done:
	case <-time.After(c.StopTimeout):
		sess.Close()
		<-done
	}
	return err
}
