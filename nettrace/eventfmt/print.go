package eventfmt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/jsontime"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// Options says how Print writes events. The zero value writes text lines,
// buffered, to the end of the trace.
type Options struct {
	// JSON writes one JSON object per line instead of a text line.
	JSON bool
	// Limit stops after this many events (0: no limit).
	Limit int
	// Live flushes the output after each event: for live input, so that
	// each event shows as it arrives and an output that went away is
	// noticed at once.
	Live bool
}

// ReadError is a failure to read the trace, after every complete event
// before it was written.
type ReadError struct {
	Err error
}

func (e *ReadError) Error() string { return e.Err.Error() }

// Unwrap returns the reader's error.
func (e *ReadError) Unwrap() error { return e.Err }

// Print reads r to its end and writes the events f selects to out, one
// line each, and returns how many it wrote. At the end of the trace (or
// of opt.Limit) it returns nil, or a *NoMatchError when f is Active and
// matched nothing (what names the trace in its message). It returns ctx's
// error as is when cut short between two events, a reader's failure as a
// *ReadError, and a failure to write to out (noticed on a flush) or to
// encode an event as is. The output is flushed before Print returns.
func Print(ctx context.Context, out io.Writer, r *nettrace.Reader, f *Filter, opt Options, what string) (int, error) {
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
		k, err := f.Next(ctx, r, &ev)
		if err != nil {
			if err == io.EOF {
				if printed == 0 && f.Active() {
					bw.Flush()
					return printed, f.NoMatch(what)
				}
				return printed, nil
			}
			bw.Flush()
			if ctx != nil && err == ctx.Err() {
				return printed, err // cut short between two events
			}
			return printed, &ReadError{Err: err}
		}
		payload, perr := eventPayload(&ev, k, ptrSize)
		raw := perr != nil || (payload == nil && len(ev.Payload) > 0)
		if opt.JSON {
			jbuf.Reset()
			if err := enc.Encode(newJSONEvent(&ev, k.name, payload, perr, raw)); err != nil {
				return printed, err
			}
			bw.Write(termsafe.JSON(jbuf.Bytes()))
		} else {
			line = AppendLine(line[:0], &ev, k.name, payload, perr, raw)
			bw.Write(line)
		}
		printed++
		if opt.Live {
			if err := bw.Flush(); err != nil {
				return printed, err
			}
		}
		if opt.Limit > 0 && printed >= opt.Limit {
			return printed, nil
		}
	}
}

// jsonEvent is one JSON line.
type jsonEvent struct {
	Timestamp       jsontime.Time   `json:"timestamp"`
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

func newJSONEvent(ev *nettrace.Event, name string, payload nettrace.Object, perr error, raw bool) *jsonEvent {
	md := ev.Metadata
	je := &jsonEvent{
		Timestamp: jsontime.Time{Time: ev.Time().UTC()}, Provider: md.ProviderName, EventID: md.EventID, EventName: name,
		Version: clrevents.EventVersion(ev), ThreadID: ev.ThreadID, CaptureThreadID: ev.CaptureThreadID, Sequence: ev.SequenceNumber,
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
	return je
}

// maxRawText bounds the payload bytes shown in hexadecimal on a text line.
const maxRawText = 256

// AppendLine appends the text line of one event to b: time, provider,
// name (Event when "") and id, thread, then perr, the payload's fields
// and, when raw, the payload's size and its first bytes in hexadecimal.
func AppendLine(b []byte, ev *nettrace.Event, name string, payload nettrace.Object, perr error, raw bool) []byte {
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
