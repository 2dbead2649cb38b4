package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/spf13/cobra"
)

func init() { registerTrace(newTraceEventsCmd) }

// eventFilter selects events by provider and by event id or name. Values of
// one kind are alternatives; the two kinds must both match when given.
type eventFilter struct {
	providers []string
	ids       []uint32
	names     []string
	cache     map[*nettrace.Metadata]bool
}

func newEventFilter(providers, events []string) (*eventFilter, error) {
	f := &eventFilter{cache: map[*nettrace.Metadata]bool{}}
	for _, p := range providers {
		f.providers = append(f.providers, strings.ToLower(p))
	}
	for _, ev := range events {
		if id, err := strconv.ParseUint(ev, 10, 32); err == nil {
			f.ids = append(f.ids, uint32(id))
			continue
		}
		if ev == "" {
			return nil, fmt.Errorf("--event needs an event id (a number) or an event name")
		}
		f.names = append(f.names, strings.ToLower(ev))
	}
	return f, nil
}

func (f *eventFilter) match(md *nettrace.Metadata) bool {
	if ok, seen := f.cache[md]; seen {
		return ok
	}
	ok := len(f.providers) == 0
	for _, p := range f.providers {
		ok = ok || strings.ToLower(md.ProviderName) == p
	}
	if len(f.ids) > 0 || len(f.names) > 0 {
		evOK := false
		for _, id := range f.ids {
			evOK = evOK || md.EventID == id
		}
		for _, n := range f.names {
			evOK = evOK || (md.EventName != "" && strings.ToLower(md.EventName) == n)
		}
		ok = ok && evOK
	}
	f.cache[md] = ok
	return ok
}

// jsonEvent is one line of clrdiag trace events --json.
type jsonEvent struct {
	Timestamp       time.Time       `json:"timestamp"`
	Provider        string          `json:"provider"`
	EventID         uint32          `json:"eventID"`
	EventName       string          `json:"eventName"`
	Version         uint32          `json:"version"`
	ThreadID        uint64          `json:"threadID"`
	CaptureThreadID uint64          `json:"captureThreadID"`
	Sequence        uint32          `json:"sequence,omitempty"`
	ActivityID      *nettrace.GUID  `json:"activityID,omitempty"`
	StackFrames     int             `json:"stackFrames,omitempty"`
	PayloadSize     int             `json:"payloadSize"`
	Payload         nettrace.Object `json:"payload"`
	PayloadError    string          `json:"payloadError,omitempty"`
}

