package rules

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// WatchConfig configures Watch. The zero value reads counters every second
// and retries a lost session after a second, then up to a minute.
type WatchConfig struct {
	// Interval is the counters' refresh interval; 0 means one second.
	Interval time.Duration
	// Turn, when set, is taken around the commands that open and stop the
	// sessions (counters.FollowConfig.Turn).
	Turn func(ctx context.Context) (release func(), err error)
	// NoCounters leaves the counter triggers to the caller, who feeds
	// them with Sample from a counters session of its own (the monitor's
	// /metrics collector): Watch then opens only the events session.
	NoCounters bool
}

// Run calls Tick every second until ctx ends.
func (e *Engine) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.Tick()
		}
	}
}

// Watch feeds the rules of an added process from sessions of its own: a
// counters session (counters.Follow) for the counter triggers and an
// EventPipe session for the event and ASP.NET triggers, each reopened with
// backoff when it fails, until ctx ends (it then returns ctx.Err()) or the
// process is removed (then nil). A process whose rules need neither
// returns at once.
// The monitor, which already reads counters, calls Sample itself
// (WatchConfig.NoCounters).
func (e *Engine) Watch(ctx context.Context, pid int, wc WatchConfig) error {
	pr := e.proc(pid)
	if pr == nil {
		return fmt.Errorf("%w: %d", ErrNoProcess, pid)
	}
	n := e.Needs(pid)
	if wc.NoCounters {
		n.Counters = nil
	}
	if len(n.Counters) == 0 && len(n.Providers) == 0 {
		return nil
	}
	if wc.Interval <= 0 {
		wc.Interval = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(pr.ctx, cancel) // the process was removed
	defer stop()
	var wg sync.WaitGroup
	if len(n.Counters) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := counters.Config{Specs: n.Counters, RefreshInterval: wc.Interval}
			e.retry(ctx, pr, "counters", func() error {
				return counters.Follow(ctx, pr.target, cfg, counters.FollowConfig{Turn: wc.Turn}, func(u counters.Update) error {
					if u.Sample != nil {
						e.Sample(pid, u.Sample)
					}
					return nil
				})
			})
		}()
	}
	if len(n.Providers) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.retry(ctx, pr, "events", func() error { return e.readEvents(ctx, pr, n.Providers, wc) })
		}()
	}
	wg.Wait()
	if pr.ctx.Err() != nil {
		return nil
	}
	return ctx.Err()
}

// retry runs fn until ctx ends or the process is gone, waiting between
// failures from one second up to a minute.
func (e *Engine) retry(ctx context.Context, pr *proc, what string, fn func() error) {
	backoff := time.Second
	for ctx.Err() == nil {
		pr.mu.Lock()
		gone := pr.gone
		pr.mu.Unlock()
		if gone {
			return
		}
		start := time.Now()
		err := fn()
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		e.log.Warn("collection rule source lost; retrying", "pid", pr.info.PID, "source", what, "error", errString(err), "retryIn", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

func errString(err error) string {
	if err == nil {
		return "the session ended"
	}
	return err.Error()
}

// readEvents runs one EventPipe session of the providers and hands every
// event to Event, until ctx ends or the stream does.
func (e *Engine) readEvents(ctx context.Context, pr *proc, provs []eventpipe.Provider, wc WatchConfig) error {
	start := func() (*eventpipe.Session, error) {
		if wc.Turn != nil {
			release, err := wc.Turn(ctx)
			if err != nil {
				return nil, err
			}
			defer release()
		}
		return eventpipe.Start(ctx, pr.target, eventpipe.Config{Providers: provs, NoRundown: true})
	}
	sess, err := start()
	if err != nil {
		return fmt.Errorf("start the events session: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if wc.Turn == nil {
			_ = sess.Stop(sctx)
		} else if release, err := wc.Turn(sctx); err == nil {
			_ = sess.Stop(sctx)
			release()
		}
		_ = sess.Close()
	}()
	conn := sess.Stream()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stop()
	nr, err := nettrace.NewReaderConfig(conn, nettrace.ReaderConfig{MaxBlockSize: 4 << 20, MaxMetadata: 4096, MaxStackBytes: 16 << 20, MaxThreads: 1 << 16})
	if err != nil {
		return fmt.Errorf("events session: %w", err)
	}
	var ev nettrace.Event
	for {
		err := nr.ReadEvent(&ev)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("events session: %w", err)
		}
		e.Event(pr.info.PID, &ev)
	}
}
