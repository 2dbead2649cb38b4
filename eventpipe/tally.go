package eventpipe

import (
	"bufio"
	"io"
	"sync/atomic"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Tally counts what a session's stream holds while it is collected: a
// status line reads Events and Dropped from another goroutine at any time,
// and Stats once Session.DrainDecode has returned.
type Tally struct {
	events  atomic.Int64
	dropped atomic.Uint64
	stats   nettrace.Stats
}

// Events is the number of events decoded so far.
func (t *Tally) Events() int64 { return t.events.Load() }

// Dropped is the number of events the runtime said it dropped so far.
func (t *Tally) Dropped() uint64 { return t.dropped.Load() }

// Stats is the decoder's nettrace.Stats when the Consumer returned (read
// it after Session.DrainDecode has returned).
func (t *Tally) Stats() nettrace.Stats { return t.stats }

// Consumer returns a Consumer for Session.DrainDecode that decodes the
// whole stream, counting its events in t. With stopAt it also stops the
// collection (StopEvent) at the first event of that filter and reads on:
// the rundown that follows belongs to the trace. It works on its own copy
// of stopAt, as StopAt does.
func (t *Tally) Consumer(stopAt *EventFilter) Consumer {
	return func(r io.Reader, stop func(StopReason)) error {
		filter := stopAt.own()
		rd, err := nettrace.NewReader(bufio.NewReaderSize(r, 1<<20))
		if err != nil {
			return err
		}
		var ev nettrace.Event
		seen := false
		dropped := t.dropped.Load() // stored again only when it changes
		ptrSize := rd.Header().PointerSize
		for {
			if err := rd.ReadEvent(&ev); err != nil {
				t.stats = rd.Stats()
				return err
			}
			t.events.Add(1)
			if d := rd.Stats().DroppedEvents; d != dropped {
				dropped = d
				t.dropped.Store(d)
			}
			if filter != nil && !seen && filter.Match(&ev, ptrSize) {
				seen = true
				stop(StopEvent)
			}
		}
	}
}