func newTraceEventsCmd(e *env) *cobra.Command {
	var (
		asJSON    bool
		providers []string
		events    []string
		limit     int
	)
	cmd := &cobra.Command{
		Use:   "events FILE",
		Short: "Print the events of a nettrace/netperf file, one per line, with decoded payloads",
		Long: "Print the events of a trace file (or standard input with -), one per line: time,\n" +
			"provider, event name and id, thread and the decoded payload fields of\n" +
			"self-describing events (EventSource, EventCounters, TraceLogging). The runtime's\n" +
			"own events carry no field metadata; their payload size is shown instead.\n\n" +
			"--provider and --event may be repeated; --event takes an id or a name.\n" +
			"A damaged or truncated trace prints every complete event, then exits with status 5.",
		Example: "  clrdiag trace events app.nettrace --provider System.Runtime --event EventCounters\n" +
			"  clrdiag trace events - --json --limit 100 < app.nettrace",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErrorf("--limit must be 0 (no limit) or more, got %d", limit)
			}
			filter, err := newEventFilter(providers, events)
			if err != nil {
				return usageError(err)
			}
			in, name, closeIn, err := openTraceInput(e, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			r, err := nettrace.NewReader(in)
			if err != nil {
				return headerError(name, err)
			}
			return printEvents(cmd, e.stdout, r, filter, limit, asJSON, args[0] == "-", name)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per line")
	fl.StringArrayVar(&providers, "provider", nil, "only events of this provider (repeatable, case-insensitive)")
	fl.StringArrayVar(&events, "event", nil, "only events with this id or name (repeatable)")
	fl.IntVar(&limit, "limit", 0, "stop after this many events (0: no limit)")
	return cmd
}

func printEvents(cmd *cobra.Command, out io.Writer, r *nettrace.Reader, f *eventFilter, limit int, asJSON, stream bool, name string) error {
	bw := bufio.NewWriterSize(out, 64<<10)
	defer bw.Flush()
	var jbuf bytes.Buffer
	enc := json.NewEncoder(&jbuf)
	enc.SetEscapeHTML(false)
	ctx := cmd.Context()
	var ev nettrace.Event
	printed := 0
	var line []byte
	for n := 0; ; n++ {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			bw.Flush()
			return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w (%d matching events before the damage were printed)", name, err, printed)}
		}
		if n%4096 == 0 && ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if !f.match(ev.Metadata) {
			continue
		}
		md := ev.Metadata
		var payload nettrace.Object
		var perr error
		if len(md.Fields) > 0 {
			payload, perr = ev.Fields()
		}
		if asJSON {
			je := jsonEvent{
				Timestamp: ev.Time().UTC(), Provider: md.ProviderName, EventID: md.EventID, EventName: md.EventName,
				Version: md.Version, ThreadID: ev.ThreadID, CaptureThreadID: ev.CaptureThreadID, Sequence: ev.SequenceNumber,
				StackFrames: ev.StackLen(), PayloadSize: len(ev.Payload), Payload: payload,
			}
			if !ev.ActivityID.IsZero() {
				a := ev.ActivityID
				je.ActivityID = &a
			}
			if perr != nil {
				je.PayloadError = perr.Error()
			}
			jbuf.Reset()
			if err := enc.Encode(&je); err != nil {
				return err
			}
			bw.Write(termsafe.JSON(jbuf.Bytes()))
		} else {
			line = appendEventLine(line[:0], &ev, payload, perr)
			bw.Write(line)
		}
		printed++
		if stream {
			bw.Flush() // live input: show each event as it arrives
		}
		if limit > 0 && printed >= limit {
			return nil
		}
	}
}

// appendEventLine formats one event for the text output.
func appendEventLine(b []byte, ev *nettrace.Event, payload nettrace.Object, perr error) []byte {
	md := ev.Metadata
	b = ev.Time().UTC().AppendFormat(b, "2006-01-02T15:04:05.0000000Z")
	b = append(b, "  "...)
	b = termsafe.AppendString(b, md.ProviderName)
	b = append(b, "  "...)
	if md.EventName != "" {
		b = termsafe.AppendString(b, md.EventName)
	} else {
		b = append(b, "Event"...)
	}
	b = append(b, '(')
	b = strconv.AppendUint(b, uint64(md.EventID), 10)
	b = append(b, ")  thread="...)
	b = strconv.AppendUint(b, ev.ThreadID, 10)
	switch {
	case perr != nil:
		b = append(b, "  payload error: "...)
		b = termsafe.AppendString(b, perr.Error())
	case payload != nil:
		for _, nv := range payload {
			b = append(b, "  "...)
			b = appendField(b, nv.Name, nv.Value)
		}
	default:
		b = append(b, "  payload="...)
		b = strconv.AppendInt(b, int64(len(ev.Payload)), 10)
		b = append(b, " bytes"...)
	}
	return append(b, '\n')
}

func appendField(b []byte, name string, v any) []byte {
	if name != "" {
		b = termsafe.AppendString(b, name)
		b = append(b, '=')
	}
	switch x := v.(type) {
	case string:
		return strconv.AppendQuote(b, x)
	case nettrace.Object:
		b = append(b, '{')
		for i, nv := range x {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendField(b, nv.Name, nv.Value)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendField(b, "", e)
		}
		return append(b, ']')
	case []byte:
		return fmt.Appendf(b, "%x", x)
	case time.Time:
		return x.UTC().AppendFormat(b, time.RFC3339Nano)
	}
	return fmt.Append(b, v)
}
