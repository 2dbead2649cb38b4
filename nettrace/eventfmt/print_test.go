package eventfmt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
)

// buildTrace returns a V4 trace of: a runtime GCStart v2 (no metadata
// fields: decoded with the clrevents table), a Microsoft-Extensions-Logging
// FormattedMessage at ILogger level 3 (self-describing), an unknown event
// of a third provider with a 4-byte payload, and a second GCStart.
func buildTrace() ([]byte, error) {
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{ProcessID: 7, ProcessorCount: 2})
	if err != nil {
		return nil, err
	}
	gc := &nettrace.Metadata{ID: 1, ProviderName: clrevents.ProviderRuntime, EventID: 1, Version: 2}
	lg := &nettrace.Metadata{ID: 2, ProviderName: logs.Provider, EventID: 9, EventName: "FormattedMessage",
		Fields: []nettrace.Field{{Name: "Level", Type: nettrace.TypeInt32}, {Name: "FormattedMessage", Type: nettrace.TypeString}}}
	un := &nettrace.Metadata{ID: 3, ProviderName: "Other", EventID: 5}
	for _, md := range []*nettrace.Metadata{gc, lg, un} {
		if err := w.AddMetadata(md); err != nil {
			return nil, err
		}
	}
	gcPayload := func(n uint32) []byte {
		var p []byte
		for _, v := range []uint32{n, 2, 1, 0} { // Count, Depth, Reason, Type
			p = binary.LittleEndian.AppendUint32(p, v)
		}
		p = binary.LittleEndian.AppendUint16(p, 3) // ClrInstanceID
		return binary.LittleEndian.AppendUint64(p, 0)
	}
	lgPayload, err := nettrace.AppendPayload(nil, lg.Fields, nettrace.Object{{Name: "Level", Value: int32(3)}, {Name: "FormattedMessage", Value: "slow \x1b[2J"}})
	if err != nil {
		return nil, err
	}
	for i, e := range []struct {
		md      *nettrace.Metadata
		payload []byte
	}{{gc, gcPayload(7)}, {lg, lgPayload}, {un, []byte{0xde, 0xad, 0xbe, 0xef}}, {gc, gcPayload(8)}} {
		if err := w.WriteEvent(&nettrace.Event{Metadata: e.md, SequenceNumber: uint32(i + 1), ThreadID: 9, CaptureThreadID: 9,
			Timestamp: int64(i+1) * 1000, Payload: e.payload}); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func testTrace(t *testing.T) []byte {
	t.Helper()
	b, err := buildTrace()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func print(t *testing.T, trace []byte, providers, events []string, opt eventfmt.Options) (string, int, error) {
	t.Helper()
	r, err := nettrace.NewReader(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	f, err := eventfmt.NewFilter(providers, events)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, err := eventfmt.Print(context.Background(), &out, r, f, opt, "test.nettrace")
	return out.String(), n, err
}

func TestPrintText(t *testing.T) {
	out, n, err := print(t, testTrace(t), nil, nil, eventfmt.Options{})
	if err != nil || n != 4 {
		t.Fatalf("Print: %d events, %v", n, err)
	}
	want := "1970-01-01T00:00:00.0000010Z  Microsoft-Windows-DotNETRuntime  GCStart(1)  thread=9  Count=7  Depth=2  Reason=1  Type=0  ClrInstanceID=3  ClientSequenceNumber=0\n" +
		`1970-01-01T00:00:00.0000020Z  Microsoft-Extensions-Logging  FormattedMessage(9)  thread=9  Level=Warning  FormattedMessage="slow \x1b[2J"` + "\n" +
		"1970-01-01T00:00:00.0000030Z  Other  Event(5)  thread=9  payload=4 bytes: deadbeef\n" +
		"1970-01-01T00:00:00.0000040Z  Microsoft-Windows-DotNETRuntime  GCStart(1)  thread=9  Count=8  Depth=2  Reason=1  Type=0  ClrInstanceID=3  ClientSequenceNumber=0\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestPrintJSON(t *testing.T) {
	out, n, err := print(t, testTrace(t), []string{"microsoft-extensions-logging", "other"}, nil, eventfmt.Options{JSON: true})
	if err != nil || n != 2 {
		t.Fatalf("Print: %d events, %v", n, err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var evs [2]map[string]any
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &evs[i]); err != nil {
			t.Fatalf("line %d: %v\n%s", i, err, l)
		}
	}
	if got := evs[0]["payload"].(map[string]any); got["Level"] != "Warning" || got["FormattedMessage"] != "slow \x1b[2J" {
		t.Errorf("logging payload %v", got)
	}
	if strings.Contains(lines[0], "\x1b") {
		t.Errorf("JSON line carries a raw escape: %q", lines[0])
	}
	if evs[0]["timestamp"] != "1970-01-01T00:00:00.000002Z" || evs[0]["eventName"] != "FormattedMessage" || evs[0]["sequence"] != 2.0 {
		t.Errorf("logging event %v", evs[0])
	}
	if evs[1]["eventName"] != "" || evs[1]["payloadRaw"] != "deadbeef" || evs[1]["payloadSize"] != 4.0 || len(evs[1]["payload"].(map[string]any)) != 0 {
		t.Errorf("unknown event %v", evs[1])
	}
}

func TestPrintFilterAndLimit(t *testing.T) {
	trace := testTrace(t)
	out, n, err := print(t, trace, nil, []string{"GC/Start"}, eventfmt.Options{})
	if err != nil || n != 2 || strings.Count(out, "GCStart(1)") != 2 {
		t.Errorf("--event GC/Start: %d events, %v\n%s", n, err, out)
	}
	out, n, err = print(t, trace, nil, []string{"1"}, eventfmt.Options{Limit: 1})
	if err != nil || n != 1 || !strings.Contains(out, "Count=7") || strings.Contains(out, "Count=8") {
		t.Errorf("--event 1 --limit 1: %d events, %v\n%s", n, err, out)
	}
	if _, err := eventfmt.NewFilter([]string{" "}, nil); err == nil {
		t.Error("an empty provider is accepted")
	}
}

func TestPrintNoMatch(t *testing.T) {
	trace := testTrace(t)
	for _, c := range []struct {
		providers, events []string
		want              string
	}{
		{[]string{"Nope"}, nil, "no event of test.nettrace matched --provider Nope; its providers (events) are: Microsoft-Windows-DotNETRuntime (2), Microsoft-Extensions-Logging (1), Other (1)"},
		{[]string{"Other"}, []string{"GCStart"}, "no event of test.nettrace matched --provider Other --event GCStart; its events of Other (count) are: Event(5) (1) (--event takes"},
		{nil, []string{"42"}, "its events (count) are: Microsoft-Windows-DotNETRuntime/GCStart(1) (2), Microsoft-Extensions-Logging/FormattedMessage(9) (1), Other/Event(5) (1)"},
	} {
		out, n, err := print(t, trace, c.providers, c.events, eventfmt.Options{})
		var nm *eventfmt.NoMatchError
		if !errors.As(err, &nm) || n != 0 || out != "" {
			t.Errorf("%v %v: %d events, %v", c.providers, c.events, n, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v:\n%s\nlacks\n%s", c.providers, c.events, err, c.want)
		}
	}
}

// TestPrintDamaged: a truncated trace prints its complete events, then
// the reader's error as a *ReadError.
func TestPrintDamaged(t *testing.T) {
	trace := testTrace(t)
	whole, _, _ := print(t, trace, nil, nil, eventfmt.Options{})
	out, n, err := print(t, trace[:len(trace)-20], nil, nil, eventfmt.Options{})
	var re *eventfmt.ReadError
	if !errors.As(err, &re) || re.Err == io.EOF {
		t.Fatalf("truncated trace: %d events, %v (%T)", n, err, err)
	}
	if !strings.HasPrefix(whole, out) || strings.Count(out, "\n") != n {
		t.Errorf("%d events, output\n%s\nnot a prefix of\n%s", n, out, whole)
	}
}

func TestFieldsLoggingLevel(t *testing.T) {
	r, err := nettrace.NewReader(bytes.NewReader(testTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	var ev nettrace.Event
	for ev.Metadata == nil || ev.Metadata.ProviderName != logs.Provider {
		if err := r.ReadEvent(&ev); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := eventfmt.Fields(&ev, 8)
	if err != nil {
		t.Fatal(err)
	}
	lv, ok := obj[0].Value.(interface{ String() string })
	if !ok || lv.String() != "Warning" {
		t.Errorf("Level %#v, want ILogger's Warning", obj[0].Value)
	}
}
