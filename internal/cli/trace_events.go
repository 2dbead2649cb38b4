package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/spf13/cobra"
)

func init() { registerTrace("events", newTraceEventsCmd) }

// eventFilter selects events by provider and by event id or name. Values of
// one kind are alternatives; the two kinds must both match when given. It
// also names each kind of event once: everything it learns is cached per
// metadata record, in a slice indexed by Metadata.Index, so nothing is
// looked up in a map or formatted per event.
type eventFilter struct {
	providers []string
	events    []string
	byIndex   []*eventKind                      // by Metadata.Index
	others    map[*nettrace.Metadata]*eventKind // records without an Index
	kinds     []*eventKind                      // every kind seen
	// next's state: the last event's kind, events read.
	lastMD *nettrace.Metadata
	last   *eventKind
	n      uint
}

// eventKind is what the filter knows of one metadata record.
type eventKind struct {
	provider string
	id       uint32
	// name is the metadata's name or, for the runtime's own events, the
	// clrevents table's; "" when unknown.
	name string
	// native: the payload layout comes from the clrevents table.
	native bool
	match  bool
	seen   int64
}

func newEventFilter(providers, events []string) (*eventFilter, error) {
	f := &eventFilter{}
	for _, p := range providers {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("--provider needs a provider name")
		}
		f.providers = append(f.providers, strings.TrimSpace(p))
	}
	for _, ev := range events {
		if strings.TrimSpace(ev) == "" {
			return nil, fmt.Errorf("--event needs an event id (a number) or an event name")
		}
		f.events = append(f.events, strings.TrimSpace(ev))
	}
	return f, nil
}

// active reports whether the filter selects anything less than everything.
func (f *eventFilter) active() bool { return len(f.providers) > 0 || len(f.events) > 0 }

// kind returns the cached description of md, computing it the first time.
func (f *eventFilter) kind(md *nettrace.Metadata) *eventKind {
	if i := md.Index(); i > 0 && i < len(f.byIndex) && f.byIndex[i] != nil {
		return f.byIndex[i]
	}
	return f.newKind(md)
}

func (f *eventFilter) newKind(md *nettrace.Metadata) *eventKind {
	if k := f.others[md]; k != nil {
		return k
	}
	k := &eventKind{provider: md.ProviderName, id: md.EventID,
		name: clrevents.EventName(md.ProviderName, md.EventID, md.EventName)}
	if len(md.Fields) == 0 && md.EventID <= 0xFFFF {
		info, ok := clrevents.Lookup(md.ProviderName, uint16(md.EventID))
		k.native = ok && info.HasLayout()
	}
	k.match = len(f.providers) == 0
	for _, p := range f.providers {
		k.match = k.match || strings.EqualFold(md.ProviderName, p)
	}
	if len(f.events) > 0 {
		evOK := false
		for _, want := range f.events {
			evOK = evOK || clrevents.MatchEventName(md.ProviderName, md.EventID, md.EventName, want)
		}
		k.match = k.match && evOK
	}
	f.kinds = append(f.kinds, k)
	if i := md.Index(); i > 0 {
		if i >= len(f.byIndex) {
			f.byIndex = append(f.byIndex, make([]*eventKind, i+1-len(f.byIndex))...)
		}
		f.byIndex[i] = k
	} else {
		if f.others == nil {
			f.others = map[*nettrace.Metadata]*eventKind{}
		}
		f.others[md] = k
	}
	return k
}

// next reads events until one passes the filter, counting every kind it
// sees, and returns that event's kind: the loop over the events a filter
// skips, kept small so that it costs little over decoding them. The
// verdict is kept for the last kind of event (runs of one kind are the
// rule). It returns ctx's error, checked every 4096 events.
func (f *eventFilter) next(ctx context.Context, r *nettrace.Reader, ev *nettrace.Event) (*eventKind, error) {
	for {
		if err := r.ReadEvent(ev); err != nil {
			return nil, err
		}
		k := f.last
		if ev.Metadata != f.lastMD {
			k = f.kind(ev.Metadata)
			f.last, f.lastMD = k, ev.Metadata
		}
		k.seen++
		if f.n++; f.n&4095 == 0 && ctx != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if k.match {
			return k, nil
		}
	}
}

