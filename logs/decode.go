package logs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Entry is one log message.
type Entry struct {
	Time      time.Time
	Level     Level
	Category  string // the ILogger's category (LoggerName)
	EventID   int
	EventName string
	// Message is the formatted message.
	Message string
	// Exception is the exception logged with the message, nil when none.
	Exception *Exception
	// State is the message's arguments and its {OriginalFormat}, in the
	// order the logger gave them.
	State []KV
	// Scopes are the logging scopes the message was written in, outermost
	// first.
	Scopes []Scope
	// TraceID and SpanID are the Activity's (.NET 9+: "" before).
	TraceID, SpanID string
	ThreadID        uint64
}

// KV is one named value of a message or scope.
type KV struct{ Key, Value string }

// Scope is one ILogger.BeginScope.
type Scope struct {
	Category string
	Values   []KV
}

// Message is the scope's text: its {OriginalFormat} filled in, or its
// values.
func (s Scope) Message() string {
	for _, kv := range s.Values {
		if kv.Key == "{OriginalFormat}" {
			return fillFormat(kv.Value, s.Values)
		}
	}
	var parts []string
	for _, kv := range s.Values {
		if kv.Key == "Message" && len(s.Values) == 1 {
			return kv.Value
		}
		parts = append(parts, kv.Key+":"+kv.Value)
	}
	return strings.Join(parts, ", ")
}

