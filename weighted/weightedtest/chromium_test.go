package weightedtest

import "testing"

// The validator finds what DevTools rejects: an E without the cat of its B
// (what weighted.WriteChromium wrote before), a crossed pair, time going back, an
// unclosed B, a missing field.
func TestValidateTraceEvents(t *testing.T) {
	const head = `{"displayTimeUnit":"ms","traceEvents":[{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"T"}},`
	for _, c := range []struct {
		name, events string
		problems     int
	}{
		{"valid", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1,"tid":2},{"ph":"E","name":"a","cat":"m","ts":2,"pid":1,"tid":2}`, 0},
		{"E without cat", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1,"tid":2},{"ph":"E","name":"a","ts":2,"pid":1,"tid":2}`, 2},
		{"crossed", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1,"tid":2},{"ph":"B","name":"b","cat":"m","ts":1,"pid":1,"tid":2},` +
			`{"ph":"E","name":"a","cat":"m","ts":2,"pid":1,"tid":2},{"ph":"E","name":"b","cat":"m","ts":2,"pid":1,"tid":2}`, 2},
		{"time goes back", `{"ph":"B","name":"a","cat":"m","ts":5,"pid":1,"tid":2},{"ph":"E","name":"a","cat":"m","ts":4,"pid":1,"tid":2}`, 1},
		{"unclosed", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1,"tid":2}`, 1},
		{"no tid", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1}`, 1},
		{"other threads do not nest", `{"ph":"B","name":"a","cat":"m","ts":1,"pid":1,"tid":2},{"ph":"E","name":"a","cat":"m","ts":2,"pid":1,"tid":3}`, 2},
	} {
		_, problems := ValidateTraceEvents([]byte(head + c.events + "]}"))
		if len(problems) != c.problems {
			t.Errorf("%s: %d problems, want %d: %q", c.name, len(problems), c.problems, problems)
		}
	}
	if _, problems := ValidateTraceEvents([]byte(head)); len(problems) == 0 {
		t.Error("truncated JSON passes")
	}
}