// noMatch explains a filter that matched no event: which providers, or
// which events of the selected providers, the input does have.
func (f *eventFilter) noMatch(what string) error {
	type count struct {
		label string
		n     int64
	}
	sum := func(key func(k *eventKind) (string, bool)) []count {
		m := map[string]int64{}
		for _, k := range f.kinds {
			if label, ok := key(k); ok && k.seen > 0 {
				m[label] += k.seen
			}
		}
		out := make([]count, 0, len(m))
		for l, n := range m {
			out = append(out, count{l, n})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].n != out[j].n {
				return out[i].n > out[j].n
			}
			return out[i].label < out[j].label
		})
		return out
	}
	list := func(cs []count) string {
		var b strings.Builder
		for i, c := range cs {
			if i == 30 {
				fmt.Fprintf(&b, ", and %d more", len(cs)-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%d)", termsafe.String(c.label), c.n)
		}
		return b.String()
	}
	var filters []string
	for _, p := range f.providers {
		filters = append(filters, "--provider "+p)
	}
	for _, e := range f.events {
		filters = append(filters, "--event "+e)
	}
	msg := fmt.Sprintf("no event of %s matched %s", what, strings.Join(filters, " "))
	providerOK := func(k *eventKind) bool {
		if len(f.providers) == 0 {
			return true
		}
		for _, p := range f.providers {
			if strings.EqualFold(k.provider, p) {
				return true
			}
		}
		return false
	}
	byProvider := sum(func(k *eventKind) (string, bool) { return k.provider, true })
	events := sum(func(k *eventKind) (string, bool) {
		if !providerOK(k) {
			return "", false
		}
		label := k.name
		if label == "" {
			label = "Event"
		}
		label += "(" + strconv.FormatUint(uint64(k.id), 10) + ")"
		if len(f.providers) != 1 {
			label = k.provider + "/" + label
		}
		return label, true
	})
	switch {
	case len(byProvider) == 0:
		msg += "; it holds no events"
	case len(events) == 0:
		msg += "; its providers (events) are: " + list(byProvider)
	default:
		msg += "; its events"
		if len(f.providers) > 0 {
			msg += " of " + strings.Join(f.providers, ", ")
		}
		msg += " (count) are: " + list(events) + " (--event takes a name, a Task/Opcode name such as GC/Start, or an id)"
	}
	return &ExitError{Code: exitFailure, Err: errors.New(msg)}
}

// jsonEvent is one line of clrdiag trace events --json.
type jsonEvent struct {
	Timestamp       jsonTime        `json:"timestamp"`
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
	// PayloadRaw is the payload in hexadecimal when it has no known
	// layout or does not match it.
	PayloadRaw string `json:"payloadRaw,omitempty"`
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
			"provider, event name and id, thread and the decoded payload fields. Self-describing\n" +
			"events (EventSource, EventCounters, TraceLogging) are decoded with the trace's own\n" +
			"field metadata; the runtime's own events (Microsoft-Windows-DotNETRuntime, its\n" +
			"Rundown, Private and Stress providers, the SampleProfiler) carry none, and are\n" +
			"named and decoded from clrdiag's copy of the runtime manifest (GCStart,\n" +
			"MethodDCEndVerbose, ExceptionThrown...). Addresses, ids and flags print in\n" +
			"hexadecimal (JSON strings \"0x...\"). An event nobody knows prints as Event(N)\n" +
			"with its raw payload in hexadecimal (--json: payloadRaw).\n\n" +
			"--provider and --event may be repeated; --event takes an id, a name (GCStart,\n" +
			"ExceptionThrown_V1) or a Task/Opcode name as TraceEvent and dotnet-trace write\n" +
			"them (GC/Start, Method/JittingStarted). When the filters match no event, the\n" +
			"command says on stderr which providers and events the trace does have and exits\n" +
			"with status 1 (as grep does). A damaged or truncated trace prints every complete\n" +
			"event, then exits with status 5.",
		Example: "  clrdiag trace events app.nettrace --provider System.Runtime --event EventCounters\n" +
			"  clrdiag trace events app.nettrace --provider Microsoft-Windows-DotNETRuntime --event GCStart\n" +
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
			return printEvents(cmd.Context(), e.stdout, r, filter, limit, asJSON, args[0] == "-", name)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per line")
	fl.StringArrayVar(&providers, "provider", nil, "only events of this provider (repeatable, case-insensitive)")
	fl.StringArrayVar(&events, "event", nil, "only events with this id or name (repeatable)")
	fl.IntVar(&limit, "limit", 0, "stop after this many events (0: no limit)")
	return cmd
}

