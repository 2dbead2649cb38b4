package eventpipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of DrainConfig.
const (
	// DefaultStopTimeout bounds the StopTracing command.
	DefaultStopTimeout = 30 * time.Second
	// DefaultRundownTimeout bounds the wait for the end of the stream after
	// the stop: the rundown names every loaded method, which takes a while
	// in a large application.
	DefaultRundownTimeout = 5 * time.Minute
	// DefaultProgressInterval is how often DrainConfig.Progress is called.
	DefaultProgressInterval = time.Second
	// DefaultMaxRundownBytes caps what is read after the stop: the rundown
	// of a large application is tens of megabytes; a runtime that keeps
	// streaming after the stop would otherwise fill the disk until
	// RundownTimeout (about 23 MB/s on a local socket). 256 MB in SI units
	// (256*10^6 bytes), as the CLI's --rundown-max-size default reads.
	DefaultMaxRundownBytes = 256_000_000
	// abandonStopTimeout bounds the StopTracing sent while abandoning a
	// session that was not stopped yet: the connection is already closed
	// and the caller asked for an end at once.
	abandonStopTimeout = 2 * time.Second
)

var (
	// ErrMaxBytes is wrapped by Drain's error when the stream reached
	// DrainConfig.MaxBytes: the output holds exactly MaxBytes bytes (the
	// last block is usually cut) and the session was stopped.
	ErrMaxBytes = errors.New("eventpipe: the session stream reached its size cap")
	// ErrNotNettrace is wrapped by Drain's error when the first bytes of
	// the stream are not a nettrace header: the endpoint is not a .NET
	// runtime speaking EventPipe, or it misbehaves.
	ErrNotNettrace = errors.New("eventpipe: the session stream is not a nettrace stream")
)

// OutputError is Drain's error when writing the stream failed (a full disk,
// a closed pipe, an HTTP client gone). The session was stopped.
type OutputError struct {
	// Written is how many bytes were written before the failure.
	Written int64
	Err     error
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("eventpipe: write the session stream (after %d bytes): %v", e.Written, e.Err)
}

// Unwrap returns the writer's error.
func (e *OutputError) Unwrap() error { return e.Err }

// StopReason says why the collection of a session ended.
type StopReason uint8

// The reasons a collection ends. The first ones come from the caller
// (through DrainConfig.Stop), the others from Drain itself.
const (
	// StopNone: the collection has not ended.
	StopNone StopReason = iota
	// StopInterrupt: the user interrupted the collection (Ctrl-C, SIGTERM).
	StopInterrupt
	// StopUser: the user asked for the stop another way (Enter, a key).
	StopUser
	// StopEvent: the caller saw the event it was waiting for.
	StopEvent
	// StopTargetExit: the caller knows the target process exited. No
	// StopTracing is sent; the rest of the stream is read.
	StopTargetExit
	// StopDamaged: the caller found the stream damaged. Nothing after
	// the damage can be read: the session is abandoned (closed, and a
	// StopTracing sent with a short bound) without waiting for a rundown.
	StopDamaged
	// StopDuration: DrainConfig.Duration passed.
	StopDuration
	// StopEnded: the stream ended before any stop: the target exited or
	// was killed, or the runtime ended the session.
	StopEnded
	// StopCanceled: Drain's context ended; the session was abandoned.
	StopCanceled
	// StopDeadline: DrainConfig.MaxTime or CollectTimeout passed; the
	// session was abandoned.
	StopDeadline
	// StopMaxSize: the stream reached DrainConfig.MaxBytes.
	StopMaxSize
	// StopWriteError: writing the stream failed.
	StopWriteError
	// StopNotNettrace: the stream does not start with a nettrace header.
	StopNotNettrace
)

