package counters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Target is the process a session reads; *diag.Client implements it.
type Target interface {
	eventpipe.Tracer
	ProcessInfo(ctx context.Context) (*ipc.ProcessInfo, error)
}

// ErrStreamCut is wrapped by the error of Run and ReadTrace when the event
// stream stops in the middle (the target exited or was killed, the
// connection broke, or a file was cut).
var ErrStreamCut = errors.New("counters: the event stream was cut off")

// MaxBlockSize bounds a block of a counters session's stream. A runtime
// writes blocks of at most about 100 KiB, and counter events are small; a
// larger block is refused as damage before it is read, so a broken or
// hostile peer cannot make a long-lived session (the monitor's /metrics
// keeps one per process) allocate the nettrace reader's default 64 MiB.
const MaxBlockSize = 1 << 20

// readerLimits bound what a counters session's reader keeps, for the same
// reason: a runtime's counters session has tens of metadata records, a
// handful of stacks per sequence-point region and a few writing threads.
func readerLimits() nettrace.ReaderConfig {
	return nettrace.ReaderConfig{MaxBlockSize: MaxBlockSize, MaxMetadata: 4096, MaxStackBytes: 16 << 20, MaxThreads: 4096}
}

// ErrStalled is wrapped by the error of Run when a session that published
// counter values stopped publishing for Config.StallTimeout. A .NET Core
// 3.x runtime stops the EventCounters of every session when any one of
// them ends (another tool's, or another session of this process); a new
// session starts them again (Follow reopens it).
var ErrStalled = errors.New("counters: no counter values")

// stallGrace is added to two refresh intervals to make the default stall
// timeout.
const stallGrace = 2 * time.Second

// stallAfter is the stall timeout of the configuration for a session
// refreshed every interval in a runtime of the given major version (0:
// unknown); 0 means no detection. Only .NET Core 3.x stops a session's
// counters when another session ends: a later runtime's session is never
// reopened, which would lose what the runtime aggregates for it (an
// UpDownCounter restarts from 0) for no gain.
func (c *Config) stallAfter(interval time.Duration, major int) time.Duration {
	switch {
	case c.StallTimeout < 0, major >= 5:
		return 0
	case c.StallTimeout > 0:
		return c.StallTimeout
	}
	return 2*interval + stallGrace
}

// stopTimeout bounds the StopTracing a cancelled Run sends: a runtime has
// been seen not to answer it.
const stopTimeout = 3 * time.Second

// processInfoTimeout bounds the version query of Start.
const processInfoTimeout = 5 * time.Second

// Session is a running counters session in a target process.
type Session struct {
	// Plan is what was enabled in the target.
	Plan *Plan
	// RuntimeVersion is the target's ClrProductVersion, "" when it does
	// not report one (.NET 5 and earlier) or Config.RuntimeMajor was set.
	RuntimeVersion string
	// RuntimeMajor is the target's major version as far as it is known:
	// Config.RuntimeMajor, the major of RuntimeVersion, 3 for a runtime
	// that does not know ProcessInfo (.NET Core 3.x), 5 for one that
	// answers it without a version; 0 when unknown.
	RuntimeMajor int
	// Warnings lists what EventPipe gave up to fit the runtime.
	Warnings []string

	ep         *eventpipe.Session
	stallAfter time.Duration // 0: no stall detection
	stopOnce   sync.Once
	stopErr    error
}

