package profilertest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Event is one line of the profiler's log: a name such as "load",
// "initialize-for-attach", "attach-complete", "request-detach",
// "detach-succeeded", "final-release" or "unload", then key=value fields.
// Words without '=' are kept in Flags (e.g. "clsid-mismatch").
type Event struct {
	Name   string
	Fields map[string]string
	Flags  []string
	Line   string
}

// ErrBadLog reports a log line the profiler cannot have written.
var ErrBadLog = errors.New("malformed profiler log")

// ParseLog splits a log into events. A final line without its newline is
// still being written and is left out.
func ParseLog(b []byte) ([]Event, error) {
	var evs []Event
	for n := 1; len(b) > 0; n++ {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := string(b[:i])
		b = b[i+1:]
		words := strings.Fields(line)
		if len(words) == 0 {
			return nil, fmt.Errorf("%w: line %d is empty", ErrBadLog, n)
		}
		ev := Event{Name: words[0], Fields: map[string]string{}, Line: line}
		for _, w := range words[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				ev.Fields[k] = v
			} else {
				ev.Flags = append(ev.Flags, w)
			}
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// ReadLog reads and parses the log at path. A log that does not exist yet
// has no events.
func ReadLog(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseLog(b)
}

// HR returns the field hr= as a number.
func (e Event) HR() (uint32, error) {
	s, ok := e.Fields["hr"]
	if !ok {
		return 0, fmt.Errorf("%w: %q has no hr field", ErrBadLog, e.Line)
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: hr: %v", ErrBadLog, e.Line, err)
	}
	return uint32(v), nil
}

// ClientData decodes the client data recorded by an "initialize-for-attach"
// event and checks it against the recorded length.
func (e Event) ClientData() ([]byte, error) {
	if e.Name != "initialize-for-attach" {
		return nil, fmt.Errorf("%w: %q is not an initialize-for-attach event", ErrBadLog, e.Line)
	}
	n, err := strconv.ParseUint(e.Fields["len"], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: len: %v", ErrBadLog, e.Line, err)
	}
	hx, ok := e.Fields["data"]
	if !ok {
		// An empty payload leaves "data=" whose value strings.Cut keeps as "".
		return nil, fmt.Errorf("%w: %q has no data field", ErrBadLog, e.Line)
	}
	data, err := hex.DecodeString(hx)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: data: %v", ErrBadLog, e.Line, err)
	}
	if uint64(len(data)) != n {
		return nil, fmt.Errorf("%w: len=%d but %d data bytes recorded", ErrBadLog, n, len(data))
	}
	return data, nil
}

// Names returns the event names in order.
func Names(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}

// Last returns the last event with the given name.
func Last(evs []Event, name string) (Event, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Name == name {
			return evs[i], true
		}
	}
	return Event{}, false
}

// Count returns how many events have the given name.
func Count(evs []Event, name string) int {
	n := 0
	for _, e := range evs {
		if e.Name == name {
			n++
		}
	}
	return n
}

// WaitLog polls the log at path until done returns true for its events, and
// returns them. It gives up with the context, returning the last events read.
func WaitLog(ctx context.Context, path string, done func([]Event) bool) ([]Event, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		evs, err := ReadLog(path)
		if err != nil {
			return evs, err
		}
		if done(evs) {
			return evs, nil
		}
		select {
		case <-ctx.Done():
			return evs, fmt.Errorf("waiting for the profiler log %s (events so far: %s): %w", path, strings.Join(Names(evs), ", "), ctx.Err())
		case <-tick.C:
		}
	}
}