var stopReasonText = [...]string{
	StopNone:        "not stopped",
	StopInterrupt:   "interrupted",
	StopUser:        "stopped by the user",
	StopEvent:       "stopping event seen",
	StopTargetExit:  "target exited",
	StopDamaged:     "damaged stream",
	StopDuration:    "duration reached",
	StopEnded:       "the target ended the session",
	StopCanceled:    "canceled",
	StopDeadline:    "time limit reached",
	StopMaxSize:     "size cap reached",
	StopWriteError:  "write error",
	StopNotNettrace: "not a nettrace stream",
}

// String describes the reason in a few words ("duration reached").
func (r StopReason) String() string {
	if int(r) < len(stopReasonText) {
		return stopReasonText[r]
	}
	return "StopReason(" + strconv.Itoa(int(r)) + ")"
}

// RundownState says how the stream ended after the stop (the rundown, which
// names the methods of the stacks, is its last part).
type RundownState uint8

// The ways a stream ends.
const (
	// RundownComplete: the stream ended by itself after the stop; it holds
	// everything, the rundown included when one was asked for.
	RundownComplete RundownState = iota
	// RundownMissing: the stream ended before any stop (the target went
	// away): there is no rundown.
	RundownMissing
	// RundownCut: the stream broke after the stop (a read error).
	RundownCut
	// RundownUnacknowledged: the runtime did not answer the StopTracing
	// command in time; the session was closed.
	RundownUnacknowledged
	// RundownTimedOut: the stream did not end within RundownTimeout of the
	// stop (or MaxTime or CollectTimeout passed); the session was closed.
	RundownTimedOut
	// RundownAbandoned: Drain's context ended while the rundown was
	// arriving; the session was closed.
	RundownAbandoned
	// RundownNotWritten: the output failed or reached its cap first.
	RundownNotWritten
	// RundownTooLarge: the stream went on past MaxRundownBytes after the
	// stop; the session was closed and what arrived up to the cap kept.
	RundownTooLarge
)

var rundownStateText = [...]string{
	RundownComplete:       "completed",
	RundownMissing:        "not received (the target ended first)",
	RundownCut:            "cut (the stream broke)",
	RundownUnacknowledged: "not received (the stop was not acknowledged)",
	RundownTimedOut:       "timed out",
	RundownAbandoned:      "abandoned",
	RundownNotWritten:     "not written",
	RundownTooLarge:       "cut at its size cap",
}

// String describes the state in a few words ("completed").
func (s RundownState) String() string {
	if int(s) < len(rundownStateText) {
		return rundownStateText[s]
	}
	return "RundownState(" + strconv.Itoa(int(s)) + ")"
}

// DrainPhase is the step a Drain is in.
type DrainPhase uint8

// The phases of a Drain.
const (
	// PhaseCollecting: the session runs; nothing asked it to stop yet.
	PhaseCollecting DrainPhase = iota
	// PhaseStopping: StopTracing was sent and is not answered yet.
	PhaseStopping
	// PhaseRundown: the stop was acknowledged; the rest of the stream
	// (the rundown) is arriving.
	PhaseRundown
)

func (p DrainPhase) String() string {
	switch p {
	case PhaseCollecting:
		return "collecting"
	case PhaseStopping:
		return "stopping"
	case PhaseRundown:
		return "rundown"
	}
	return "DrainPhase(" + strconv.Itoa(int(p)) + ")"
}

// DrainProgress is what DrainConfig.Progress is told.
type DrainProgress struct {
	Phase DrainPhase
	// Reason is why the collection is stopping (StopNone while collecting).
	Reason StopReason
	// Bytes is how many bytes were written so far.
	Bytes int64
	// Elapsed is the time since Drain began, InPhase since the phase began.
	Elapsed time.Duration
	InPhase time.Duration
}

