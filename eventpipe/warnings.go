package eventpipe

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/nettrace"
)

// WarningKind says what a DrainWarning is about.
type WarningKind uint8

// The kinds of DrainWarning, in the order DrainResult.Warnings lists them.
const (
	// WarnDeadline: DrainConfig.MaxTime (or CollectTimeout) passed; the
	// session was closed and the output keeps everything received.
	WarnDeadline WarningKind = iota + 1
	// WarnStopUnacknowledged: the runtime did not answer StopTracing in
	// time (Err is its error); the session was closed.
	WarnStopUnacknowledged
	// WarnRundownTimedOut: the rundown did not end within Limit
	// (DrainConfig.RundownTimeout); the session was closed.
	WarnRundownTimedOut
	// WarnRundownTooLarge: the runtime went on sending past Bytes
	// (DrainConfig.MaxRundownBytes) after the stop; the session was closed.
	WarnRundownTooLarge
	// WarnRundownIncomplete: the session asked for a rundown and the
	// stream does not hold all of it (Rundown says why): methods jitted
	// before the session may stay addresses.
	WarnRundownIncomplete
	// WarnEndedEarly: the target ended the session (it exited or was
	// killed) before it was stopped: the output holds what it sent.
	WarnEndedEarly
	// WarnStreamError: the session stream ended with Err, a read error.
	WarnStreamError
	// WarnDamaged: the consumer of DrainDecode found the stream damaged
	// (Err, a *nettrace.FormatError); the session was stopped there.
	WarnDamaged
)

// DrainWarning is one way a session ended short of what was asked, from
// DrainResult.Warnings. String says it in a sentence; Kind lets a caller
// add its own advice (the flag that sets Limit, for example).
type DrainWarning struct {
	Kind WarningKind
	// Rundown is how the stream ended.
	Rundown RundownState
	// Err is the error behind the warning, when there is one.
	Err error
	// Limit is the time bound that passed (WarnRundownTimedOut).
	Limit time.Duration
	// Bytes is the size bound that was passed (WarnRundownTooLarge).
	Bytes int64
}

// String describes the warning in a sentence without a final period.
func (w DrainWarning) String() string {
	switch w.Kind {
	case WarnDeadline:
		return "the session did not end within its time limit; it was closed, keeping everything received"
	case WarnStopUnacknowledged:
		return fmt.Sprintf("the runtime did not acknowledge the stop (%v); the session was closed, keeping everything received", w.Err)
	case WarnRundownTimedOut:
		return fmt.Sprintf("no end of the rundown after %v; the session was closed and stacks may not be symbolized", w.Limit)
	case WarnRundownTooLarge:
		return fmt.Sprintf("the runtime kept sending after the stop, past %s; the session was closed, keeping what arrived up to that size, and stacks may not be symbolized", sizeText(w.Bytes))
	case WarnRundownIncomplete:
		if w.Rundown == RundownMissing {
			return "no rundown: methods jitted before the session may stay addresses"
		}
		return "rundown " + w.Rundown.String() + ": methods jitted before the session may stay addresses"
	case WarnEndedEarly:
		return "the target ended the session (it exited or was killed): the output holds everything it sent"
	case WarnStreamError:
		return fmt.Sprintf("the session stream ended with: %v", w.Err)
	case WarnDamaged:
		return fmt.Sprintf("the session stream is damaged (%v): what came after the damage is lost", w.Err)
	}
	return "DrainWarning(" + strconv.Itoa(int(w.Kind)) + ")"
}

// Warnings lists what cut the session short of what was asked, in the
// order of the WarningKind constants; none for a session that ran to its
// stop and delivered its whole rundown. Drain's error (an output failure,
// the size cap) is not repeated here.
func (r DrainResult) Warnings() []DrainWarning {
	var ws []DrainWarning
	add := func(w DrainWarning) {
		w.Rundown = r.Rundown
		ws = append(ws, w)
	}
	timedOut := false
	switch {
	case r.Deadline:
		add(DrainWarning{Kind: WarnDeadline})
		timedOut = true
	case r.Rundown == RundownUnacknowledged:
		add(DrainWarning{Kind: WarnStopUnacknowledged, Err: r.StopErr})
	case r.Rundown == RundownTimedOut:
		add(DrainWarning{Kind: WarnRundownTimedOut, Limit: r.rundownTimeout})
		timedOut = true
	case r.Rundown == RundownTooLarge:
		bytes := r.maxRundownBytes
		if bytes == 0 {
			bytes = DefaultMaxRundownBytes
		}
		add(DrainWarning{Kind: WarnRundownTooLarge, Bytes: bytes})
	}
	if !r.noRundown && !timedOut {
		switch r.Rundown {
		case RundownMissing, RundownCut, RundownAbandoned, RundownNotWritten:
			add(DrainWarning{Kind: WarnRundownIncomplete})
		}
	}
	if r.Reason == StopEnded || r.Reason == StopTargetExit {
		add(DrainWarning{Kind: WarnEndedEarly})
	}
	if r.StreamErr != nil {
		add(DrainWarning{Kind: WarnStreamError, Err: r.StreamErr})
	}
	if IsDamage(r.DecodeErr) {
		add(DrainWarning{Kind: WarnDamaged, Err: r.DecodeErr})
	}
	return ws
}

// IsDamage reports whether err is a *nettrace.FormatError that is not a
// truncation: the stream holds bytes that do not decode, and nothing after
// them can be read.
func IsDamage(err error) bool {
	var fe *nettrace.FormatError
	return errors.As(err, &fe) && !fe.Truncated()
}

// sizeText writes n bytes for a person, in SI units as every size clrdiag
// shows.
func sizeText(n int64) string { return units.FormatBytes(n) }