func printEvents(ctx context.Context, out io.Writer, r *nettrace.Reader, f *eventFilter, limit int, asJSON, stream bool, name string) error {
	bw := bufio.NewWriterSize(out, 64<<10)
	defer bw.Flush()
	var jbuf bytes.Buffer
	enc := json.NewEncoder(&jbuf)
	enc.SetEscapeHTML(false)
	ptrSize := r.Header().PointerSize
	var ev nettrace.Event
	printed := 0
	var line []byte
	for {
		k, err := f.next(ctx, r, &ev)
		if err != nil {
			if err == io.EOF {
				if printed == 0 && f.active() {
					bw.Flush()
					return f.noMatch(name)
				}
				return nil
			}
			bw.Flush()
			if ctx != nil && err == ctx.Err() {
				return err // cut short between two events
			}
			if ierr := interruptedError(ctx, name, err); ierr != nil {
				return ierr
			}
			return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w (%d matching events before the damage were printed)", name, err, printed)}
		}
		payload, perr := eventPayload(&ev, k, ptrSize)
		raw := perr != nil || (payload == nil && len(ev.Payload) > 0)
		if asJSON {
			md := ev.Metadata
			je := jsonEvent{
				Timestamp: jsonTime{ev.Time().UTC()}, Provider: md.ProviderName, EventID: md.EventID, EventName: k.name,
				Version: clrevents.EventVersion(&ev), ThreadID: ev.ThreadID, CaptureThreadID: ev.CaptureThreadID, Sequence: ev.SequenceNumber,
				StackFrames: ev.StackLen(), PayloadSize: len(ev.Payload), Payload: payload,
			}
			if !ev.ActivityID.IsZero() {
				a := ev.ActivityID
				je.ActivityID = &a
			}
			if perr != nil {
				je.PayloadError = perr.Error()
			}
			if raw {
				je.PayloadRaw = hex.EncodeToString(ev.Payload)
			}
			jbuf.Reset()
			if err := enc.Encode(&je); err != nil {
				return err
			}
			bw.Write(termsafe.JSON(jbuf.Bytes()))
		} else {
			line = appendEventLine(line[:0], &ev, k.name, payload, perr, raw)
			bw.Write(line)
		}
		printed++
		if stream {
			// Live input: show each event as it arrives, and notice at
			// once an output that went away.
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		if limit > 0 && printed >= limit {
			return nil
		}
	}
}

// loggingProvider is the EventSource of Microsoft.Extensions.Logging's
// EventSourceLogger (ILogger messages in a trace).
const loggingProvider = logs.Provider

// logLevel is the Level field of a Microsoft-Extensions-Logging event: an
// ILogger LogLevel (Trace 0 ... Warning 3 ... None 6), which is not the
// EventSource level of the event (there 3 would be Warning too, but 4 is
// Informational where ILogger's 4 is Error). It shows as ILogger's name
// (logs.Level), in text and in JSON.
type logLevel int32

func (l logLevel) String() string { return logs.Level(l).String() }

// MarshalText formats l as its name (used by JSON encoding).
func (l logLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// selfDescribingFields decodes the payload of an event that carries its
// field metadata, naming the ILogger level of Microsoft-Extensions-Logging.
func selfDescribingFields(ev *nettrace.Event) (nettrace.Object, error) {
	obj, err := ev.Fields()
	if err != nil || ev.Metadata.ProviderName != loggingProvider {
		return obj, err
	}
	for i, nv := range obj {
		if lv, ok := nv.Value.(int32); ok && nv.Name == "Level" {
			obj[i].Value = logLevel(lv)
		}
	}
	return obj, nil
}

// eventFields decodes an event's payload (clrevents.Fields), naming the
// ILogger level of Microsoft-Extensions-Logging. ptrSize is the trace's
// pointer size.
func eventFields(ev *nettrace.Event, ptrSize int) (nettrace.Object, error) {
	if len(ev.Metadata.Fields) > 0 {
		return selfDescribingFields(ev)
	}
	return clrevents.Fields(ev, ptrSize)
}

// eventPayload is eventFields with what the filter cached about the event.
func eventPayload(ev *nettrace.Event, k *eventKind, ptrSize int) (nettrace.Object, error) {
	if len(ev.Metadata.Fields) > 0 {
		return selfDescribingFields(ev)
	}
	if !k.native {
		return nil, nil
	}
	return clrevents.NativeFields(ev, ptrSize)
}

// maxRawText bounds the payload bytes shown in hexadecimal on a text line.
const maxRawText = 256

// appendEventLine formats one event for the text output.
func appendEventLine(b []byte, ev *nettrace.Event, name string, payload nettrace.Object, perr error, raw bool) []byte {
	md := ev.Metadata
	b = ev.Time().UTC().AppendFormat(b, "2006-01-02T15:04:05.0000000Z")
	b = append(b, "  "...)
	b = termsafe.AppendString(b, md.ProviderName)
	b = append(b, "  "...)
	if name != "" {
		b = termsafe.AppendString(b, name)
	} else {
		b = append(b, "Event"...)
	}
	b = append(b, '(')
	b = strconv.AppendUint(b, uint64(md.EventID), 10)
	b = append(b, ")  thread="...)
	b = strconv.AppendUint(b, ev.ThreadID, 10)
	if perr != nil {
		b = append(b, "  payload error: "...)
		b = termsafe.AppendString(b, perr.Error())
	}
	for _, nv := range payload {
		b = append(b, "  "...)
		b = appendField(b, nv.Name, nv.Value)
	}
	if raw {
		b = append(b, "  payload="...)
		b = strconv.AppendInt(b, int64(len(ev.Payload)), 10)
		b = append(b, " bytes"...)
		if len(ev.Payload) > 0 {
			b = append(b, ": "...)
			b = hex.AppendEncode(b, ev.Payload[:min(len(ev.Payload), maxRawText)])
			if len(ev.Payload) > maxRawText {
				b = append(b, "..."...)
			}
		}
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