// DrainConfig configures Session.Drain. The zero value collects until the
// stream ends or ctx ends, with the default stop and rundown timeouts and
// no size cap.
type DrainConfig struct {
	// Duration stops the session after this long; 0 means no limit.
	Duration time.Duration
	// Stop stops the session with the reason received. Drain reads only
	// the first value; make it buffered and send without blocking when
	// several goroutines may send.
	Stop <-chan StopReason
	// StopTimeout bounds the StopTracing command; 0 means
	// DefaultStopTimeout. When it passes, the session is closed.
	StopTimeout time.Duration
	// RundownTimeout bounds the wait for the end of the stream once the
	// stop is acknowledged; 0 means DefaultRundownTimeout. When it passes,
	// the session is closed and what arrived is kept.
	RundownTimeout time.Duration
	// MaxTime is a hard limit on the whole Drain: when it passes the
	// session is closed whatever it is doing. 0 means Duration +
	// StopTimeout + RundownTimeout when Duration is set and no limit
	// otherwise; a negative value means no limit.
	MaxTime time.Duration
	// CollectTimeout, when set, bounds the collection: when it passes
	// before any other reason to stop, the session is abandoned as when
	// MaxTime passes (closed at once, no rundown awaited; Reason
	// StopDeadline, Deadline set). Unlike MaxTime it no longer applies
	// once the collection ended: the stop and the rundown keep their own
	// bounds. It suits a collection that waits for an event it asks the
	// runtime for (a heap walk, sent on Stop) and that is worthless
	// without it; Duration, by contrast, ends a collection normally. 0
	// means no limit.
	CollectTimeout time.Duration
	// MaxRundownBytes caps what is written after the stop is sent (the
	// rundown): when the stream goes past it, the session is closed
	// (Rundown RundownTooLarge) and the output holds what arrived up to
	// the cap, like RundownTimeout for time. 0 means
	// DefaultMaxRundownBytes; a negative value means no cap.
	MaxRundownBytes int64
	// MaxBytes caps what is written to the output: when the stream
	// reaches it, exactly MaxBytes bytes are written, the session is
	// stopped and Drain returns an error wrapping ErrMaxBytes. 0 means no
	// cap.
	MaxBytes int64
	// Progress, when set, is called on Drain's goroutine at the start of
	// each phase and every ProgressInterval. It must not block.
	Progress func(DrainProgress)
	// ProgressInterval is how often Progress is called; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
}

