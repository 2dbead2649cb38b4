package stacks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
)

// Defaults of Config's zero fields.
const (
	DefaultDuration       = 10 * time.Millisecond
	DefaultAttempts       = 3
	DefaultStopTimeout    = eventpipe.DefaultStopTimeout
	DefaultRundownTimeout = eventpipe.DefaultRundownTimeout
	DefaultSlowRundown    = 5 * time.Second
	// DefaultMaxBytes caps a session's spool: a snapshot's session is a
	// few milliseconds of samples and the rundown, far below this unless
	// the runtime misbehaves.
	DefaultMaxBytes = 1 << 30
)

var (
	// ErrNoSamples is wrapped by the error of a capture whose sessions all
	// ended without a thread sample.
	ErrNoSamples = errors.New("the runtime sent no thread samples")
	// ErrEndedEarly is wrapped by the error of a capture whose session
	// stream ended before the session was stopped (the target exited, or
	// the runtime dropped the session).
	ErrEndedEarly = errors.New("the target ended the session before it was stopped (did it exit?)")
	// ErrBadConfig is wrapped by the error for a negative Config field.
	ErrBadConfig = errors.New("stacks: bad configuration")
	// errEndedShort marks (with an empty text) an ErrNoSamples error of a
	// session that ended short: retrying is pointless.
	errEndedShort = emptyError{}
)

type emptyError struct{}

func (emptyError) Error() string { return "" }

