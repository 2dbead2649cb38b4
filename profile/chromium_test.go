package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"
)

// validateTraceEvents checks Chromium trace-event JSON (the JSON Object
// Format of the Trace Event Format) against the rules that Chrome DevTools
// and Perfetto enforce on what WriteChromium emits, and returns the number
// of B events and the problems found:
//   - the document is valid UTF-8 JSON: an object with a "traceEvents" array
//     and an optional "displayTimeUnit" of "ms" or "ns";
//   - every event has a known phase and the fields that phase requires: B, E
//     and X a string name and cat, a number ts >= 0, integer pid and tid; X a
//     dur >= 0; M a known metadata name with the matching args;
//   - per thread (pid, tid), B and E events nest: each E closes the latest
//     open B, with the same name and the same cat ("Begin/End events
//     mismatch" otherwise), and no B is left open at the end;
//   - per thread, the timestamps of B and E events never go back.
func validateTraceEvents(data []byte) (begins int, problems []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if !utf8.Valid(data) {
		bad("not valid UTF-8")
	}
	if !json.Valid(data) {
		bad("not valid JSON")
		return 0, problems
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		bad("not a JSON object: %v", err)
		return 0, problems
	}
	if u, ok := doc["displayTimeUnit"]; ok {
		var unit string
		if json.Unmarshal(u, &unit) != nil || (unit != "ms" && unit != "ns") {
			bad("displayTimeUnit %s, want \"ms\" or \"ns\"", u)
		}
	}
	raw, ok := doc["traceEvents"]
	if !ok {
		bad("no traceEvents")
		return 0, problems
	}
	var events []map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&events); err != nil {
		bad("traceEvents is not an array of objects: %v", err)
		return 0, problems
	}
	type thread struct{ pid, tid int64 }
	type open struct {
		name, cat string
		ts        float64
	}
	stacks := map[thread][]open{}
	last := map[thread]float64{}
	str := func(i int, e map[string]json.RawMessage, key string) (string, bool) {
		var s string
		if v, ok := e[key]; !ok || json.Unmarshal(v, &s) != nil {
			bad("event %d (%s): %q missing or not a string", i, e["ph"], key)
			return "", false
		}
		return s, true
	}
	num := func(i int, e map[string]json.RawMessage, key string) (float64, bool) {
		var f float64
		if v, ok := e[key]; !ok || json.Unmarshal(v, &f) != nil || math.IsNaN(f) {
			bad("event %d (%s): %q missing or not a number", i, e["ph"], key)
			return 0, false
		}
		return f, true
	}
	integer := func(i int, e map[string]json.RawMessage, key string) (int64, bool) {
		var n int64
		if v, ok := e[key]; !ok || json.Unmarshal(v, &n) != nil {
			bad("event %d (%s): %q missing or not an integer", i, e["ph"], key)
			return 0, false
		}
		return n, true
	}
	for i, e := range events {
		ph, ok := str(i, e, "ph")
		if !ok {
			continue
		}
		pid, ok1 := integer(i, e, "pid")
		tid, ok2 := integer(i, e, "tid")
		if !ok1 || !ok2 {
			continue
		}
		th := thread{pid, tid}
		switch ph {
		case "M":
			name, _ := str(i, e, "name")
			var args map[string]json.RawMessage
			if json.Unmarshal(e["args"], &args) != nil {
				bad("event %d: metadata %q without args", i, name)
				continue
			}
			switch name {
			case "process_name", "thread_name":
				if _, ok := str(i, args, "name"); !ok {
					bad("event %d: %s without a name", i, name)
				}
			case "process_sort_index", "thread_sort_index":
				integer(i, args, "sort_index")
			default:
				bad("event %d: unknown metadata %q", i, name)
			}
		case "B", "E", "X":
			name, _ := str(i, e, "name")
			cat, _ := str(i, e, "cat")
			ts, ok := num(i, e, "ts")
			if !ok {
				continue
			}
			if ts < 0 {
				bad("event %d: ts %v < 0", i, ts)
			}
			if ph == "X" {
				if dur, ok := num(i, e, "dur"); ok && dur < 0 {
					bad("event %d: dur %v < 0", i, dur)
				}
				continue
			}
			if ts < last[th] {
				bad("thread %d/%d: event %d (%s %q) at %v goes back from %v", pid, tid, i, ph, name, ts, last[th])
			}
			last[th] = ts
			st := stacks[th]
			if ph == "B" {
				begins++
				stacks[th] = append(st, open{name, cat, ts})
				continue
			}
			if len(st) == 0 {
				bad("thread %d/%d: event %d: E %q with nothing open", pid, tid, i, name)
				continue
			}
			top := st[len(st)-1]
			if top.name != name || top.cat != cat {
				bad("thread %d/%d: event %d: Begin/End events mismatch: E %q (cat %q) closes B %q (cat %q)", pid, tid, i, name, cat, top.name, top.cat)
			}
			stacks[th] = st[:len(st)-1]
		default:
			bad("event %d: phase %q is not one the exporter writes", i, ph)
		}
	}
	for th, st := range stacks {
		if len(st) > 0 {
			bad("thread %d/%d: %d B events never ended (innermost %q)", th.pid, th.tid, len(st), st[len(st)-1].name)
		}
	}
	return begins, problems
}

