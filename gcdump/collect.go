package gcdump

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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

// ErrTargetExited is wrapped by Collect's error when the stream of the
// heap session broke off in the middle of the heap walk: the runtime never
// ends a heap session by itself, so the target process exited or was
// killed.
var ErrTargetExited = errors.New("the target process exited during the heap walk")

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
	// Buffering is the session's buffering mode; the zero value,
	// BufferingAuto, takes Block where the runtime has it and Drop
	// elsewhere without a word.
	Buffering Buffering
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

	// onDrain, when set, sees the heap session's Drain progress (tests).
	onDrain func(eventpipe.DrainProgress)
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

// Buffering is how the heap session's buffers behave when full.
type Buffering uint8

// The buffering modes of CollectConfig.
const (
	// BufferingAuto is Block where the runtime has it (.NET 11 and later,
	// CollectTracing6) and Drop on older runtimes, with no warning: Drop
	// is all they have, and a heap walk that loses events is refused
	// (ErrIncomplete) rather than silently wrong.
	BufferingAuto Buffering = iota
	// BufferingBlock asks for Block: the runtime's threads wait for room
	// rather than drop events. A runtime without it falls back to Drop
	// with a warning (NoteFallback), since it was asked for.
	BufferingBlock
	// BufferingDrop asks for Drop (CollectTracing2, every runtime).
	BufferingDrop
)

// ParseBuffering reads a buffering mode by name: auto, block or drop.
func ParseBuffering(s string) (Buffering, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return BufferingAuto, nil
	case "block":
		return BufferingBlock, nil
	case "drop":
		return BufferingDrop, nil
	}
	return 0, fmt.Errorf("buffering mode %q: use auto, block or drop", s)
}

// String names the mode as ParseBuffering reads it.
func (b Buffering) String() string {
	switch b {
	case BufferingAuto:
		return "auto"
	case BufferingBlock:
		return "block"
	case BufferingDrop:
		return "drop"
	}
	return fmt.Sprintf("Buffering(%d)", uint8(b))
}

