package eventpipe

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/nettrace"
)

// EventFilter picks events by provider, event and payload values: the
// stopping event of dotnet-trace (--stopping-event-*) and of
// dotnet-monitor's CollectTrace action (StoppingEvent).
//
// An EventFilter remembers what it decided per metadata record: it is not
// safe for concurrent use.
type EventFilter struct {
	// Provider is the provider's name (case-insensitive); required.
	Provider string
	// Event, when set, is the event's name or id, matched by
	// clrevents.MatchEventName (case-insensitive; the metadata name or
	// its Task part, the runtime's own events by their manifest name,
	// versioned symbol or TraceEvent Task/Opcode name; a number matches
	// the event id).
	Event string
	// Payload, when set, holds values the event's fields must have, as
	// text: a field name (exact, else case-insensitive) and the value
	// as fmt.Sprint writes it; an integer field whose type names its
	// values (a log level) matches by number too.
	Payload map[string]string
	// Fields decodes an event's payload for Payload; nil means
	// clrevents.Fields (self-describing events and the runtime's events
	// known to package clrevents).
	Fields func(ev *nettrace.Event, ptrSize int) (nettrace.Object, error)

	known map[*nettrace.Metadata]bool
}

// Match reports whether ev is one of the filter's events. ptrSize is the
// trace's pointer size (nettrace.Header.PointerSize; 0 means 8).
func (f *EventFilter) Match(ev *nettrace.Event, ptrSize int) bool {
	md := ev.Metadata
	if md == nil {
		return false
	}
	ok, seen := f.known[md]
	if !seen {
		ok = strings.EqualFold(md.ProviderName, f.Provider) &&
			(f.Event == "" || clrevents.MatchEventName(md.ProviderName, md.EventID, md.EventName, f.Event))
		if f.known == nil {
			f.known = map[*nettrace.Metadata]bool{}
		}
		f.known[md] = ok
	}
	if !ok || len(f.Payload) == 0 {
		return ok
	}
	if ptrSize == 0 {
		ptrSize = 8
	}
	decode := f.Fields
	if decode == nil {
		decode = clrevents.Fields
	}
	fields, err := decode(ev, ptrSize)
	if err != nil {
		return false
	}
	for name, want := range f.Payload {
		v, ok := fields.Get(name)
		if !ok {
			for _, nv := range fields {
				if strings.EqualFold(nv.Name, name) {
					v, ok = nv.Value, true
					break
				}
			}
		}
		if !ok || !valueIs(v, want) {
			return false
		}
	}
	return true
}

// ParsePayload reads a payload filter written name:value,name:value (the
// syntax of dotnet-trace's --stopping-event-payload-filter) into
// EventFilter.Payload; "" gives nil.
func ParsePayload(s string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: use name:value,name:value", s)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}

// valueIs compares a field's value with the text of a filter.
func valueIs(v any, want string) bool {
	if fmt.Sprint(v) == want {
		return true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("%d", v) == want // a named integer by number
	}
	return false
}

// own returns a copy of f that learns a stream's metadata (which events
// match) afresh, for one Consumer; nil for a nil f. Metadata belongs to
// one stream, and the copy lets sessions that run at the same time share
// a filter.
func (f *EventFilter) own() *EventFilter {
	if f == nil {
		return nil
	}
	c := *f
	c.known = nil
	return &c
}

// StopAt is a Consumer for Session.DrainDecode that decodes the stream
// and stops the collection (StopEvent) at the first event of the filter.
// It returns once it has seen it, or with the decoder's error. Each
// Consumer works on its own copy of f: one filter can serve sessions that
// run at the same time.
func (f *EventFilter) StopAt() Consumer {
	return func(r io.Reader, stop func(StopReason)) error {
		f := f.own()
		rd, err := nettrace.NewReader(bufio.NewReaderSize(r, 1<<16))
		if err != nil {
			return err
		}
		ptr := rd.Header().PointerSize
		var ev nettrace.Event
		for {
			if err := rd.ReadEvent(&ev); err != nil {
				return err
			}
			if f.Match(&ev, ptr) {
				stop(StopEvent)
				return nil
			}
		}
	}
}
