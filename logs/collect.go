package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// CollectConfig says how long Collect runs. The zero value runs until the
// context ends.
type CollectConfig struct {
	// Duration ends the collection; 0 means when ctx ends.
	Duration time.Duration
	// BufferSizeMB is the session's buffer; 0 means the eventpipe default.
	BufferSizeMB uint32
	// Started, when set, is called once the session is open (to resume a
	// runtime paused at startup).
	Started func(ctx context.Context) error
}

// readerLimits bound what a logs session's reader keeps.
func readerLimits() nettrace.ReaderConfig {
	return nettrace.ReaderConfig{MaxBlockSize: 4 << 20, MaxMetadata: 4096, MaxStackBytes: 16 << 20, MaxThreads: 1 << 16}
}

// Collect opens a logs session in the target and calls emit with every
// entry cfg allows until cc.Duration passes (nil), ctx ends (the session
// is stopped and ctx.Err() returned), the process ends its session (nil)
// or emit fails (its error). Entries are delivered as they arrive.
func Collect(ctx context.Context, t eventpipe.Tracer, cfg Config, cc CollectConfig, emit func(*Entry) error) error {
	sess, err := eventpipe.Start(ctx, t, eventpipe.Config{Providers: cfg.Providers(), NoRundown: true, BufferSizeMB: cc.BufferSizeMB})
	if err != nil {
		return fmt.Errorf("start the logs session: %w", err)
	}
	defer sess.Close()
	if cc.Started != nil {
		if err := cc.Started(ctx); err != nil {
			return err
		}
	}
	stop := make(chan eventpipe.StopReason, 2)
	pr, pw := io.Pipe()
	var emitErr, readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		emitErr, readErr = decodeStream(pr, NewDecoder(cfg), emit)
		var fe *nettrace.FormatError
		switch {
		case emitErr != nil:
			select {
			case stop <- eventpipe.StopWriteError:
			default:
			}
		case errors.As(readErr, &fe) && !fe.Truncated():
			// Nothing after damage can be read: stop at once.
			select {
			case stop <- eventpipe.StopDamaged:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	// Ending ctx stops the session politely (the runtime is told), within
	// the stop bounds below.
	interrupt := context.AfterFunc(ctx, func() {
		select {
		case stop <- eventpipe.StopInterrupt:
		default:
		}
	})
	defer interrupt()
	res, derr := sess.Drain(context.WithoutCancel(ctx), pw, eventpipe.DrainConfig{
		Duration: cc.Duration, Stop: stop, StopTimeout: 5 * time.Second, RundownTimeout: 10 * time.Second, MaxTime: -1,
	})
	pw.Close()
	<-done
	switch {
	case emitErr != nil:
		return emitErr
	case derr != nil:
		return fmt.Errorf("logs: %w", derr)
	case ctx.Err() != nil:
		return ctx.Err()
	case readErr != nil && res.Reason != eventpipe.StopEnded:
		return fmt.Errorf("logs: %w", readErr)
	}
	return nil
}

// decodeStream decodes a logs session's nettrace stream, returning emit's
// error or the read error (nil at a clean end).
func decodeStream(r io.Reader, d *Decoder, emit func(*Entry) error) (emitErr, readErr error) {
	nr, err := nettrace.NewReaderConfig(r, readerLimits())
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil
		}
		return nil, err
	}
	var ev nettrace.Event
	for {
		err := nr.ReadEvent(&ev)
		if err != nil {
			if ferr := d.Flush(emit); ferr != nil {
				return ferr, nil
			}
			if err == io.EOF {
				return nil, nil
			}
			return nil, err
		}
		if err := d.Decode(&ev, emit); err != nil {
			return err, nil
		}
	}
}

// ReadTrace decodes the logs in a saved nettrace stream (a trace collected
// with the Logs profile or these providers).
func ReadTrace(r io.Reader, cfg Config, emit func(*Entry) error) error {
	emitErr, readErr := decodeStream(r, NewDecoder(cfg), emit)
	if emitErr != nil {
		return emitErr
	}
	return readErr
}
