//go:build unix

package eventpipe_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
)

// A Tally counts every event of the stream, the rundown included; with a
// filter it stops the session at the filter's event and reads on to the
// end.
func TestTallyConsumer(t *testing.T) {
	t.Run("stop at an event", func(t *testing.T) {
		_, c := fakeSession(t, runtimeStyle{before: 100, after: 2})
		s := start(t, c)
		f := &eventpipe.EventFilter{Provider: "Fake-Source", Event: "Hello", Payload: map[string]string{"index": "42"}}
		var tally eventpipe.Tally
		var buf bytes.Buffer
		res, err := s.DrainDecode(context.Background(), &buf, eventpipe.DrainConfig{}, tally.Consumer(f))
		if err != nil || res.Reason != eventpipe.StopEvent || res.Rundown != eventpipe.RundownComplete {
			t.Fatalf("%+v %v", res, err)
		}
		if res.DecodeErr != io.EOF && res.DecodeErr != nil {
			t.Fatalf("decode: %v", res.DecodeErr)
		}
		n := hellos(t, buf.Bytes(), false)
		if st := tally.Stats(); tally.Events() != int64(n) || st.Events != int64(n) || !st.Complete || tally.Dropped() != 0 {
			t.Errorf("tally %d events, stats %+v; the file holds %d", tally.Events(), st, n)
		}
		if n != 102 {
			t.Errorf("%d events, want 102 (the stop, then the rundown)", n)
		}
	})
	t.Run("no filter", func(t *testing.T) {
		_, c := fakeSession(t, runtimeStyle{before: 30, after: 3})
		s := start(t, c)
		var tally eventpipe.Tally
		var buf bytes.Buffer
		res, err := s.DrainDecode(context.Background(), &buf, eventpipe.DrainConfig{Duration: 200 * time.Millisecond}, tally.Consumer(nil))
		if err != nil || res.Reason != eventpipe.StopDuration {
			t.Fatalf("%+v %v", res, err)
		}
		if n := hellos(t, buf.Bytes(), false); tally.Events() != int64(n) || n != 33 || tally.Stats().Events != int64(n) {
			t.Errorf("tally %d events (stats %d), the file holds %d, want 33", tally.Events(), tally.Stats().Events, n)
		}
	})
}