// Error is a failed step of a capture.
type Error struct {
	// Op says what failed, e.g. "start the session".
	Op string
	// Local is true when the failure is on this machine (the temporary
	// file), not in the target or the session.
	Local bool
	Err   error
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Config configures Capture. The zero value takes a 10 ms snapshot with the
// defaults above, without thread names.
type Config struct {
	// Duration is how long the first session samples before it is
	// stopped; 0 means DefaultDuration.
	Duration time.Duration
	// Attempts is how many sessions to try, each ten times longer than
	// the one before, until one has samples; 0 means DefaultAttempts.
	Attempts int
	// StopTimeout bounds the StopTracing command; 0 means
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// StartTimeout bounds starting each session: the request and its
	// version fallbacks. 0 means no bound but the client's own per-command
	// timeout.
	StartTimeout time.Duration
	// RundownTimeout bounds the wait for the rundown after the stop; when
	// it passes, what arrived is used (frames may stay addresses). 0 means
	// DefaultRundownTimeout.
	RundownTimeout time.Duration
	// SlowRundown is how long after the stop a NoteSlowRundown is sent if
	// the rundown has not ended; 0 means DefaultSlowRundown, a negative
	// value sends none.
	SlowRundown time.Duration
	// PID is the target's process id as this machine's /proc sees it, for
	// thread names on Linux; 0 means no names. Leave it 0 for a target in
	// another PID namespace reached through a reverse connection.
	PID int
	// MaxRundownBytes caps what a session may send after its stop (the
	// rundown); a runtime that keeps sending has its session closed
	// (NoteRundownTooLarge). 0 means eventpipe.DefaultMaxRundownBytes.
	MaxRundownBytes int64
	// MaxBytes caps what a session may spool; a runtime that sends more
	// has its session stopped (NoteMaxBytes) and what arrived is used. 0
	// means DefaultMaxBytes, a negative value no cap. Each session is also
	// closed at the latest StopTimeout + RundownTimeout after its sampling.
	MaxBytes int64
	// TempDir is where the session is spooled; "" means os.TempDir(). The
	// file is removed from the directory as soon as it is created (on
	// Unix), so nothing is left behind even when the process is killed.
	TempDir string
	// Started, when set, is called once each session has started (to
	// resume a runtime paused at startup). An error is reported as
	// NoteResumeFailed and the capture goes on.
	Started func(ctx context.Context) error
	// Notify, when set, receives progress and warnings as they happen,
	// on the capturing goroutine.
	Notify func(Note)
}

// NoteKind says what a Note reports.
type NoteKind int

// The kinds of Note.
const (
	// NoteFallback: the runtime is older and a session feature was given
	// up (Text says which).
	NoteFallback NoteKind = iota + 1
	// NoteResumeFailed: Config.Started failed (Err).
	NoteResumeFailed
	// NoteRetry: no samples arrived; sampling again for Duration.
	NoteRetry
	// NoteSlowRundown: the rundown has not ended Duration after the stop.
	NoteSlowRundown
	// NoteRundownTimeout: no end of the rundown after Duration; the
	// events that arrived are used.
	NoteRundownTimeout
	// NoteStreamError: the session stream ended with Err after the stop.
	NoteStreamError
	// NoteIncomplete: the stream was cut (Err); the events before the
	// cut are used.
	NoteIncomplete
	// NoteMaxBytes: the session sent more than Config.MaxBytes (Err); it
	// was stopped and the events before the cap are used.
	NoteMaxBytes
	// NoteRundownTooLarge: the runtime kept sending after the stop, past
	// eventpipe.DefaultMaxRundownBytes (Err); the session was closed and
	// the events before the cap are used.
	NoteRundownTooLarge
)

// Note is progress or a recoverable problem during a capture.
type Note struct {
	Kind     NoteKind
	Duration time.Duration
	Text     string
	Err      error
}

// Warning reports whether the note is a problem rather than progress.
func (n Note) Warning() bool { return n.Kind != NoteRetry && n.Kind != NoteSlowRundown }

// String describes the note in a sentence.
func (n Note) String() string {
	switch n.Kind {
	case NoteFallback:
		return n.Text
	case NoteResumeFailed:
		return fmt.Sprintf("resuming the runtime: %v", n.Err)
	case NoteRetry:
		return fmt.Sprintf("No samples arrived; sampling again for %v.", n.Duration)
	case NoteSlowRundown:
		return fmt.Sprintf("Waiting for the rundown (method names) for %v: it lists every loaded method, which takes a while in a large application.", n.Duration)
	case NoteRundownTimeout:
		return fmt.Sprintf("no end of the rundown after %v; using what arrived (frames may stay addresses)", n.Duration)
	case NoteStreamError:
		return fmt.Sprintf("the session stream ended with: %v", n.Err)
	case NoteIncomplete:
		return fmt.Sprintf("the session stream is incomplete (%v); using the events before the cut", n.Err)
	case NoteMaxBytes:
		return fmt.Sprintf("%v: the session was stopped; using the events before the cap (frames may stay addresses)", n.Err)
	case NoteRundownTooLarge:
		return fmt.Sprintf("%v and kept sending: the session was closed; using the events before the cap (frames may stay addresses)", n.Err)
	}
	return fmt.Sprintf("note %d: %s %v", n.Kind, n.Text, n.Err)
}

// SessionConfig is the session Capture runs, the one dotnet-stack runs: the
// SampleProfiler at Informational level, with the default rundown for
// method names.
func SessionConfig() eventpipe.Config {
	return eventpipe.Config{
		Providers: []eventpipe.Provider{{Name: eventpipe.ProviderSampleProfiler, Level: eventpipe.LevelInformational}},
	}
}

// Capture takes a snapshot of the managed stacks of the target's threads.
func Capture(ctx context.Context, t eventpipe.Tracer, cfg Config) (*Snapshot, error) {
	p, err := CaptureProfile(ctx, t, cfg)
	if err != nil {
		return nil, err
	}
	return FromProfile(p, cfg.PID), nil
}

// CaptureProfile runs the sessions of Capture and returns the profile of the
// one that had samples, for callers that want more than the first sample of
// each thread.
func CaptureProfile(ctx context.Context, t eventpipe.Tracer, cfg Config) (*profile.Profile, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := c.Duration
	for i := 1; ; i++ {
		p, err := c.session(ctx, t, d)
		if err == nil || !errors.Is(err, ErrNoSamples) || errors.Is(err, errEndedShort) || i >= c.Attempts {
			return p, err
		}
		d *= 10
		c.note(Note{Kind: NoteRetry, Duration: d})
	}
}

func (c Config) withDefaults() (Config, error) {
	for _, f := range []struct {
		name string
		v    time.Duration
		def  time.Duration
		p    *time.Duration
	}{
		{"Duration", c.Duration, DefaultDuration, &c.Duration},
		{"StartTimeout", c.StartTimeout, 0, &c.StartTimeout},
		{"StopTimeout", c.StopTimeout, DefaultStopTimeout, &c.StopTimeout},
		{"RundownTimeout", c.RundownTimeout, DefaultRundownTimeout, &c.RundownTimeout},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("%w: negative %s %v", ErrBadConfig, f.name, f.v)
		}
		if f.v == 0 {
			*f.p = f.def
		}
	}
	if c.Attempts < 0 {
		return c, fmt.Errorf("%w: negative Attempts %d", ErrBadConfig, c.Attempts)
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.SlowRundown == 0 {
		c.SlowRundown = DefaultSlowRundown
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c, nil
}

func (c *Config) note(n Note) {
	if c.Notify != nil {
		c.Notify(n)
	}
}

// session runs one session into a temporary file, stops it after d, drains
// the rundown and builds the profile of the file.
func (c *Config) session(ctx context.Context, t eventpipe.Tracer, d time.Duration) (*profile.Profile, error) {
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if c.StartTimeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, c.StartTimeout)
	}
	sess, err := eventpipe.Start(sctx, t, SessionConfig())
	timedOut := ctx.Err() == nil && sctx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			return nil, &Error{Op: fmt.Sprintf("start the session (no answer within %v)", c.StartTimeout), Err: err}
		}
		return nil, &Error{Op: "start the session", Err: err}
	}
	defer sess.Close()
	for _, w := range sess.Warnings {
		c.note(Note{Kind: NoteFallback, Text: w})
	}
	spool, err := eventpipe.NewTempSpool(c.TempDir, 0)
	if err != nil {
		return nil, &Error{Op: "create the temporary trace file", Local: true, Err: err}
	}
	defer spool.Close()
	if c.Started != nil {
		if err := c.Started(ctx); err != nil {
			c.note(Note{Kind: NoteResumeFailed, Err: err})
		}
	}

	// The profile is built as the stream arrives, so that damage stops
	// the session at once (a runtime sending garbage would otherwise be
	// spooled up to MaxBytes and then yield no samples).
	var p *profile.Profile
	var stopStart time.Time
	slowNoted := c.SlowRundown < 0
	maxBytes := c.MaxBytes
	if maxBytes < 0 {
		maxBytes = 0
	}
	res, err := sess.DrainDecode(ctx, spool, eventpipe.DrainConfig{
		Duration: d, StopTimeout: c.StopTimeout, RundownTimeout: c.RundownTimeout, MaxBytes: maxBytes,
		MaxRundownBytes:  c.MaxRundownBytes,
		ProgressInterval: min(max(c.SlowRundown/4, 10*time.Millisecond), time.Second),
		Progress: func(p eventpipe.DrainProgress) {
			if p.Phase == eventpipe.PhaseCollecting {
				return
			}
			if stopStart.IsZero() {
				stopStart = time.Now()
			}
			if !slowNoted && time.Since(stopStart) >= c.SlowRundown {
				slowNoted = true
				c.note(Note{Kind: NoteSlowRundown, Duration: c.SlowRundown})
			}
		},
	}, func(r io.Reader, _ func(eventpipe.StopReason)) error {
		var err error
		p, err = profile.Read(bufio.NewReaderSize(r, 1<<20), profile.Config{})
		return err
	})
	perr := res.DecodeErr
	if eventpipe.IsDamage(perr) {
		// The real cause, whatever else went wrong after it.
		return nil, &Error{Op: fmt.Sprintf("decode the session stream (the session was stopped at the damage, after %d bytes)", res.Bytes), Err: perr}
	}
	var oe *eventpipe.OutputError
	// cause is why the session ended short, for a capture without samples.
	cause := ""
	switch {
	case errors.As(err, &oe):
		return nil, &Error{Op: "write the temporary trace file", Local: true, Err: oe.Err}
	case errors.Is(err, eventpipe.ErrMaxBytes):
		c.note(Note{Kind: NoteMaxBytes, Err: err})
		cause = err.Error()
	case err != nil:
		return nil, &Error{Op: "read the session stream", Err: err}
	}
	switch res.Reason {
	case eventpipe.StopCanceled:
		return nil, &Error{Op: "sample the threads", Err: ctx.Err()}
	case eventpipe.StopEnded:
		if res.StreamErr != nil {
			return nil, fmt.Errorf("%w: %w", ErrEndedEarly, res.StreamErr)
		}
		return nil, ErrEndedEarly
	}
	if res.Rundown == eventpipe.RundownAbandoned {
		return nil, &Error{Op: "wait for the rundown", Err: ctx.Err()}
	}
	for _, w := range res.Warnings() {
		switch w.Kind {
		case eventpipe.WarnStopUnacknowledged:
			return nil, &Error{Op: "stop the session", Err: w.Err}
		case eventpipe.WarnRundownTimedOut, eventpipe.WarnDeadline:
			c.note(Note{Kind: NoteRundownTimeout, Duration: c.RundownTimeout})
			cause = w.String()
		case eventpipe.WarnRundownTooLarge:
			c.note(Note{Kind: NoteRundownTooLarge, Err: fmt.Errorf("the runtime sent more than %d bytes after the stop", w.Bytes)})
			cause = w.String()
		case eventpipe.WarnStreamError:
			c.note(Note{Kind: NoteStreamError, Err: w.Err})
		}
	}

	var fe *nettrace.FormatError
	switch {
	case perr == nil:
	case p != nil && errors.As(perr, &fe):
		// A cut stream (an abandoned rundown, a size cap) still has its
		// samples.
		c.note(Note{Kind: NoteIncomplete, Err: perr})
		if cause == "" && len(p.Threads) == 0 {
			// Cut by the other end, not by a bound of ours: the target
			// went away during the rundown.
			return nil, fmt.Errorf("%w: the stream ended after the stop, before its end: %w", ErrEndedEarly, perr)
		}
	default:
		return nil, &Error{Op: "decode the session stream", Err: perr}
	}
	if len(p.Threads) == 0 && cause != "" {
		// Not retried: a longer session would end short the same way.
		return nil, fmt.Errorf("%w in %v: the session ended short (%s)%w", ErrNoSamples, d, cause, errEndedShort)
	}
	if len(p.Threads) == 0 {
		return nil, fmt.Errorf("%w in %v (a process with no managed threads has no stacks)", ErrNoSamples, d)
	}
	return p, nil
}
