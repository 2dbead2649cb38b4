package logs

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
)

// Writer writes entries in one format.
type Writer interface {
	Write(e *Entry) error
}

// textWriter writes entries as dotnet-monitor's plain text logs (the
// console logger's simple format, with a timestamp):
//
//	2024-05-01 10:00:00Z warn: Category[12]
//	      => scope => scope
//	      message
//	      exception
type textWriter struct {
	w   io.Writer
	buf []byte
}

// NewTextWriter returns a Writer of plain text, one block per entry.
func NewTextWriter(w io.Writer) Writer { return &textWriter{w: w} }

const indent = "      "

func (t *textWriter) Write(e *Entry) error {
	b := t.buf[:0]
	b = e.Time.UTC().AppendFormat(b, "2006-01-02 15:04:05Z")
	b = append(b, ' ')
	b = append(b, e.Level.short()...)
	b = append(b, ": "...)
	b = append(b, e.Category...)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(e.EventID), 10)
	b = append(b, "]\n"...)
	if len(e.Scopes) > 0 {
		b = append(b, indent...)
		for i, s := range e.Scopes {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, "=> "...)
			b = appendIndented(b, s.Message())
		}
		b = append(b, '\n')
	}
	b = append(b, indent...)
	b = appendIndented(b, e.Message)
	b = append(b, '\n')
	if e.Exception != nil {
		b = append(b, indent...)
		b = appendIndented(b, e.Exception.String())
		b = append(b, '\n')
	}
	t.buf = b
	_, err := t.w.Write(b)
	return err
}

// appendIndented appends s with every line after the first indented.
func appendIndented(b []byte, s string) []byte {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(b, s...)
		}
		b = append(b, s[:i+1]...)
		b = append(b, indent...)
		s = s[i+1:]
	}
}

// jsonWriter writes entries as JSON, one object a line (or, with seq,
// each preceded by the record separator of RFC 7464 JSON text sequences).
type jsonWriter struct {
	w   *bufio.Writer
	out io.Writer
	seq bool
}

// NewJSONWriter returns a Writer of newline-delimited JSON objects in
// dotnet-monitor's shape (Timestamp, LogLevel, EventId, EventName,
// Category, Message, Exception, State, Scopes); seq makes it an RFC 7464
// JSON text sequence (dotnet-monitor's application/json-seq).
func NewJSONWriter(w io.Writer, seq bool) Writer {
	return &jsonWriter{w: bufio.NewWriter(w), out: w, seq: seq}
}

type jsonEntry struct {
	Timestamp string            `json:"Timestamp"`
	LogLevel  string            `json:"LogLevel"`
	EventID   string            `json:"EventId"`
	EventName string            `json:"EventName,omitempty"`
	Category  string            `json:"Category"`
	Message   string            `json:"Message"`
	Exception string            `json:"Exception,omitempty"`
	State     orderedMap        `json:"State"`
	Scopes    orderedMap        `json:"Scopes"`
	Activity  map[string]string `json:"Activity,omitempty"`
}

// orderedMap writes KVs as a JSON object in their order.
type orderedMap []KV

func (m orderedMap) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, kv := range m {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(kv.Key)
		v, _ := json.Marshal(kv.Value)
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

func (j *jsonWriter) Write(e *Entry) error {
	je := jsonEntry{
		Timestamp: e.Time.UTC().Format(time.RFC3339Nano),
		LogLevel:  e.Level.String(),
		EventID:   strconv.Itoa(e.EventID),
		EventName: e.EventName,
		Category:  e.Category,
		Message:   e.Message,
		State:     append(orderedMap{{Key: "Message", Value: e.Message}}, e.State...),
		Scopes:    orderedMap{},
	}
	if e.Exception != nil {
		je.Exception = e.Exception.String()
	}
	for _, s := range e.Scopes {
		je.Scopes = append(je.Scopes, s.Values...)
	}
	if e.TraceID != "" {
		je.Activity = map[string]string{"TraceId": e.TraceID, "SpanId": e.SpanID}
	}
	if j.seq {
		if err := j.w.WriteByte(0x1e); err != nil {
			return err
		}
	}
	b, err := json.Marshal(je)
	if err != nil {
		return err
	}
	j.w.Write(b)
	j.w.WriteByte('\n')
	return j.w.Flush()
}