// The validator finds what DevTools rejects: an E without the cat of its B
// (what WriteChromium wrote before), a crossed pair, time going back, an
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
		_, problems := validateTraceEvents([]byte(head + c.events + "]}"))
		if len(problems) != c.problems {
			t.Errorf("%s: %d problems, want %d: %q", c.name, len(problems), c.problems, problems)
		}
	}
	if _, problems := validateTraceEvents([]byte(head)); len(problems) == 0 {
		t.Error("truncated JSON passes")
	}
}

// Two lock waits of one stack, the second starting when the first ends
// (or, with the runtime's own durations, a little before): Chromium shows
// two spans, not one. CPU samples of one stack, by contrast, are one span.
func TestChromiumRunsApart(t *testing.T) {
	runs := func(yield func(Run) bool) {
		_ = yield(Run{Stack: 0, Start: 0, Count: 1000}) &&
			yield(Run{Stack: 0, Start: 1000, Count: 1000}) && // touching
			yield(Run{Stack: 0, Start: 1500, Count: 1000}) // overlapping
	}
	for _, apart := range []bool{true, false} {
		wp := &Weighted{Name: "app", ProcessID: 1, Types: []ValueType{{"delay", "nanoseconds"}}, Period: 1,
			Frames: []Frame{{Name: "Lock.Wait"}, {Name: "Main"}}, Stacks: []Stack{{Frames: []int{0, 1}}},
			Groups:    []Group{{Name: "Thread 7", ThreadID: 7, Samples: []Sample{{Stack: 0, Values: []int64{3000}}}, Runs: runs}},
			RunsApart: apart}
		var buf bytes.Buffer
		if err := WriteChromium(&buf, wp); err != nil {
			t.Fatal(err)
		}
		begins, problems := validateTraceEvents(buf.Bytes())
		if len(problems) > 0 {
			t.Errorf("RunsApart %v: %v\n%s", apart, problems, buf.Bytes())
		}
		want := 2 // Main and Lock.Wait once
		if apart {
			want = 6 // three times
		}
		if begins != want {
			t.Errorf("RunsApart %v: %d B events, want %d\n%s", apart, begins, want, buf.Bytes())
		}
	}
}

// The Chromium writer's timestamps, which keep the seconds of the one
// before, read as appendMicros writes them:
// growing by little and by much, across digit counts, going back, below
// 10 ms and negative, and after a new group's suffix.
func TestChromiumStamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var c chromiumWriter
	c.setSuffix("1", "2")
	var ns int64
	for i := range 20000 {
		switch i % 8 {
		case 0:
			ns += rng.Int64N(1000)
		case 1:
			ns += rng.Int64N(100_000_000)
		case 2:
			ns = rng.Int64N(100_000_000_000_000)
		case 3:
			ns -= rng.Int64N(20_000_000)
		case 4: // about a whole second, 1 s or 10 s
			ns = []int64{1, 10, rng.Int64N(100)}[i%3]*1_000_000_000 + rng.Int64N(3_000) - 1_500
		case 5:
			ns = rng.Int64N(20_000_000) - 1_000_000
		case 6: // about 100 ms (five digits of microseconds, then six) or 1 s
			ns = []int64{100_000_000, 1_000_000_000}[i%2] + rng.Int64N(3_000_000) - 1_500_000
		default:
			if i%1000 == 7 {
				c.setSuffix("1", strconv.Itoa(i))
			}
		}
		c.stamp(time.Duration(ns))
		want := string(appendMicros(nil, ns)) + string(c.stampBuf[microsLen:])
		if string(c.ts) != want {
			t.Fatalf("step %d: stamp(%d) = %s, want %s", i, ns, c.ts, want)
		}
	}
}
