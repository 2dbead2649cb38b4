package eventfmt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
)

func summarize(t *testing.T, trace []byte) (*eventfmt.Summary, error) {
	t.Helper()
	r, err := nettrace.NewReader(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	return eventfmt.Summarize(context.Background(), r, "test.nettrace")
}

// TestSummarize: the counts per provider and per event id add up to the
// events written, the runtime's event is named from clrevents, the
// self-describing one by its metadata, and the time span is the one
// between the first and last timestamps (1 µs and 4 µs).
func TestSummarize(t *testing.T) {
	st, err := summarize(t, testTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 4 || st.Metadata != 3 || !st.Complete || st.ProcessID != 7 || st.Processors != 2 || st.PointerSize != 8 || st.Error != "" {
		t.Errorf("summary %+v", st)
	}
	wantProv := map[string]int{"Microsoft-Windows-DotNETRuntime": 2, "Microsoft-Extensions-Logging": 1, "Other": 1}
	wantIDs := map[string]int{"Microsoft-Windows-DotNETRuntime/1": 2, "Microsoft-Extensions-Logging/9": 1, "Other/5": 1}
	wantNames := map[string]string{"Microsoft-Windows-DotNETRuntime/1": "GCStart", "Microsoft-Extensions-Logging/9": "FormattedMessage"}
	for _, c := range []struct{ got, want any }{{st.Providers, wantProv}, {st.EventsByID, wantIDs}, {st.EventNames, wantNames}} {
		g, _ := json.Marshal(c.got)
		w, _ := json.Marshal(c.want)
		if !bytes.Equal(g, w) {
			t.Errorf("got %s, want %s", g, w)
		}
	}
	if st.StartTime == nil || st.EndTime.Sub(st.StartTime.Time).Nanoseconds() != 3000 || st.TimeSpan != 3e-6 {
		t.Errorf("time span %v to %v (%v s), want 3 µs", st.StartTime, st.EndTime, st.TimeSpan)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"File:             test.nettrace\n", "Events:           4\n", "Complete:         yes\n",
		"\nEvents per provider:\n           2  Microsoft-Windows-DotNETRuntime\n           1  Microsoft-Extensions-Logging\n           1  Other\n",
		"           2  Microsoft-Windows-DotNETRuntime/1 GCStart\n", "           1  Other/5\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestSummarizeDamaged: a truncated trace gives the summary of what was
// read, not complete, and the error naming the trace.
func TestSummarizeDamaged(t *testing.T) {
	trace := testTrace(t)
	st, err := summarize(t, trace[:len(trace)-20])
	if err == nil || !strings.HasPrefix(err.Error(), "test.nettrace: ") {
		t.Fatalf("truncated trace: error %v", err)
	}
	if st == nil || st.Complete || st.Error == "" || st.Events > 4 {
		t.Fatalf("summary of a truncated trace: %+v", st)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil || !strings.Contains(text.String(), "Complete:         no (") {
		t.Errorf("text (%v):\n%s", err, text.String())
	}
}
