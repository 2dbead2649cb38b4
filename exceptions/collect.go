package exceptions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// DefaultMaxBytes caps a Collect session's stream (ExceptionThrown events
// and the rundown).
const DefaultMaxBytes = 256 << 20

// CollectConfig configures Collect.
type CollectConfig struct {
	// Duration is how long exceptions are collected; 0 means until ctx
	// ends (the exceptions so far are then returned with ctx's error).
	Duration time.Duration
	// MaxBytes caps the session's stream; 0 means DefaultMaxBytes. The
	// exceptions before the cap are kept, with a warning.
	MaxBytes int64
	// BufferSizeMB is the runtime's buffer; 0 means 256.
	BufferSizeMB uint32
	// RundownTimeout bounds the wait for the rundown; 0 means
	// eventpipe.DefaultRundownTimeout.
	RundownTimeout time.Duration
	// Started, when set, is called once the runtime has opened the
	// session: the exceptions thrown from then on are collected.
	Started func()
}

// Providers are the session's providers: the runtime's ExceptionThrown
// events, with stacks (the rundown at the end names their methods).
func Providers() []eventpipe.Provider {
	return []eventpipe.Provider{{Name: clrevents.ProviderRuntime, Keywords: uint64(clrevents.KeywordException), Level: eventpipe.LevelInformational}}
}

// ErrNoStream is returned when the session gives nothing that reads as a
// nettrace stream.
var ErrNoStream = errors.New("exceptions: the session gave no stream")

// Collect lists the exceptions the process throws for cc.Duration: one
// session of Providers and the rundown. The result's warnings say what cut
// it short. When ctx ends first, the exceptions so far are returned with
// ctx's error (the session is stopped, the rundown not awaited).
func Collect(ctx context.Context, t eventpipe.Tracer, cfg Config, cc CollectConfig) (*Result, error) {
	sess, err := eventpipe.Start(ctx, t, eventpipe.Config{Providers: Providers(), BufferSizeMB: cc.BufferSizeMB})
	if err != nil {
		return nil, fmt.Errorf("start the exceptions session: %w", err)
	}
	defer sess.Close()
	if cc.Started != nil {
		cc.Started()
	}
	maxBytes := cc.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	pr, pw := io.Pipe()
	type read struct {
		res *Result
		err error
	}
	done := make(chan read, 1)
	go func() {
		res, err := Read(pr, cfg)
		pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		done <- read{res, err}
	}()
	dc := eventpipe.DrainConfig{Duration: cc.Duration, RundownTimeout: cc.RundownTimeout, MaxBytes: maxBytes}
	if cc.Duration <= 0 {
		dc.MaxTime = -1
		stop := make(chan eventpipe.StopReason, 1)
		dc.Stop = stop
		end := context.AfterFunc(ctx, func() { stop <- eventpipe.StopInterrupt })
		defer end()
	}
	dctx := ctx
	if cc.Duration <= 0 {
		dctx = context.WithoutCancel(ctx)
	}
	res, derr := sess.Drain(dctx, pw, dc)
	pw.CloseWithError(derr)
	rd := <-done
	if rd.res == nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case res.Bytes == 0:
			why := "the stream ended"
			if res.StreamErr != nil {
				why = res.StreamErr.Error()
			}
			return nil, fmt.Errorf("%w: the runtime ended the session before sending anything (%s)", ErrNoStream, why)
		}
		return nil, fmt.Errorf("%w: %w", ErrNoStream, rd.err)
	}
	out := rd.res
	var fe *nettrace.FormatError
	switch {
	case errors.Is(derr, eventpipe.ErrMaxBytes):
		out.Warnings = append(out.Warnings, fmt.Sprintf("the session reached its cap of %d bytes: the exceptions before it are listed", maxBytes))
	case errors.As(rd.err, &fe):
		// Read's own warning says it.
	case derr != nil && ctx.Err() == nil:
		out.Warnings = append(out.Warnings, "the session ended with an error: "+derr.Error())
	}
	if res.Reason == eventpipe.StopEnded {
		out.Warnings = append(out.Warnings, "the process ended the session before the duration (it exited?): the exceptions it sent are listed")
	}
	switch res.Rundown {
	case eventpipe.RundownComplete:
	case eventpipe.RundownMissing:
		out.Warnings = append(out.Warnings, "no rundown: the frames of methods jitted before the session are left out")
	default:
		out.Warnings = append(out.Warnings, "rundown "+res.Rundown.String()+": the frames of some methods may be left out")
	}
	if out.Dropped > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d exceptions past the first %d were counted, not listed", out.Dropped, len(out.Exceptions)+out.Filtered))
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, nil
}
