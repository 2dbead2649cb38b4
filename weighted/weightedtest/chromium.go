// Package weightedtest checks what the exporters of package weighted write
// by the rules of the tools that read it, for the tests of every package
// that exports a profile.
package weightedtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// ValidateTraceEvents checks Chromium trace-event JSON (the JSON Object
// Format of the Trace Event Format) against the rules that Chrome DevTools
// and Perfetto enforce on what weighted.WriteChromium emits, and returns the number
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
func ValidateTraceEvents(data []byte) (begins int, problems []string) {
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
