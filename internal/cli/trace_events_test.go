package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/nettrace"
)

// payloadBuf builds little-endian runtime event payloads.
type payloadBuf []byte

func (p payloadBuf) u16(v uint16) payloadBuf { return binary.LittleEndian.AppendUint16(p, v) }
func (p payloadBuf) u32(v uint32) payloadBuf { return binary.LittleEndian.AppendUint32(p, v) }
func (p payloadBuf) u64(v uint64) payloadBuf { return binary.LittleEndian.AppendUint64(p, v) }
func (p payloadBuf) str(s string) payloadBuf {
	for _, u := range utf16.Encode([]rune(s)) {
		p = p.u16(u)
	}
	return p.u16(0)
}

// writeRuntimeTrace writes a V4 trace of the runtime's own events, whose
// metadata carries no names and no fields, as a real runtime writes them:
// GCStart v2 (twice), ExceptionThrown v1, the rundown's MethodDCEndVerbose
// v2, the private PinPlugAtGCTime, an unknown runtime event 9999, a runtime
// event known by name only (GCBulkNode), and a truncated GCEnd v1.
func writeRuntimeTrace(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{ProcessID: 77, ProcessorCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	mds := []*nettrace.Metadata{
		{ID: 1, ProviderName: clrevents.ProviderRuntime, EventID: 1, Version: 2},
		{ID: 2, ProviderName: clrevents.ProviderRuntime, EventID: 80, Version: 1},
		{ID: 3, ProviderName: clrevents.ProviderRundown, EventID: 144, Version: 2},
		{ID: 4, ProviderName: clrevents.ProviderPrivate, EventID: 199},
		{ID: 5, ProviderName: clrevents.ProviderRuntime, EventID: 9999},
		{ID: 6, ProviderName: clrevents.ProviderRuntime, EventID: 18, Version: 4},
		{ID: 7, ProviderName: clrevents.ProviderRuntime, EventID: 2, Version: 1},
	}
	for _, md := range mds {
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
	}
	seq := uint32(0)
	add := func(md *nettrace.Metadata, payload []byte) {
		seq++
		if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 9, CaptureThreadID: 9,
			Timestamp: int64(seq) * 1000, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	gc := func(n uint32) []byte {
		return payloadBuf(nil).u32(n).u32(0).u32(1).u32(0).u16(3).u64(0)
	}
	add(mds[0], gc(7))
	add(mds[1], payloadBuf(nil).str("System.InvalidOperationException").str("boom").u64(0x7ff0001234).u32(0x80131509).u16(0x10).u16(3))
	add(mds[2], payloadBuf(nil).u64(0x7ffea93e45b0).u64(0x7ffea9014020).u64(0x7ffea9177390).u32(4178).u32(0x06002783).u32(0x88).
		str("Program").str("Main").str("void  ()").u16(3).u64(0))
	add(mds[3], payloadBuf(nil).u64(0x19a00001048).u64(0x19a00001348).u64(0x18).u16(3))
	add(mds[4], []byte{0xde, 0xad, 0xbe, 0xef})
	add(mds[5], []byte{1, 2})
	add(mds[0], gc(8))
	add(mds[6], []byte{1, 0, 0})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "runtime.nettrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTraceEventsRuntimeNames(t *testing.T) {
	path := writeRuntimeTrace(t)
	code, out, errOut := run(t, "trace", "events", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"Microsoft-Windows-DotNETRuntime  GCStart(1)  thread=9  Count=7  Depth=0  Reason=1  Type=0  ClrInstanceID=3  ClientSequenceNumber=0",
		`ExceptionThrown(80)  thread=9  ExceptionType="System.InvalidOperationException"  ExceptionMessage="boom"  ExceptionEIP=0x7ff0001234  ExceptionHRESULT=0x80131509  ExceptionFlags=0x10`,
		`Microsoft-Windows-DotNETRuntimeRundown  MethodDCEndVerbose(144)  thread=9  MethodID=0x7ffea93e45b0  ModuleID=0x7ffea9014020  MethodStartAddress=0x7ffea9177390  MethodSize=4178  MethodToken=0x6002783  MethodFlags=0x88  MethodNamespace="Program"  MethodName="Main"`,
		"Microsoft-Windows-DotNETRuntimePrivate  PinPlugAtGCTime(199)  thread=9  PlugStart=0x19a00001048  PlugEnd=0x19a00001348  GapBeforeSize=0x18",
		"Microsoft-Windows-DotNETRuntime  Event(9999)  thread=9  payload=4 bytes: deadbeef",
		// GCBulkNode has a layout (from the manifest): 2 bytes are too few.
		"GCBulkNode(18)  thread=9  payload error: clrevents: decode GCBulkNode v4: field Index at offset 0: payload too short  payload=2 bytes: 0102",
		"GCStart(1)  thread=9  Count=8",
		"GCEnd(2)  thread=9  payload error: clrevents: decode GCEnd v1: field Count at offset 0: payload too short  payload=3 bytes: 010000",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d:\n %s\nlacks\n %s", i, lines[i], w)
		}
	}

	code, out, errOut = run(t, "trace", "events", path, "--json", "--provider", clrevents.ProviderRuntime)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad JSON %q: %v", line, err)
		}
		evs = append(evs, m)
	}
	if len(evs) != 6 {
		t.Fatalf("%d runtime events, want 6:\n%s", len(evs), out)
	}
	gc := evs[0]["payload"].(map[string]any)
	if evs[0]["eventName"] != "GCStart" || evs[0]["version"] != 2.0 || gc["Count"] != 7.0 || gc["Reason"] != 1.0 || evs[0]["payloadRaw"] != nil {
		t.Errorf("GCStart JSON: %v", evs[0])
	}
	ex := evs[1]["payload"].(map[string]any)
	if evs[1]["eventName"] != "ExceptionThrown" || ex["ExceptionMessage"] != "boom" || ex["ExceptionEIP"] != "0x7ff0001234" {
		t.Errorf("ExceptionThrown JSON: %v", evs[1])
	}
	if p, _ := evs[2]["payload"].(map[string]any); evs[2]["eventName"] != "" || len(p) != 0 || evs[2]["payloadRaw"] != "deadbeef" {
		t.Errorf("unknown event JSON: %v", evs[2])
	}
	if evs[5]["eventName"] != "GCEnd" || evs[5]["payloadError"] == nil || evs[5]["payloadRaw"] != "010000" {
		t.Errorf("damaged payload JSON: %v", evs[5])
	}
}

