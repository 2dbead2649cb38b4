//go:build unix

package eventpipe_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// level is a named integer, as the CLI's ILogger level.
type level int32

func (l level) String() string { return [...]string{"Trace", "Debug", "Information", "Warning"}[l] }

func TestEventFilterMatch(t *testing.T) {
	p, err := nettrace.AppendPayload(nil, helloMeta.Fields, nettrace.Object{{Name: "index", Value: int32(7)}})
	if err != nil {
		t.Fatal(err)
	}
	ev := &nettrace.Event{Metadata: helloMeta, Payload: p}
	withLevel := func(*nettrace.Event, int) (nettrace.Object, error) {
		return nettrace.Object{{Name: "Level", Value: level(3)}}, nil
	}
	for _, c := range []struct {
		name string
		f    eventpipe.EventFilter
		want bool
	}{
		{"provider", eventpipe.EventFilter{Provider: "fake-source"}, true},
		{"other provider", eventpipe.EventFilter{Provider: "Other"}, false},
		{"name", eventpipe.EventFilter{Provider: "Fake-Source", Event: "hello"}, true},
		{"id", eventpipe.EventFilter{Provider: "Fake-Source", Event: "1"}, true},
		{"other name", eventpipe.EventFilter{Provider: "Fake-Source", Event: "Bye"}, false},
		{"payload", eventpipe.EventFilter{Provider: "Fake-Source", Event: "Hello", Payload: map[string]string{"index": "7"}}, true},
		{"payload name case", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"INDEX": "7"}}, true},
		{"payload other value", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"index": "8"}}, false},
		{"payload no field", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"count": "7"}}, false},
		{"named integer by name", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"Level": "Warning"}, Fields: withLevel}, true},
		{"named integer by number", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"Level": "3"}, Fields: withLevel}, true},
		{"named integer other", eventpipe.EventFilter{Provider: "Fake-Source", Payload: map[string]string{"Level": "2"}, Fields: withLevel}, false},
	} {
		// Twice: the second answer comes from the filter's memory of
		// the metadata.
		for i := range 2 {
			if got := c.f.Match(ev, 8); got != c.want {
				t.Errorf("%s (#%d): %v, want %v", c.name, i, got, c.want)
			}
		}
	}
	if (&eventpipe.EventFilter{Provider: "Fake-Source"}).Match(&nettrace.Event{}, 8) {
		t.Error("an event without metadata matched")
	}
}

// StopAt ends a session at the event, then the rundown arrives.
func TestEventFilterStopAt(t *testing.T) {
	_, c := fakeSession(t, runtimeStyle{before: 100, after: 2})
	s := start(t, c)
	f := &eventpipe.EventFilter{Provider: "Fake-Source", Event: "Hello", Payload: map[string]string{"index": "42"}}
	var buf bytes.Buffer
	res, err := s.DrainDecode(context.Background(), &buf, eventpipe.DrainConfig{}, f.StopAt())
	if err != nil || res.DecodeErr != nil || res.Reason != eventpipe.StopEvent || res.Rundown != eventpipe.RundownComplete {
		t.Fatalf("%+v %v", res, err)
	}
	if n := hellos(t, buf.Bytes(), false); n != 102 {
		t.Errorf("%d events, want 102", n)
	}
}