// Start enables the counters of cfg in the target. When cfg.RuntimeMajor
// is 0 it first asks the process for its version (ProcessInfo2/3) to decide
// between the shared (.NET 8+) and a private Metrics session; a runtime
// that cannot tell gets a private one.
func Start(ctx context.Context, t Target, cfg Config) (*Session, error) {
	if _, err := NewPlan(cfg); err != nil { // check before talking to the process
		return nil, err
	}
	s := &Session{RuntimeMajor: cfg.RuntimeMajor}
	if cfg.RuntimeMajor == 0 && cfg.SessionID == "" {
		pctx, cancel := context.WithTimeout(ctx, processInfoTimeout)
		info, err := t.ProcessInfo(pctx)
		cancel()
		switch {
		case err == nil:
			s.RuntimeVersion = info.ClrProductVersion
			cfg.RuntimeMajor = RuntimeMajor(info.ClrProductVersion)
			s.RuntimeMajor = cfg.RuntimeMajor
			if s.RuntimeMajor == 0 {
				s.RuntimeMajor = 5 // ProcessInfo without a version
			}
		case errors.Is(err, ipc.ErrUnknownCommand):
			s.RuntimeMajor = 3 // ProcessInfo is .NET 5 and later
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
	}
	plan, err := NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	s.Plan = plan
	ep, err := eventpipe.Start(ctx, t, eventpipe.Config{Providers: plan.Providers, NoRundown: true, BufferSizeMB: cfg.BufferSizeMB})
	if err != nil {
		return nil, fmt.Errorf("counters: start the EventPipe session: %w", err)
	}
	s.ep = ep
	s.Warnings = ep.Warnings
	s.stallAfter = cfg.stallAfter(plan.Interval, s.RuntimeMajor)
	return s, nil
}

// Run reads the session and calls fn for every sample and warning until
// ctx ends (then it stops the session and returns ctx.Err()), the stream
// ends (nil after a clean end, an error wrapping ErrStreamCut if it was
// cut off), the session stalls (an error wrapping ErrStalled; the session
// is still open: Stop or Close it, see Follow) or fn returns an error
// (returned as is; the session keeps running until Stop or Close). Run
// may be called once.
func (s *Session) Run(ctx context.Context, fn func(Update) error) error {
	err := s.read(ctx, fn)
	if ctx.Err() != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		_ = s.Stop(sctx)
		_ = s.ep.Close()
		return ctx.Err()
	}
	return err
}

// read decodes the session until ctx ends (ctx.Err()), the stream ends,
// the session stalls or fn fails, leaving the session open.
func (s *Session) read(ctx context.Context, fn func(Update) error) error {
	conn := s.ep.Stream()
	d := NewDecoder(s.Plan)
	var last atomic.Int64 // when the payload count last grew (UnixNano); 0 before the first
	var stalled atomic.Bool
	interrupt := func() { _ = conn.SetReadDeadline(time.Now()) }
	stop := context.AfterFunc(ctx, interrupt)
	defer stop()
	if s.stallAfter > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(max(s.stallAfter/8, time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case now := <-t.C:
					if l := last.Load(); l != 0 && now.Sub(time.Unix(0, l)) > s.stallAfter {
						stalled.Store(true)
						interrupt()
						return
					}
				}
			}
		}()
	}
	seen := uint64(0)
	err := readTrace(ctx, s.ep, d, func(u Update) error {
		return fn(u)
	}, func() {
		if d.payloads != seen {
			seen = d.payloads
			last.Store(time.Now().UnixNano())
		}
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case stalled.Load():
		return fmt.Errorf("%w for %v", ErrStalled, s.stallAfter)
	}
	return err
}

// Stop asks the runtime to end the session; the stream then ends and Run
// returns. Only the first call talks to the runtime.
func (s *Session) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.ep.Stop(ctx) })
	return s.stopErr
}

// Close closes the session's connection; the runtime then ends the
// session by itself. A Run in progress returns.
func (s *Session) Close() error { return s.ep.Close() }

// ReadTrace decodes a counters session's nettrace stream (live or saved to
// a file) with a Decoder for p and calls fn for every update. It returns
// nil at the end of a complete stream, an error wrapping ErrStreamCut for
// a stream that stops early, fn's error, or ctx.Err() (checked between
// events: a Read blocked in r is not interrupted).
func ReadTrace(ctx context.Context, r io.Reader, p *Plan, fn func(Update) error) error {
	return readTrace(ctx, r, NewDecoder(p), fn, nil)
}

// readTrace is ReadTrace with a decoder of the caller's and a function
// called after each event.
func readTrace(ctx context.Context, r io.Reader, d *Decoder, fn func(Update) error, after func()) error {
	nr, err := nettrace.NewReaderConfig(r, readerLimits())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("counters: read the trace header: %w", classify(err))
	}
	var ev nettrace.Event
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := nr.ReadEvent(&ev)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("counters: read events: %w", classify(err))
		}
		if err := d.Decode(&ev, fn); err != nil {
			return err
		}
		if after != nil {
			after()
		}
	}
}

// classify marks truncation with ErrStreamCut.
func classify(err error) error {
	var fe *nettrace.FormatError
	if errors.As(err, &fe) && fe.Truncated() || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrStreamCut, err)
	}
	return err
}