func (c DrainConfig) withDefaults() DrainConfig {
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.RundownTimeout <= 0 {
		c.RundownTimeout = DefaultRundownTimeout
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.MaxRundownBytes == 0 {
		c.MaxRundownBytes = DefaultMaxRundownBytes
	}
	if c.MaxTime == 0 && c.Duration > 0 {
		c.MaxTime = c.Duration + c.StopTimeout + c.RundownTimeout
	}
	return c
}

// DrainResult is how a Drain went.
type DrainResult struct {
	// Reason is why the collection ended: the first stop asked for or
	// met.
	Reason StopReason
	// Rundown is how the stream ended.
	Rundown RundownState
	// Bytes is how many bytes were written to the output.
	Bytes int64
	// StopErr is the StopTracing error when the stop was sent and failed.
	StopErr error
	// StreamErr is the read error that ended the stream, nil when it ended
	// cleanly or Drain closed it.
	StreamErr error
	// Deadline is true when MaxTime (or CollectTimeout) cut the Drain
	// short.
	Deadline bool
	// DecodeErr is what the consumer of DrainDecode returned (nil after
	// Drain, and when the consumer read the stream to its end).
	DecodeErr error

	// The bounds the Drain ran with and whether the session asked for a
	// rundown, for Warnings.
	rundownTimeout  time.Duration
	maxRundownBytes int64
	noRundown       bool
}

// Drain copies the session's stream to w until the collection ends, then
// stops the session and copies the rest of the stream (the rundown) with
// bounded waits, so that w gets every byte the runtime sent for the
// session. It is the one lifecycle of a session: trace collection,
// streaming, stack snapshots and the monitor all use it.
//
// The collection ends when the Duration passes, a reason arrives on Stop,
// the stream ends by itself (StopEnded) or fails (see below). Drain then
// sends StopTracing (bounded by StopTimeout) while it keeps reading, and
// waits for the end of the stream (bounded by RundownTimeout). When ctx
// ends, the session is abandoned at once: its connection is closed (the
// runtime then ends the session), a pending StopTracing is given up, and
// Drain returns with what was written. MaxTime bounds everything;
// CollectTimeout bounds the collection alone in the same way.
//
// Drain fails, after stopping the session, when w fails (an *OutputError),
// when MaxBytes is reached (ErrMaxBytes) and when the stream does not start
// like a nettrace stream (ErrNotNettrace). A stop that is not acknowledged,
// a rundown that does not end and an abandoned session are not errors: the
// DrainResult says what happened, and w holds everything received.
//
// Drain returns only once it has stopped writing to w; a Write that blocks
// holds it up. It closes the session's connection before returning. Call it
// once.
func (s *Session) Drain(ctx context.Context, w io.Writer, cfg DrainConfig) (DrainResult, error) {
	cfg = cfg.withDefaults()
	d := &drain{s: s, cfg: cfg, start: time.Now()}
	return d.run(ctx, w)
}

type drain struct {
	s     *Session
	cfg   DrainConfig
	start time.Time
	cp    *copier
	res   DrainResult

	phase      DrainPhase
	phaseStart time.Time
}

func (d *drain) progress() {
	if d.cfg.Progress == nil {
		return
	}
	now := time.Now()
	d.cfg.Progress(DrainProgress{Phase: d.phase, Reason: d.res.Reason, Bytes: d.cp.written.Load(),
		Elapsed: now.Sub(d.start), InPhase: now.Sub(d.phaseStart)})
}

func (d *drain) enter(p DrainPhase) {
	d.phase, d.phaseStart = p, time.Now()
	d.progress()
}

func (d *drain) run(ctx context.Context, w io.Writer) (DrainResult, error) {
	d.cp = newCopier(d.s.conn, w, d.cfg.MaxBytes)
	go d.cp.run()
	defer d.s.Close()

	var deadline <-chan time.Time
	if d.cfg.MaxTime > 0 {
		t := time.NewTimer(d.cfg.MaxTime)
		defer t.Stop()
		deadline = t.C
	}
	var timer <-chan time.Time
	if d.cfg.Duration > 0 {
		t := time.NewTimer(d.cfg.Duration)
		defer t.Stop()
		timer = t.C
	}
	var collectLimit <-chan time.Time
	if d.cfg.CollectTimeout > 0 {
		t := time.NewTimer(d.cfg.CollectTimeout)
		defer t.Stop()
		collectLimit = t.C
	}
	tick := time.NewTicker(d.cfg.ProgressInterval)
	defer tick.Stop()
	d.enter(PhaseCollecting)

	// Collecting: wait for a reason to stop.
	for d.res.Reason == StopNone {
		select {
		case r := <-d.cfg.Stop:
			if r == StopNone {
				r = StopUser
			}
			d.res.Reason = r
		case <-timer:
			d.res.Reason = StopDuration
		case <-d.cp.done:
			d.res.Reason = StopEnded
		case <-d.cp.failed:
			d.res.Reason = d.cp.failReason
		case <-ctx.Done():
			d.res.Reason = StopCanceled
		case <-deadline:
			d.res.Reason, d.res.Deadline = StopDeadline, true
		case <-collectLimit:
			d.res.Reason, d.res.Deadline = StopDeadline, true
		case <-tick.C:
			d.progress()
		}
	}

	switch d.res.Reason {
	case StopEnded:
		d.res.Rundown = RundownMissing
		return d.finish(false)
	case StopCanceled, StopDeadline:
		d.abandon(ctx)
		d.res.Rundown = RundownAbandoned
		if d.res.Deadline {
			d.res.Rundown = RundownTimedOut
		}
		return d.finish(true)
	case StopMaxSize, StopWriteError, StopNotNettrace, StopDamaged:
		// Nothing more can be written (or, after damage, read): close,
		// then make sure the runtime ends the session.
		d.abandon(ctx)
		d.res.Rundown = RundownNotWritten
		return d.finish(true)
	case StopTargetExit:
		// The process is gone: read what it sent before it died.
		d.cp.capFrom(d.cfg.MaxRundownBytes)
		d.enter(PhaseRundown)
		t := time.NewTimer(d.cfg.StopTimeout)
		defer t.Stop()
		select {
		case <-d.cp.done:
			d.res.Rundown = RundownMissing
			return d.finish(false)
		case <-d.cp.over:
			d.res.Rundown = RundownTooLarge
		case <-d.cp.failed:
			d.res.Rundown = RundownNotWritten
		case <-t.C:
			d.res.Rundown = RundownMissing
		case <-ctx.Done():
			d.res.Rundown = RundownAbandoned
		case <-deadline:
			d.res.Rundown, d.res.Deadline = RundownTimedOut, true
		}
		d.s.Close()
		return d.finish(true)
	}

	// Stopping: send StopTracing while the copy goes on.
	d.cp.capFrom(d.cfg.MaxRundownBytes)
	d.enter(PhaseStopping)
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StopTimeout)
	defer cancelStop()
	stopDone := make(chan error, 1)
	go func() { stopDone <- d.s.Stop(stopCtx) }()
	stopPending := true
	defer func() {
		if stopPending {
			cancelStop()
			<-stopDone
		}
	}()
	var rundown <-chan time.Time
	for {
		select {
		case err := <-stopDone:
			stopPending = false
			if err != nil {
				d.res.StopErr = err
				d.res.Rundown = RundownUnacknowledged
				d.s.Close()
				return d.finish(true)
			}
			t := time.NewTimer(d.cfg.RundownTimeout)
			defer t.Stop()
			rundown = t.C
			d.enter(PhaseRundown)
		case <-d.cp.done:
			if stopPending {
				// The stream ended before the reply: wait for it (the
				// runtime answers once the session is torn down).
				select {
				case err := <-stopDone:
					stopPending = false
					d.res.StopErr = err
				case <-ctx.Done():
				case <-deadline:
				}
			}
			d.res.Rundown = RundownComplete
			if d.cp.readErr != nil {
				d.res.Rundown = RundownCut
			}
			return d.finish(false)
		case <-d.cp.failed:
			d.res.Rundown = RundownNotWritten
			d.s.Close()
			return d.finish(true)
		case <-d.cp.over:
			d.res.Rundown = RundownTooLarge
			d.s.Close()
			return d.finish(true)
		case <-rundown:
			d.res.Rundown = RundownTimedOut
			d.s.Close()
			return d.finish(true)
		case <-ctx.Done():
			d.res.Rundown = RundownAbandoned
			d.s.Close()
			return d.finish(true)
		case <-deadline:
			d.res.Rundown, d.res.Deadline = RundownTimedOut, true
			d.s.Close()
			return d.finish(true)
		case <-tick.C:
			d.progress()
		}
	}
}