// fillFormat replaces the {Name} holes of a message template with the
// named values (as the state's ToString does for scopes).
func fillFormat(tpl string, vals []KV) string {
	var b strings.Builder
	for i := 0; i < len(tpl); i++ {
		c := tpl[i]
		switch {
		case (c == '{' || c == '}') && i+1 < len(tpl) && tpl[i+1] == c:
			b.WriteByte(c) // {{ and }} are escaped braces
			i++
		case c == '{':
			j := strings.IndexByte(tpl[i:], '}')
			if j < 0 {
				b.WriteString(tpl[i:])
				return b.String()
			}
			hole := tpl[i : i+j+1]
			name := hole[1 : len(hole)-1]
			if k := strings.IndexAny(name, ",:"); k >= 0 {
				name = name[:k]
			}
			name = strings.TrimPrefix(strings.TrimPrefix(name, "@"), "$")
			val := hole
			for _, kv := range vals {
				if kv.Key == name {
					val = kv.Value
					break
				}
			}
			b.WriteString(val)
			i += j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Exception is a logged exception, as LoggingEventSource writes it.
type Exception struct {
	Type    string `json:"TypeName"`
	Message string `json:"Message"`
	HResult int    `json:"HResult"`
	// Details is the exception's ToString(): type, message and stack.
	Details string `json:"VerboseMessage"`
}

// maxScopes bounds the scopes a Decoder tracks; a process that opens more
// without closing them loses the oldest.
const maxScopes = 4096

// Decoder turns the events of a logs session into Entries. It pairs the
// FormattedMessage and MessageJson events of one log call (the message
// text comes from the first on runtimes whose MessageJson lacks it) and
// tracks scopes. A Decoder reads one session and is not safe for
// concurrent use.
type Decoder struct {
	cfg     Config
	pending map[uint64]*Entry // FormattedMessage awaiting its MessageJson, by thread
	scopes  map[nettrace.GUID]*scopeRec
	// stacks are the scopes of threads whose events carry no activity
	// id (TplEventSource's flow keyword off).
	stacks map[uint64][]*scopeRec
	// Skipped counts events that could not be decoded.
	Skipped int
}

type scopeRec struct {
	id, parent nettrace.GUID
	scopeID    int64
	scope      Scope
}

// NewDecoder returns a decoder that keeps the entries cfg allows.
func NewDecoder(cfg Config) *Decoder {
	return &Decoder{cfg: cfg, pending: map[uint64]*Entry{}, scopes: map[nettrace.GUID]*scopeRec{}, stacks: map[uint64][]*scopeRec{}}
}

// Decode looks at one event and calls emit for the entries it completes.
// Events of other providers are ignored; events that do not decode are
// counted in Skipped. It returns only emit's error.
func (d *Decoder) Decode(ev *nettrace.Event, emit func(*Entry) error) error {
	md := ev.Metadata
	if md == nil || md.ProviderName != Provider {
		return nil
	}
	kind := eventKind(md)
	if kind == 0 {
		return nil
	}
	o, err := ev.Fields()
	if err != nil {
		d.Skipped++
		return nil
	}
	switch kind {
	case EventFormattedMessage:
		e := d.entry(ev, o)
		e.Message = str(o, "FormattedMessage")
		if p := d.pending[ev.ThreadID]; p != nil {
			if err := d.emit(p, emit); err != nil {
				return err
			}
		}
		d.pending[ev.ThreadID] = e
		return nil
	case EventMessageJSON:
		e := d.entry(ev, o)
		e.Message = str(o, "FormattedMessage")
		e.State = parseArgs(str(o, "ArgumentsJson"))
		e.Exception = parseException(str(o, "ExceptionJson"))
		if p := d.pending[ev.ThreadID]; p != nil {
			delete(d.pending, ev.ThreadID)
			if p.Category == e.Category && p.EventID == e.EventID && p.Level == e.Level {
				if e.Message == "" {
					e.Message = p.Message
				}
				e.Time = p.Time
			} else if err := d.emit(p, emit); err != nil {
				return err
			}
		}
		if e.Message == "" {
			e.Message = messageFromState(e.State)
		}
		return d.emit(e, emit)
	case EventActivityJSONStart:
		d.startScope(ev, o)
	case EventActivityJSONStop:
		d.stopScope(ev, o)
	}
	return nil
}

// eventKind names an event of LoggingEventSource by its name: the
// EventSource writes self-describing events, whose ids in an EventPipe
// stream are numbered by the runtime as they are first written, not the
// declared ones (seen on .NET Core 3.1: 6, 7, 16, 17). The declared id
// is the fallback for a stream without names.
func eventKind(md *nettrace.Metadata) int {
	switch md.EventName {
	case "FormattedMessage":
		return EventFormattedMessage
	case "MessageJson":
		return EventMessageJSON
	case "ActivityJsonStart":
		return EventActivityJSONStart
	case "ActivityJsonStop":
		return EventActivityJSONStop
	case "":
		switch md.EventID {
		case EventFormattedMessage, EventMessageJSON, EventActivityJSONStart, EventActivityJSONStop:
			return int(md.EventID)
		}
	}
	return 0
}

// Flush emits the entries still waiting for their MessageJson (at the end
// of a stream).
func (d *Decoder) Flush(emit func(*Entry) error) error {
	for t, p := range d.pending {
		delete(d.pending, t)
		if err := d.emit(p, emit); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) emit(e *Entry, emit func(*Entry) error) error {
	if !d.cfg.Allows(e.Category, e.Level) {
		return nil
	}
	return emit(e)
}

func (d *Decoder) entry(ev *nettrace.Event, o nettrace.Object) *Entry {
	e := &Entry{Time: ev.Time(), ThreadID: ev.ThreadID}
	e.Level = Level(integer(o, "Level"))
	e.Category = str(o, "LoggerName")
	e.EventID = int(integer(o, "EventId"))
	e.EventName = str(o, "EventName")
	e.TraceID = str(o, "ActivityTraceId")
	e.SpanID = str(o, "ActivitySpanId")
	if isZeroTraceID(e.TraceID) {
		e.TraceID, e.SpanID = "", ""
	}
	e.Scopes = d.scopesOf(ev)
	return e
}

func isZeroTraceID(s string) bool { return strings.Trim(s, "0") == "" }

func (d *Decoder) startScope(ev *nettrace.Event, o nettrace.Object) {
	rec := &scopeRec{id: ev.ActivityID, parent: ev.RelatedActivityID, scopeID: integer(o, "ID")}
	rec.scope.Category = str(o, "LoggerName")
	rec.scope.Values = parseArgs(str(o, "ArgumentsJson"))
	if ev.ActivityID == (nettrace.GUID{}) {
		st := d.stacks[ev.ThreadID]
		if len(st) < 256 {
			d.stacks[ev.ThreadID] = append(st, rec)
		}
		return
	}
	if len(d.scopes) >= maxScopes {
		clear(d.scopes)
	}
	d.scopes[ev.ActivityID] = rec
}

func (d *Decoder) stopScope(ev *nettrace.Event, o nettrace.Object) {
	if ev.ActivityID != (nettrace.GUID{}) {
		delete(d.scopes, ev.ActivityID)
		return
	}
	id := integer(o, "ID")
	st := d.stacks[ev.ThreadID]
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].scopeID == id {
			d.stacks[ev.ThreadID] = st[:i]
			break
		}
	}
	if len(d.stacks[ev.ThreadID]) == 0 {
		delete(d.stacks, ev.ThreadID)
	}
}

// scopesOf returns the scopes an event was written in, outermost first.
func (d *Decoder) scopesOf(ev *nettrace.Event) []Scope {
	var out []Scope
	if ev.ActivityID == (nettrace.GUID{}) {
		for _, r := range d.stacks[ev.ThreadID] {
			out = append(out, r.scope)
		}
		return out
	}
	id := ev.ActivityID
	for range 64 { // bounded: a parent chain cannot loop forever
		r := d.scopes[id]
		if r == nil {
			break
		}
		out = append(out, r.scope)
		if r.parent == id {
			break
		}
		id = r.parent
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func str(o nettrace.Object, name string) string {
	v, ok := o.Get(name)
	if !ok {
		return ""
	}
	s, _ := v.(string)
	return s
}

func integer(o nettrace.Object, name string) int64 {
	v, ok := o.Get(name)
	if !ok {
		return 0
	}
	switch x := v.(type) {
	case int32:
		return int64(x)
	case uint32:
		return int64(x)
	case int64:
		return x
	case uint64:
		return int64(x)
	case int16:
		return int64(x)
	case uint16:
		return int64(x)
	case int8:
		return int64(x)
	case uint8:
		return int64(x)
	case string: // older LoggingEventSource versions wrote EventId as text
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// parseArgs reads ArgumentsJson, a JSON object of strings, keeping its
// order. Text that is not such an object gives nil.
func parseArgs(s string) []KV {
	if s == "" || s == "{}" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []KV
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out
		}
		out = append(out, KV{Key: k, Value: jsonText(raw)})
	}
	return out
}

// jsonText is a JSON value as text: a string unquoted, anything else as
// written.
func jsonText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// parseException reads ExceptionJson; "{}" and text that does not decode
// mean none.
func parseException(s string) *Exception {
	args := parseArgs(s)
	if len(args) == 0 {
		return nil
	}
	var e Exception
	for _, kv := range args {
		switch kv.Key {
		case "TypeName":
			e.Type = kv.Value
		case "Message":
			e.Message = kv.Value
		case "HResult":
			n, _ := strconv.ParseInt(kv.Value, 10, 64)
			e.HResult = int(n)
		case "VerboseMessage":
			e.Details = kv.Value
		}
	}
	if e.Type == "" && e.Message == "" && e.Details == "" {
		return nil
	}
	return &e
}

// messageFromState formats the message from its {OriginalFormat} when no
// formatted text came.
func messageFromState(state []KV) string {
	for _, kv := range state {
		if kv.Key == "{OriginalFormat}" {
			return fillFormat(kv.Value, state)
		}
	}
	return ""
}

// String is the exception's ToString (or type: message).
func (e *Exception) String() string {
	if e.Details != "" {
		return e.Details
	}
	if e.Message == "" {
		return e.Type
	}
	return fmt.Sprintf("%s: %s", e.Type, e.Message)
}