func TestTraceEventsRuntimeFilters(t *testing.T) {
	path := writeRuntimeTrace(t)
	cases := []struct {
		args []string
		want []string // event names, in order
	}{
		{[]string{"--event", "GCStart"}, []string{"GCStart(1)", "GCStart(1)"}},
		{[]string{"--event", "gc/start"}, []string{"GCStart(1)", "GCStart(1)"}},
		{[]string{"--event", "GCStart_V2"}, []string{"GCStart(1)", "GCStart(1)"}},
		{[]string{"--event", "ExceptionThrown_V1"}, []string{"ExceptionThrown(80)"}},
		{[]string{"--event", "Exception/Start"}, []string{"ExceptionThrown(80)"}},
		{[]string{"--event", "Method/DCStopVerbose"}, []string{"MethodDCEndVerbose(144)"}},
		{[]string{"--event", "MethodDCEndVerbose", "--event", "9999"}, []string{"MethodDCEndVerbose(144)", "Event(9999)"}},
		{[]string{"--provider", clrevents.ProviderPrivate}, []string{"PinPlugAtGCTime(199)"}},
		{[]string{"--provider", clrevents.ProviderRundown, "--event", "GCStart"}, nil},
	}
	for _, c := range cases {
		code, out, errOut := run(t, append([]string{"trace", "events", path}, c.args...)...)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) > 2 {
				got = append(got, f[2])
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: got %v, want %v (%s)", c.args, got, c.want, errOut)
		}
		if c.want == nil && code != exitFailure || c.want != nil && code != 0 {
			t.Errorf("%v: exit %d", c.args, code)
		}
	}
}