// abandon closes the connection at once and, when the session was not
// stopped yet, sends a StopTracing with a short bound so that the runtime
// does not keep it (a runtime notices a closed reader only when it next
// writes).
func (d *drain) abandon(ctx context.Context) {
	d.s.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(d.cfg.StopTimeout, abandonStopTimeout))
	defer cancel()
	_ = d.s.Stop(sctx)
}

// finish waits for the copy to end and returns the result. closed says
// whether Drain closed the connection (then its read error is ours, not
// the stream's).
func (d *drain) finish(closed bool) (DrainResult, error) {
	d.s.Close()
	<-d.cp.done
	d.res.Bytes = d.cp.written.Load()
	d.res.rundownTimeout, d.res.maxRundownBytes = d.cfg.RundownTimeout, d.cfg.MaxRundownBytes
	d.res.noRundown = d.s.Config.NoRundown
	if !closed && d.cp.readErr != nil {
		d.res.StreamErr = d.cp.readErr
	}
	return d.res, d.cp.err()
}

// copier copies the session's connection to the output on its own
// goroutine. When the output fails (or the cap or the header check does),
// it signals failed and goes on reading and discarding, so that the
// runtime is never blocked on a full socket while the session is stopped.
type copier struct {
	src io.Reader
	w   io.Writer
	max int64

	written atomic.Int64
	done    chan struct{} // closed when the copy ends
	failed  chan struct{} // closed when the output failed
	once    sync.Once
	// limit, once set (capFrom), is the size past which nothing more is
	// written; over is closed when it is reached.
	limit    atomic.Int64
	over     chan struct{}
	overOnce sync.Once

	// Set before failed (failReason, failErr) or done (readErr) is closed.
	failReason StopReason
	failErr    error
	readErr    error
}

