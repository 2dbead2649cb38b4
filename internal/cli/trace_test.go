package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// writeTestTrace writes a small V4 trace: 3 events of provider A (two
// "Hello" with a string field, one id 9 without fields) and 2 of provider B.
func writeTestTrace(t *testing.T, truncate bool) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{ProcessID: 321, ProcessorCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	hello := &nettrace.Metadata{ID: 1, ProviderName: "Prov-A", EventID: 1, EventName: "Hello",
		Fields: []nettrace.Field{{Name: "Who", Type: nettrace.TypeString}, {Name: "N", Type: nettrace.TypeInt32}}}
	raw := &nettrace.Metadata{ID: 2, ProviderName: "Prov-A", EventID: 9}
	other := &nettrace.Metadata{ID: 3, ProviderName: "Prov-B", EventID: 1, EventName: "Other"}
	for _, md := range []*nettrace.Metadata{hello, raw, other} {
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
	}
	seq := uint32(0)
	add := func(md *nettrace.Metadata, payload []byte) {
		seq++
		if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 5, CaptureThreadID: 5,
			Timestamp: int64(seq) * 1000, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	p1, _ := nettrace.AppendPayload(nil, hello.Fields, nettrace.Object{{Name: "Who", Value: "world"}, {Name: "N", Value: int32(1)}})
	p2, _ := nettrace.AppendPayload(nil, hello.Fields, nettrace.Object{{Name: "Who", Value: "again"}, {Name: "N", Value: int32(2)}})
	add(hello, p1)
	add(raw, []byte{1, 2, 3})
	add(other, nil)
	add(hello, p2)
	add(other, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if truncate {
		data = data[:len(data)-1] // drop the end-of-stream tag
	}
	path := filepath.Join(t.TempDir(), "test.nettrace")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runIn(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, bytes.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTraceStatsJSON(t *testing.T) {
	path := writeTestTrace(t, false)
	code, out, errOut := run(t, "trace", "stats", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"format", "pointerSize", "processId", "events", "metadata", "stacks", "sequencePoints",
		"droppedEvents", "complete", "providers", "eventsByID"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q", k)
		}
	}
	if _, ok := m["error"]; ok {
		t.Error("JSON has an error key for a clean trace")
	}
	if m["format"] != "NetTrace" || m["pointerSize"] != 8.0 || m["processId"] != 321.0 || m["events"] != 5.0 ||
		m["metadata"] != 3.0 || m["complete"] != true || m["droppedEvents"] != 0.0 {
		t.Errorf("stats %v", m)
	}
	prov, _ := m["providers"].(map[string]any)
	if prov["Prov-A"] != 3.0 || prov["Prov-B"] != 2.0 || len(prov) != 2 {
		t.Errorf("providers %v", prov)
	}
	byID, _ := m["eventsByID"].(map[string]any)
	if byID["Prov-A/1"] != 2.0 || byID["Prov-A/9"] != 1.0 || byID["Prov-B/1"] != 2.0 || len(byID) != 3 {
		t.Errorf("eventsByID %v", byID)
	}
}

func TestTraceStatsText(t *testing.T) {
	code, out, _ := run(t, "trace", "stats", writeTestTrace(t, false))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"NetTrace V4", "Process:          321", "Events:           5", "Complete:         yes",
		"3  Prov-A", "2  Prov-A/1 Hello"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestTraceStatsDamaged(t *testing.T) {
	code, out, errOut := run(t, "trace", "stats", writeTestTrace(t, true), "--json")
	if code != exitDamaged {
		t.Fatalf("exit %d, want exitDamaged (stderr %s)", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m["complete"] != false || m["events"] != 5.0 || m["error"] == nil || m["error"] == "" {
		t.Errorf("damaged stats %v", m)
	}
	if !strings.Contains(errOut, "ended early") {
		t.Errorf("stderr %q does not explain the truncation", errOut)
	}
}

func TestTraceStatsRealTruncatedCapture(t *testing.T) {
	for _, tc := range []struct {
		rel    string
		events float64
	}{
		{"misc/dotnet-diagnostics-3.0-counters-truncated.nettrace", 19911}, // cut mid-block
		{"zetslief/perf_100ms.nettrace", 302},                              // no end-of-stream tag
	} {
		t.Run(filepath.Base(tc.rel), func(t *testing.T) {
			code, out, _ := run(t, "trace", "stats", testcapture.Path(t, tc.rel), "--json")
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if code != exitDamaged || m["events"] != tc.events || m["complete"] != false || m["error"] == nil {
				t.Errorf("exit %d stats %v; want exitDamaged, %v events, incomplete, an error", code, m, tc.events)
			}
		})
	}
}

func TestTraceStatsStdinAndErrors(t *testing.T) {
	data, err := os.ReadFile(writeTestTrace(t, false))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runIn(t, data, "trace", "stats", "-", "--json")
	if code != 0 || !strings.Contains(out, `"events": 5`) {
		t.Errorf("stdin: exit %d\n%s", code, out)
	}
	code, _, errOut := run(t, "trace", "stats", filepath.Join(t.TempDir(), "missing.nettrace"))
	if code != exitIO || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	code, _, errOut = runIn(t, []byte("this is not a trace at all"), "trace", "stats", "-")
	if code != exitDamaged || !strings.Contains(errOut, "not a nettrace") {
		t.Errorf("garbage: exit %d, %q", code, errOut)
	}
	legacy := append([]byte{20, 0, 0, 0}, "!FastSerialization.1"...)
	legacy = append(legacy, 4, 4, 1, 2, 0, 0, 0, 0, 0, 0, 0, 38, 0, 0, 0)
	legacy = append(legacy, "Microsoft.DotNet.Runtime.EventPipeFile"...)
	legacy = append(legacy, 6)
	code, _, errOut = runIn(t, legacy, "trace", "stats", "-")
	if code != exitDamaged || !strings.Contains(errOut, "unsupported format") {
		t.Errorf("NetPerf V2: exit %d, %q", code, errOut)
	}
}

func TestTraceEventsText(t *testing.T) {
	path := writeTestTrace(t, false)
	code, out, errOut := run(t, "trace", "events", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5:\n%s", len(lines), out)
	}
	for i, want := range []string{`Prov-A  Hello(1)  thread=5  Who="world"  N=1`, `Prov-A  Event(9)  thread=5  payload=3 bytes`,
		`Prov-B  Other(1)`, `Who="again"  N=2`, `Prov-B  Other(1)`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	if !strings.HasPrefix(lines[0], "1970-01-01T00:00:00.0000010Z") {
		t.Errorf("line 0 time: %q", lines[0])
	}
}

func TestTraceEventsFiltersJSON(t *testing.T) {
	path := writeTestTrace(t, false)
	cases := []struct {
		args []string
		want []string // provider/eventID of the expected lines
	}{
		{[]string{"--provider", "prov-b"}, []string{"Prov-B/1", "Prov-B/1"}},
		{[]string{"--event", "Hello"}, []string{"Prov-A/1", "Prov-A/1"}},
		{[]string{"--event", "1"}, []string{"Prov-A/1", "Prov-B/1", "Prov-A/1", "Prov-B/1"}},
		{[]string{"--provider", "Prov-A", "--event", "9", "--event", "Hello"}, []string{"Prov-A/1", "Prov-A/9", "Prov-A/1"}},
		{[]string{"--provider", "Prov-A", "--provider", "Prov-B", "--limit", "2"}, []string{"Prov-A/1", "Prov-A/9"}},
	}
	for _, c := range cases {
		args := append([]string{"trace", "events", path, "--json"}, c.args...)
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", c.args, code, errOut)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: bad JSON line %q: %v", c.args, line, err)
			}
			for _, k := range []string{"timestamp", "provider", "eventID", "eventName", "threadID", "payload"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%v: JSON line lacks %q: %s", c.args, k, line)
				}
			}
			got = append(got, m["provider"].(string)+"/"+jsonNum(m["eventID"]))
			if m["eventName"] == "Hello" {
				p := m["payload"].(map[string]any)
				if p["Who"] == nil || p["N"] == nil {
					t.Errorf("payload %v", p)
				}
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: got %v, want %v", c.args, got, c.want)
		}
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestTraceEventsDamagedAndStdin(t *testing.T) {
	data, err := os.ReadFile(writeTestTrace(t, true))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn(t, data, "trace", "events", "-")
	if code != exitDamaged || strings.Count(out, "\n") != 5 || !strings.Contains(errOut, "5 matching events") {
		t.Errorf("exit %d, %d lines, stderr %q; want exitDamaged, 5 lines and an explanation", code, strings.Count(out, "\n"), errOut)
	}
	code, _, errOut = run(t, "trace", "events", "x.nettrace", "--limit", "-1")
	if code != exitUsage || !strings.Contains(errOut, "--limit") {
		t.Errorf("bad limit: exit %d %q", code, errOut)
	}
}

func TestTraceEventsEventCounters(t *testing.T) {
	path := testcapture.Path(t, "misc/dotnet-diagnostics-3.0-counters-truncated.nettrace")
	code, out, _ := run(t, "trace", "events", path, "--json", "--provider", "System.Runtime", "--event", "EventCounters")
	if code != exitDamaged {
		t.Errorf("exit %d, want exitDamaged for the truncated capture", code)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Payload map[string]map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		inner := m.Payload["Payload"]
		if inner == nil {
			for _, v := range m.Payload { // the payload is one unnamed object
				if p, ok := v["Payload"].(map[string]any); ok {
					inner = p
				}
			}
		}
		name, _ := inner["Name"].(string)
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) != 3 || names[0] == "" {
		t.Errorf("counter names %v, want 3 names", names)
	}
}