// TestTraceEventsNoMatch: a filter that matches nothing says so on stderr,
// naming what the trace has, and exits 1 (as grep).
func TestTraceEventsNoMatch(t *testing.T) {
	path := writeRuntimeTrace(t)
	code, out, errOut := run(t, "trace", "events", path, "--provider", "Nope")
	if code != exitFailure || out != "" {
		t.Errorf("--provider Nope: exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"no event of", "--provider Nope", "Microsoft-Windows-DotNETRuntime (6)",
		"Microsoft-Windows-DotNETRuntimeRundown (1)", "Microsoft-Windows-DotNETRuntimePrivate (1)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--provider Nope: stderr lacks %q:\n%s", want, errOut)
		}
	}
	code, _, errOut = run(t, "trace", "events", path, "--provider", clrevents.ProviderRuntime, "--event", "Nope", "--json")
	if code != exitFailure {
		t.Errorf("--event Nope: exit %d", code)
	}
	for _, want := range []string{"--event Nope", "GCStart(1) (2)", "ExceptionThrown(80) (1)", "Event(9999) (1)", "GC/Start"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--event Nope: stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "MethodDCEndVerbose") {
		t.Errorf("--event Nope lists events of providers not asked for:\n%s", errOut)
	}
	// Without filters an empty trace is not an error.
	var buf bytes.Buffer
	w, _ := nettrace.NewWriter(&buf, nettrace.WriterConfig{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runIn(t, buf.Bytes(), "trace", "events", "-"); code != 0 || out != "" || errOut != "" {
		t.Errorf("empty trace: exit %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runIn(t, buf.Bytes(), "trace", "events", "-", "--event", "GCStart"); code != exitFailure || !strings.Contains(errOut, "holds no events") {
		t.Errorf("empty trace with a filter: exit %d %q", code, errOut)
	}
}

func TestTraceStatsRuntimeNames(t *testing.T) {
	path := writeRuntimeTrace(t)
	code, out, _ := run(t, "trace", "stats", path)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"2  Microsoft-Windows-DotNETRuntime/1 GCStart\n", "1  Microsoft-Windows-DotNETRuntimeRundown/144 MethodDCEndVerbose\n",
		"1  Microsoft-Windows-DotNETRuntimePrivate/199 PinPlugAtGCTime\n", "1  Microsoft-Windows-DotNETRuntime/9999\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lack %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "trace", "stats", path, "--json")
	var st struct {
		EventNames map[string]string `json:"eventNames"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	if st.EventNames["Microsoft-Windows-DotNETRuntime/80"] != "ExceptionThrown" || st.EventNames["Microsoft-Windows-DotNETRuntime/9999"] != "" {
		t.Errorf("eventNames %v", st.EventNames)
	}
}

func TestStopEventMatchesRuntimeEvents(t *testing.T) {
	path := writeRuntimeTrace(t)
	cases := []struct {
		provider, event, filter string
		want                    int // matching events
	}{
		{clrevents.ProviderRuntime, "GCStart", "", 2},
		{"microsoft-windows-dotnetruntime", "GC/Start", "Count:8", 1},
		{clrevents.ProviderRuntime, "ExceptionThrown_V1", "ExceptionMessage:boom,ExceptionHRESULT:0x80131509", 1},
		{clrevents.ProviderRuntime, "ExceptionThrown", "ExceptionMessage:other", 0},
		{clrevents.ProviderRundown, "Method/DCStopVerbose", "MethodNamespace:Program,MethodName:Main", 1},
		{clrevents.ProviderRuntime, "MethodDCEndVerbose", "", 0},
		{clrevents.ProviderRuntime, "", "", 6},
	}
	for _, c := range cases {
		s, err := parseStopEvent(c.provider, c.event, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := nettrace.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ev, err := range rd.All() {
			if err != nil {
				t.Fatal(err)
			}
			if s.Match(ev, rd.Header().PointerSize) {
				n++
			}
		}
		f.Close()
		if n != c.want {
			t.Errorf("%s %q %q: %d matches, want %d", c.provider, c.event, c.filter, n, c.want)
		}
	}
}

// TestTraceEventsModernCaptures runs trace events on the captures of .NET
// 8, 10 and 11 (clrdiag's and dotnet-trace's) and checks that the runtime's
// events of issue 31's list print with named fields, and that no runtime
// event prints unnamed, as raw bytes or with a payload error.
func TestTraceEventsModernCaptures(t *testing.T) {
	want := map[string][]int{ // provider -> event ids that must show named fields
		clrevents.ProviderRuntime: {29, 30, 31, 33, 39, 58, 70, 71, 85, 151, 200, 202, 204, 205, 209,
			280, 281, 282, 283, 284, 290, 291, 292, 296},
		clrevents.ProviderRundown: {10, 152, 158},
	}
	named := map[string]bool{}
	fieldRE := regexp.MustCompile(`^\S+  (Microsoft-Windows-DotNETRuntime\w*)  (\w+)\((\d+)\)  thread=\d+  \w+=`)
	var all strings.Builder
	for _, v := range []string{"8.0.34", "10.0.15", "11.0.0"} {
		for _, prof := range []string{"default", "gc-verbose"} {
			for _, tool := range []string{"clrdiag", "dotnet-trace"} {
				rel := fmt.Sprintf("clrdiag/workloads-%s-linux-x64-%s.%s.nettrace.zip", v, prof, tool)
				path := filepath.Join(t.TempDir(), "t.nettrace")
				if err := os.WriteFile(path, testcapture.Load(t, rel), 0o600); err != nil {
					t.Fatal(err)
				}
				for provider := range want {
					code, out, errOut := run(t, "trace", "events", path, "--provider", provider)
					if code != 0 {
						t.Fatalf("%s %s: exit %d: %s", rel, provider, code, errOut)
					}
					all.WriteString(out)
				}
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(all.String()), "\n") {
		if strings.Contains(line, "payload=") || strings.Contains(line, "payload error") || strings.Contains(line, "  Event(") {
			t.Errorf("runtime event without named fields: %.300s", line)
			continue
		}
		if m := fieldRE.FindStringSubmatch(line); m != nil {
			named[m[1]+"/"+m[3]] = true
		}
	}
	for provider, ids := range want {
		for _, id := range ids {
			if !named[fmt.Sprintf("%s/%d", provider, id)] {
				t.Errorf("%s event %d: no line with named fields", provider, id)
			}
		}
	}
}

// writeLoggingTrace writes FormattedMessage events of the
// Microsoft-Extensions-Logging provider, as the EventSourceLogger does, at
// the ILogger levels given.
func writeLoggingTrace(t *testing.T, levels ...int32) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{ProcessID: 77, ProcessorCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	md := &nettrace.Metadata{ID: 1, ProviderName: loggingProvider, EventID: 9, EventName: "FormattedMessage", Level: 4,
		Fields: []nettrace.Field{{Name: "Level", Type: nettrace.TypeInt32}, {Name: "FactoryID", Type: nettrace.TypeInt32},
			{Name: "LoggerName", Type: nettrace.TypeString}, {Name: "EventId", Type: nettrace.TypeInt32},
			{Name: "EventName", Type: nettrace.TypeString}, {Name: "FormattedMessage", Type: nettrace.TypeString}}}
	if err := w.AddMetadata(md); err != nil {
		t.Fatal(err)
	}
	for i, lv := range levels {
		p, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Name: "Level", Value: lv}, {Name: "FactoryID", Value: int32(1)},
			{Name: "LoggerName", Value: "App.Orders"}, {Name: "EventId", Value: int32(42)}, {Name: "EventName", Value: "Slow"},
			{Name: "FormattedMessage", Value: "took 123 ms"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: uint32(i + 1), ThreadID: 9, CaptureThreadID: 9,
			Timestamp: int64(i+1) * 1000, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "logging.nettrace")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTraceEventsLoggingLevel: the Level of a Microsoft-Extensions-Logging
// event is ILogger's LogLevel and shows by its name (2 is Information,
// where EventSource's 2 is Error), in text and JSON; a value out of range
// shows as the number. A stopping-event filter takes the name or the
// number.
func TestTraceEventsLoggingLevel(t *testing.T) {
	path := writeLoggingTrace(t, 0, 2, 3, 4, 5, 6, 9)
	code, out, errOut := run(t, "trace", "events", path)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"Trace", "Information", "Warning", "Error", "Critical", "None", "9"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if want := `FormattedMessage(9)  thread=9  Level=` + w + `  FactoryID=1  LoggerName="App.Orders"  EventId=42`; !strings.Contains(lines[i], want) {
			t.Errorf("line %d lacks %q:\n%s", i, want, lines[i])
		}
	}
	_, out, _ = run(t, "trace", "events", path, "--json")
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Payload["Level"] != want[i] {
			t.Errorf("JSON line %d: Level %v (%v), want %q", i, ev.Payload["Level"], err, want[i])
		}
	}
	for _, c := range []struct {
		filter string
		want   int
	}{{"Level:Warning", 1}, {"Level:3", 1}, {"Level:9", 1}, {"Level:Error,LoggerName:App.Orders", 1}, {"Level:7", 0}} {
		s, err := parseStopEvent(loggingProvider, "FormattedMessage", c.filter)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := nettrace.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ev, err := range rd.All() {
			if err != nil {
				t.Fatal(err)
			}
			if s.Match(ev, rd.Header().PointerSize) {
				n++
			}
		}
		f.Close()
		if n != c.want {
			t.Errorf("stopping-event filter %q: %d matches, want %d", c.filter, n, c.want)
		}
	}
}