// HeapSessionConfig is the session Collect runs: the runtime provider at
// Verbose level with HeapKeywords, rundown for module names, and Block
// buffering (so that no event is lost) unless b is BufferingDrop; eventpipe
// falls back to Drop on a runtime without Block.
func HeapSessionConfig(bufferMB uint32, b Buffering) eventpipe.Config {
	if bufferMB == 0 {
		bufferMB = DefaultBufferSizeMB
	}
	mode := eventpipe.Block
	if b == BufferingDrop {
		mode = eventpipe.Drop
	}
	return eventpipe.Config{
		Providers:    []eventpipe.Provider{{Name: eventpipe.ProviderRuntime, Keywords: HeapKeywords, Level: eventpipe.LevelVerbose}},
		BufferSizeMB: bufferMB,
		Buffering:    mode,
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
//
// The session runs on eventpipe's Session.Drain: the end of the heap walk
// stops it (StopEvent), Timeout abandons it (CollectTimeout), and the
// rundown that names the modules is read with the stop and rundown bounds.
func Collect(ctx context.Context, t eventpipe.Tracer, cfg CollectConfig) (*Graph, error) {
	c := cfg.withDefaults()
	note := func(n Note) {
		if c.Notify != nil {
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

	if c.Buffering > BufferingDrop {
		return nil, &CollectError{Op: "start the heap session", Err: fmt.Errorf("unknown buffering mode %d", c.Buffering)}
	}
	sess, err := eventpipe.Start(ctx, t, HeapSessionConfig(c.BufferSizeMB, c.Buffering))
	if err != nil {
		return nil, &CollectError{Op: "start the heap session", Err: err}
	}
	defer sess.Close()
	warnings := sess.Warnings
	if c.Buffering == BufferingAuto && sess.Config.Buffering != eventpipe.Block && len(warnings) > 0 {
		// The fallback from Block is the first (CollectTracing6 is the
		// first command tried) and, with this configuration, the only
		// one: nobody asked for Block, so it is no news.
		warnings = warnings[1:]
	}
	for _, w := range warnings {
		note(Note{Kind: NoteFallback, Text: w})
	}
	if c.Started != nil {
		if err := c.Started(ctx); err != nil {
			note(Note{Kind: NoteResumeFailed, Err: err})
		}
	}

	// The stream goes through Drain into a pipe that the walk decoder
	// reads; the decoder asks Drain to stop when the walk ends.
	pr, pw := io.Pipe()
	stop := make(chan eventpipe.StopReason, 1)
	w := &walk{stop: stop, finished: make(chan struct{})}
	go w.decode(pr, c.Trace)

	// Notes come from Drain's goroutine (this one): they never overlap.
	announced, walkedNoted := false, false
	var lastObjects int64 = -1
	phase := eventpipe.PhaseCollecting
	noteWalked := func() {
		walkedNoted = true
		if !announced {
			announced = true
			note(Note{Kind: NoteStarted})
		}
		note(Note{Kind: NoteWalked, Objects: w.objects.Load(), References: w.refs.Load(), Duration: time.Duration(w.walkDur.Load())})
	}
	progress := func(p eventpipe.DrainProgress) {
		phase = p.Phase
		switch {
		case p.Phase == eventpipe.PhaseCollecting:
			if w.started.Load() && !announced {
				announced = true
				note(Note{Kind: NoteStarted})
			}
			if o := w.objects.Load(); announced && o != lastObjects {
				lastObjects = o
				note(Note{Kind: NoteProgress, Objects: o, References: w.refs.Load()})
			}
		case p.Reason == eventpipe.StopEvent && !walkedNoted:
			noteWalked() // the stop follows the walk: the rundown comes
		}
		if c.onDrain != nil {
			c.onDrain(p)
		}
	}
	res, derr := sess.Drain(ctx, pw, eventpipe.DrainConfig{
		Stop:             stop,
		CollectTimeout:   max(time.Until(deadline), time.Nanosecond),
		StopTimeout:      c.StopTimeout,
		RundownTimeout:   c.RundownTimeout,
		MaxTime:          -1,
		Progress:         progress,
		ProgressInterval: progressInterval,
	})
	// A read error that ended the stream reaches the decoder as it did
	// the session's reader; otherwise the decoder sees the end.
	pw.CloseWithError(res.StreamErr)
	<-w.finished
	walked := w.walked.Load()
	readErr := w.readErr

	switch {
	case res.Reason == eventpipe.StopCanceled:
		return nil, &CollectError{Op: "collect the heap snapshot", Err: ctx.Err()}
	case res.Reason == eventpipe.StopDeadline:
		o, r := w.objects.Load(), w.refs.Load()
		what := "the runtime did not start the heap walk (heap snapshots need .NET Core 3.0 or later)"
		if w.started.Load() {
			what = fmt.Sprintf("the heap walk was still running (%s objects, %s references so far); raise --timeout for a large heap", group(o), group(r))
		}
		return nil, &CollectError{Op: "collect the heap snapshot", Err: fmt.Errorf("%w after %v: %s", ErrTimeout, c.Timeout, what)}
	case !walked:
		// The stream ended, failed or was refused before the walk ended.
		// What was built is dropped here (w.h): nothing of it is kept.
		w.h = nil
		var fe *nettrace.FormatError
		damaged := errors.As(readErr, &fe) && !fe.Truncated()
		switch {
		case errors.Is(derr, eventpipe.ErrNotNettrace):
			return nil, &CollectError{Op: "read the heap session", Err: derr}
		case res.Reason == eventpipe.StopEnded && !damaged:
			// The runtime never ends a heap session by itself: the
			// stream stopped (at a block boundary or in the middle of
			// one, or the connection was reset) because the process
			// went away.
			if w.started.Load() {
				return nil, &CollectError{Op: "collect the heap snapshot", Err: fmt.Errorf("%w (%s objects and %s references had come); no snapshot was written",
					ErrTargetExited, group(w.objects.Load()), group(w.refs.Load()))}
			}
			return nil, &CollectError{Op: "collect the heap snapshot", Err: fmt.Errorf("%w: the target process exited before the heap walk began", ErrEndedEarly)}
		case readErr != nil:
			return nil, &CollectError{Op: "read the heap session", Err: readErr}
		case derr != nil:
			return nil, &CollectError{Op: "read the heap session", Err: derr}
		}
		return nil, &CollectError{Op: "read the heap session", Err: ErrEndedEarly}
	}
	if !walkedNoted {
		noteWalked() // the walk ended with the stream
	}
	switch res.Rundown {
	case eventpipe.RundownAbandoned:
		op := "wait for the rundown"
		if phase == eventpipe.PhaseStopping {
			op = "stop the heap session"
		}
		return nil, &CollectError{Op: op, Err: ctx.Err()}
	case eventpipe.RundownUnacknowledged:
		return nil, &CollectError{Op: "stop the heap session", Err: res.StopErr}
	case eventpipe.RundownTimedOut:
		note(Note{Kind: NoteRundownTimeout, Duration: c.RundownTimeout})
		readErr = nil // the cut is ours
	}
	if readErr == nil {
		readErr = derr
	}
	if readErr != nil && !IsTruncation(readErr) {
		return nil, &CollectError{Op: "read the heap session", Err: readErr}
	}
	if w.dropped > 0 {
		note(Note{Kind: NoteDropped, Objects: w.dropped})
	}
	g, err := w.h.Finish()
	if err != nil {
		return nil, &CollectError{Op: "build the heap graph", Err: err}
	}
	g.Info.ProcessName, g.Info.ProcessID = c.ProcessName, c.ProcessID
	return g, nil
}

// progressInterval is how often Collect reports the walk's progress.
const progressInterval = 500 * time.Millisecond

// walk decodes the heap session's stream into a HeapBuilder as it arrives.
type walk struct {
	stop     chan<- eventpipe.StopReason
	finished chan struct{}

	// Read by Drain's progress while decode runs.
	objects, refs   atomic.Int64
	started, walked atomic.Bool
	walkDur         atomic.Int64 // the collection's duration

	// Set before finished is closed.
	h       *HeapBuilder
	readErr error
	dropped int64
}

func (w *walk) signal(r eventpipe.StopReason) {
	select {
	case w.stop <- r:
	default:
	}
}

// decode reads the stream to its end, teeing it to trace when set. The end
// of the walk asks Drain to stop (StopEvent); a decoder that fails asks it
// too (StopDamaged) and closes the pipe, so that Drain never blocks on it.
func (w *walk) decode(pr *io.PipeReader, trace io.Writer) {
	defer close(w.finished)
	var src io.Reader = pr
	if trace != nil {
		src = io.TeeReader(pr, trace)
	}
	w.readErr = w.read(src)
	if w.readErr != nil {
		w.signal(eventpipe.StopDamaged)
	}
	pr.CloseWithError(cmp.Or(w.readErr, io.ErrClosedPipe))
}

func (w *walk) read(src io.Reader) error {
	tr, err := nettrace.NewReader(src)
	if err != nil {
		return err
	}
	defer func() { w.dropped = int64(tr.Stats().DroppedEvents) }()
	w.h = NewHeapBuilder(tr.Header().PointerSize)
	var ev nettrace.Event
	for {
		if err := tr.ReadEvent(&ev); err != nil {
			if err != io.EOF {
				return err
			}
			return nil
		}
		if err := w.h.Event(&ev); err != nil {
			return err
		}
		o, r := w.h.Progress()
		w.objects.Store(o)
		w.refs.Store(r)
		if w.h.Started() {
			w.started.Store(true)
		}
		if !w.walked.Load() && w.h.Done() {
			w.walkDur.Store(int64(w.h.WalkDuration()))
			w.walked.Store(true)
			w.signal(eventpipe.StopEvent)
		}
	}
}

// IsTruncation reports whether err is a nettrace stream that merely stops
// (a session cut after the heap walk still has all of it).
func IsTruncation(err error) bool {
	var fe *nettrace.FormatError
	return errors.As(err, &fe) && fe.Truncated()
}

// flushTypes runs the short SampleProfiler session dotnet-gcdump runs
// before a snapshot: starting and stopping a session resets the runtime's
// record of the types it has already named, so that the snapshot's events
// name them all again. The session is stopped at its first event, or after
// DefaultFlushTimeout without one.
func flushTypes(ctx context.Context, t eventpipe.Tracer, c CollectConfig) error {
	sess, err := eventpipe.Start(ctx, t, eventpipe.Config{
		Providers: []eventpipe.Provider{{Name: eventpipe.ProviderSampleProfiler, Level: eventpipe.LevelInformational}},
		NoRundown: true,
	})
	if err != nil {
		return &CollectError{Op: "start the type-table flush session", Err: err}
	}
	defer sess.Close()
	pr, pw := io.Pipe()
	stop := make(chan eventpipe.StopReason, 1)
	first := make(chan error, 1) // the first event's error; nil at the end of the stream
	go func() {
		err := firstEvent(pr)
		first <- err
		stop <- eventpipe.StopEvent
		if err != nil {
			pr.CloseWithError(err)
			return
		}
		_, _ = io.Copy(io.Discard, pr) // the rest, until Drain ends
	}()
	res, derr := sess.Drain(ctx, pw, eventpipe.DrainConfig{
		Duration:       DefaultFlushTimeout,
		Stop:           stop,
		StopTimeout:    c.StopTimeout,
		RundownTimeout: c.StopTimeout,
		MaxTime:        -1,
	})
	_ = pw.Close()
	ferr := <-first // the pipe is closed: it comes
	switch {
	case res.Reason == eventpipe.StopCanceled:
		return ctx.Err()
	case res.Reason == eventpipe.StopDuration:
		ferr = nil // no event in time: the pipe's end is ours
	case errors.Is(derr, eventpipe.ErrNotNettrace):
		return derr
	case ferr != nil:
		return ferr
	case res.StopErr != nil:
		return res.StopErr
	}
	return derr
}

// firstEvent reads a nettrace stream up to its first event.
func firstEvent(r io.Reader) error {
	tr, err := nettrace.NewReader(r)
	if err != nil {
		return err
	}
	var ev nettrace.Event
	if err := tr.ReadEvent(&ev); err != nil && err != io.EOF {
		return err
	}
	return nil
}
