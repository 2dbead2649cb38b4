package counters

import (
	"context"
	"errors"
	"fmt"
)

// FollowConfig configures Follow. The zero value reopens a stalled session
// at once, as often as it stalls.
type FollowConfig struct {
	// Turn, when set, is taken around every command Follow sends to the
	// process (starting and stopping sessions): it returns once it is the
	// caller's turn, and a function that ends the turn. A runtime serves
	// one diagnostic command at a time; the monitor serializes its
	// requests to a process this way.
	Turn func(ctx context.Context) (release func(), err error)
	// Started, when set, is called with each session once it is open:
	// the first (reopened false) and each one that replaces a stalled
	// session. An error ends Follow with that error (the session is
	// stopped).
	Started func(s *Session, reopened bool) error
	// Stalled, when set, is called with the error (wrapping ErrStalled)
	// of a session that stopped publishing, before it is stopped and a
	// new one is opened.
	Stalled func(err error)
}

// Follow reads counters from t until ctx ends, calling fn for every update,
// and keeps the values coming across stalls: when a session that published
// values stops publishing (Config.StallTimeout; every session of a .NET
// Core 3.x runtime stalls when another session ends), it is stopped and a
// new one is opened. Stalls are only looked for in .NET Core 3.x (and in a
// runtime whose version is unknown): a later runtime's session is kept
// however long it is quiet (a process stopped for a while, a Meter with no
// measurements), since reopening it would restart what the runtime
// aggregates for it. Stopping the stalled session first is what makes this
// safe: on such a runtime a session that ends stops the counters of every
// other session, including its own replacement. A session that still gets
// counter payloads at another session's interval is not stalled (the
// Decoder adopts that interval with a WarnIntervalChanged warning), so two
// tools never keep reopening each other's counters.
//
// Follow returns ctx.Err() when ctx ends (after stopping the session), the
// error of a session that could not be opened (wrapping the stall's too
// when it was to replace a stalled one: a .NET Core 3.1 runtime before
// 3.1.9 can deadlock its EventCounters and its diagnostic server when
// sessions start and stop, dotnet/runtime#40190), nil when the stream ends
// cleanly (the runtime ended the session), an error wrapping ErrStreamCut
// when it is cut off, and fn's or Started's error.
func Follow(ctx context.Context, t Target, cfg Config, fc FollowConfig, fn func(Update) error) error {
	var stall error
	for reopened := false; ; reopened = true {
		s, err := fc.start(ctx, t, cfg)
		if err != nil {
			if stall != nil && ctx.Err() == nil {
				return fmt.Errorf("%w, and reopening the session failed: %w", stall, err)
			}
			return err
		}
		if cfg.RuntimeMajor == 0 {
			cfg.RuntimeMajor = s.RuntimeMajor // ask once
		}
		if fc.Started != nil {
			if err := fc.Started(s, reopened); err != nil {
				fc.end(ctx, s)
				return err
			}
		}
		err = s.read(ctx, fn)
		fc.end(ctx, s)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, ErrStalled) {
			return err
		}
		stall = err
		if fc.Stalled != nil {
			fc.Stalled(err)
		}
	}
}

func (fc *FollowConfig) start(ctx context.Context, t Target, cfg Config) (*Session, error) {
	if fc.Turn != nil {
		release, err := fc.Turn(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return Start(ctx, t, cfg)
}

// end stops the session in the caller's turn (giving up after stopTimeout:
// the runtime then ends the session when it notices the closed
// connection) and closes it.
func (fc *FollowConfig) end(ctx context.Context, s *Session) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if fc.Turn == nil {
		_ = s.Stop(sctx)
	} else if release, err := fc.Turn(sctx); err == nil {
		_ = s.Stop(sctx)
		release()
	}
	_ = s.Close()
}