// copyChunk is the read size: large enough that a fast stream costs few
// system calls.
const copyChunk = 1 << 20

// nettraceMagic starts every nettrace stream; the next four bytes are 20
// (the length of "!FastSerialization.1", format V4 and V5) or 0 (V6).
const nettraceMagic = "Nettrace"

func newCopier(src io.Reader, w io.Writer, max int64) *copier {
	return &copier{src: src, w: w, max: max, done: make(chan struct{}), failed: make(chan struct{}), over: make(chan struct{})}
}

// capFrom caps what is written from now on to n more bytes (n < 0: no
// cap).
func (c *copier) capFrom(n int64) {
	if n < 0 {
		return
	}
	c.limit.Store(c.written.Load() + max(n, 1))
}

func (c *copier) fail(r StopReason, err error) {
	c.once.Do(func() {
		c.failReason, c.failErr = r, err
		close(c.failed)
	})
}

// err is Drain's error once the copy has ended.
func (c *copier) err() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

func (c *copier) run() {
	defer close(c.done)
	buf := make([]byte, copyChunk)
	var head [12]byte
	nhead := 0
	failed := false
	over := false
	var total int64
	for {
		n, err := c.src.Read(buf)
		if n > 0 && !failed && !over {
			p := buf[:n]
			if lim := c.limit.Load(); lim > 0 && total+int64(len(p)) >= lim {
				p = p[:max(lim-total, 0)]
				over = true
			}
			if nhead < len(head) {
				nhead += copy(head[nhead:], p)
				if !headerOK(head[:nhead]) {
					c.fail(StopNotNettrace, fmt.Errorf("%w: it starts with %q", ErrNotNettrace, head[:nhead]))
					failed = true
				}
			}
			if !failed {
				capped := c.max > 0 && total+int64(len(p)) > c.max
				if capped {
					p = p[:c.max-total]
				}
				if len(p) > 0 {
					m, werr := c.w.Write(p)
					total += int64(m)
					c.written.Store(total)
					if werr == nil && m < len(p) {
						werr = io.ErrShortWrite
					}
					if werr != nil {
						c.fail(StopWriteError, &OutputError{Written: total, Err: werr})
						failed = true
					}
				}
				if capped && !failed {
					c.fail(StopMaxSize, fmt.Errorf("%w (%d bytes)", ErrMaxBytes, c.max))
					failed = true
				}
			}
			if over && !failed {
				c.overOnce.Do(func() { close(c.over) })
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.readErr = err
			}
			return
		}
	}
}

// headerOK reports whether b can be the start of a nettrace stream.
func headerOK(b []byte) bool {
	n := min(len(b), len(nettraceMagic))
	if string(b[:n]) != nettraceMagic[:n] {
		return false
	}
	if len(b) < 12 {
		return true
	}
	v := uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24
	return v == 20 || v == 0
}
