package logs

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

func str16(name string) nettrace.Field  { return nettrace.Field{Name: name, Type: nettrace.TypeString} }
func int32f(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeInt32} }

// The layouts of LoggingEventSource's events: .NET 9+ (with the Activity
// ids, and the message in MessageJson) and Microsoft.Extensions.Logging
// 3.1's.
var (
	formattedNew = []nettrace.Field{int32f("Level"), int32f("FactoryID"), str16("LoggerName"), int32f("EventId"), str16("EventName"), str16("FormattedMessage"),
		str16("ActivityTraceId"), str16("ActivitySpanId"), str16("ActivityTraceFlags")}
	jsonNew = []nettrace.Field{int32f("Level"), int32f("FactoryID"), str16("LoggerName"), int32f("EventId"), str16("EventName"), str16("ExceptionJson"),
		str16("ArgumentsJson"), str16("FormattedMessage"), str16("ActivityTraceId"), str16("ActivitySpanId"), str16("ActivityTraceFlags")}
	formatted31 = []nettrace.Field{int32f("Level"), int32f("FactoryID"), str16("LoggerName"), int32f("EventId"), str16("EventName"), str16("FormattedMessage")}
	json31      = []nettrace.Field{int32f("Level"), int32f("FactoryID"), str16("LoggerName"), int32f("EventId"), str16("EventName"), str16("ExceptionJson"), str16("ArgumentsJson")}
	scopeStart  = []nettrace.Field{int32f("ID"), int32f("FactoryID"), str16("LoggerName"), str16("ArgumentsJson")}
	scopeStop   = []nettrace.Field{int32f("ID"), int32f("FactoryID"), str16("LoggerName")}
)

type evOpt struct {
	thread   uint64
	activity nettrace.GUID
	related  nettrace.GUID
}

func mkEvent(t testing.TB, name string, fields []nettrace.Field, o evOpt, values ...any) *nettrace.Event {
	t.Helper()
	obj := make(nettrace.Object, len(fields))
	for i, f := range fields {
		v := values[i]
		if n, ok := v.(int); ok {
			v = int32(n)
		}
		obj[i] = nettrace.NamedValue{Name: f.Name, Value: v}
	}
	p, err := nettrace.AppendPayload(nil, fields, obj)
	if err != nil {
		t.Fatal(err)
	}
	return &nettrace.Event{Metadata: &nettrace.Metadata{ProviderName: Provider, EventName: name, EventID: 99, Fields: fields},
		Payload: p, ThreadID: o.thread, ActivityID: o.activity, RelatedActivityID: o.related}
}

func decodeAll(t *testing.T, cfg Config, evs ...*nettrace.Event) []*Entry {
	t.Helper()
	d := NewDecoder(cfg)
	var out []*Entry
	emit := func(e *Entry) error { out = append(out, e); return nil }
	for _, ev := range evs {
		if err := d.Decode(ev, emit); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(emit); err != nil {
		t.Fatal(err)
	}
	if d.Skipped != 0 {
		t.Fatalf("%d events skipped", d.Skipped)
	}
	return out
}

func guid(b byte) nettrace.GUID { return nettrace.GUID{b, 1, 2, 3} }

// The .NET 9+ layout: the MessageJson carries the message and the
// Activity; a FormattedMessage is paired with it.
func TestDecodeNewLayout(t *testing.T) {
	trace := "0af7651916cd43dd8448eb211c80319c"
	scope := evOpt{thread: 1, activity: guid(1)}
	got := decodeAll(t, Config{},
		mkEvent(t, "ActivityJsonStart", scopeStart, scope, 1, 1, "App.Web", `{"RequestPath":"/a","{OriginalFormat}":"Path {RequestPath}"}`),
		mkEvent(t, "FormattedMessage", formattedNew, scope, 3, 1, "App.Web", 7, "Slow", "slow /a", trace, "b7ad6b7169203331", "01"),
		mkEvent(t, "MessageJson", jsonNew, scope, 3, 1, "App.Web", 7, "Slow", "{}", `{"Path":"/a","N":5,"{OriginalFormat}":"slow {Path}"}`, "slow /a", trace, "b7ad6b7169203331", "01"),
		mkEvent(t, "ActivityJsonStop", scopeStop, scope, 1, 1, "App.Web"),
		// Only JsonMessage enabled: no FormattedMessage before it.
		mkEvent(t, "MessageJson", jsonNew, evOpt{thread: 2}, 4, 1, "App.Db", 0, "", `{"TypeName":"System.Exception","Message":"boom","HResult":-2146233088,"VerboseMessage":"System.Exception: boom\n   at X()"}`,
			`{}`, "query failed", "00000000000000000000000000000000", "0000000000000000", "00"),
	)
	if len(got) != 2 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	e := got[0]
	if e.Level != Warning || e.Category != "App.Web" || e.EventID != 7 || e.EventName != "Slow" || e.Message != "slow /a" || e.TraceID != trace || e.SpanID != "b7ad6b7169203331" {
		t.Fatalf("%+v", e)
	}
	if len(e.State) != 3 || e.State[1] != (KV{"N", "5"}) || len(e.Scopes) != 1 || e.Scopes[0].Message() != "Path /a" {
		t.Fatalf("state %+v scopes %+v", e.State, e.Scopes)
	}
	e = got[1]
	if e.Level != Error || e.Message != "query failed" || e.Exception == nil || e.Exception.HResult != -2146233088 || e.Exception.String() != "System.Exception: boom\n   at X()" || e.TraceID != "" || len(e.Scopes) != 0 {
		t.Fatalf("%+v %+v", e, e.Exception)
	}
}

// Microsoft.Extensions.Logging 3.1's layout, whose MessageJson has no text:
// the text comes from the FormattedMessage; without one it is made from
// the {OriginalFormat}. Scopes without activity ids are tracked per thread.
func TestDecode31LayoutAndThreadScopes(t *testing.T) {
	t1, t2 := evOpt{thread: 1}, evOpt{thread: 2}
	got := decodeAll(t, Config{DefaultLevel: Information},
		mkEvent(t, "ActivityJsonStart", scopeStart, t1, 5, 1, "S", `{"A":"1","{OriginalFormat}":"outer {A}"}`),
		mkEvent(t, "ActivityJsonStart", scopeStart, t1, 6, 1, "S", `{"B":"2"}`),
		mkEvent(t, "FormattedMessage", formatted31, t1, 2, 1, "App", 1, "", "hello world"),
		mkEvent(t, "FormattedMessage", formatted31, t2, 2, 1, "Other", 2, "", "on thread 2"),
		mkEvent(t, "MessageJson", json31, t1, 2, 1, "App", 1, "", "{}", `{"Who":"world","{OriginalFormat}":"hello {Who}"}`),
		mkEvent(t, "ActivityJsonStop", scopeStop, t1, 6, 1, "S"),
		mkEvent(t, "MessageJson", json31, t1, 2, 1, "App", 3, "", "{}", `{"X":"y","{OriginalFormat}":"made {X} {{literal}} {Missing}"}`),
		mkEvent(t, "FormattedMessage", formatted31, t1, 1, 1, "App", 4, "", "debug, filtered"),
		mkEvent(t, "MessageJson", json31, t1, 1, 1, "App", 4, "", "{}", `{}`),
	)
	var lines []string
	for _, e := range got {
		var sc []string
		for _, s := range e.Scopes {
			sc = append(sc, s.Message())
		}
		lines = append(lines, e.Category+"|"+e.Message+"|"+strings.Join(sc, " => "))
	}
	want := "App|hello world|outer 1 => B:2\nApp|made y {literal} {Missing}|outer 1\nOther|on thread 2|"
	if strings.Join(lines, "\n") != want {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), want)
	}
}

func TestConfigFilterSpecsAndAllows(t *testing.T) {
	cfg := Config{DefaultLevel: Warning, Filters: []Filter{{"Microsoft.AspNetCore*", Error}, {"App.Orders", Trace}}}
	if got := cfg.FilterSpecs(); got != "Microsoft.AspNetCore*:Error;App.Orders:Trace;*:Warning" {
		t.Fatal(got)
	}
	cases := []struct {
		cat   string
		level Level
		want  bool
	}{
		{"App", Information, false}, {"App", Warning, true}, {"App.Orders", Trace, true}, {"App.Orders.Sub", Debug, true},
		{"App.OrdersX", Debug, false}, {"Microsoft.AspNetCore.Hosting", Warning, false}, {"Microsoft.AspNetCore", Error, true},
		{"App", None, false},
	}
	for _, c := range cases {
		if got := cfg.Allows(c.cat, c.level); got != c.want {
			t.Errorf("Allows(%s, %v) = %v", c.cat, c.level, got)
		}
	}
	app := Config{UseAppFilters: true, Filters: []Filter{{"Noisy*", Critical}}}
	if app.FilterSpecs() != "UseAppFilters;Noisy*:Critical" || !app.Allows("Any", Trace) || app.Allows("Noisy.X", Error) {
		t.Fatal(app.FilterSpecs())
	}
	for s, want := range map[string]Level{"3": Warning, "warning": Warning, "Info": Information, "crit": Critical, "Trace": Trace} {
		if l, err := ParseLevel(s); err != nil || l != want {
			t.Errorf("ParseLevel(%q) = %v %v", s, l, err)
		}
	}
	for _, s := range []string{"7", "-1", "loud"} {
		if _, err := ParseLevel(s); err == nil {
			t.Errorf("ParseLevel(%q) accepted", s)
		}
	}
}

func sampleEntry() *Entry {
	return &Entry{
		Time: time.Date(2026, 5, 1, 10, 0, 0, 123000000, time.UTC), Level: Error, Category: "App.Orders", EventID: 20, EventName: "OrderFailed",
		Message: "Order 7 failed\nsecond line",
		State:   []KV{{"OrderId", "7"}, {"{OriginalFormat}", "Order {OrderId} failed"}},
		Scopes:  []Scope{{Category: "App", Values: []KV{{"RequestId", "42"}, {"{OriginalFormat}", "RequestId:{RequestId}"}}}, {Values: []KV{{"Tenant", "a"}}}},
		Exception: &Exception{Type: "System.InvalidOperationException", Message: "out of stock",
			Details: "System.InvalidOperationException: out of stock\n   at Program.Demo()"},
	}
}

func TestTextWriter(t *testing.T) {
	var b bytes.Buffer
	if err := NewTextWriter(&b).Write(sampleEntry()); err != nil {
		t.Fatal(err)
	}
	want := "2026-05-01 10:00:00Z fail: App.Orders[20]\n" +
		"      => RequestId:42 => Tenant:a\n" +
		"      Order 7 failed\n" +
		"      second line\n" +
		"      System.InvalidOperationException: out of stock\n" +
		"         at Program.Demo()\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJSONWriter(t *testing.T) {
	var b bytes.Buffer
	if err := NewJSONWriter(&b, false).Write(sampleEntry()); err != nil {
		t.Fatal(err)
	}
	want := `{"Timestamp":"2026-05-01T10:00:00.123Z","LogLevel":"Error","EventId":"20","EventName":"OrderFailed","Category":"App.Orders",` +
		`"Message":"Order 7 failed\nsecond line","Exception":"System.InvalidOperationException: out of stock\n   at Program.Demo()",` +
		`"State":{"Message":"Order 7 failed\nsecond line","OrderId":"7","{OriginalFormat}":"Order {OrderId} failed"},` +
		`"Scopes":{"RequestId":"42","{OriginalFormat}":"RequestId:{RequestId}","Tenant":"a"}}` + "\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	NewJSONWriter(&b, true).Write(sampleEntry())
	if b.Bytes()[0] != 0x1e {
		t.Fatalf("no record separator: %q", b.String()[:10])
	}
}

// FuzzDecode feeds arbitrary payloads under every event layout: the
// decoder must never panic, whatever a process writes.
func FuzzDecode(f *testing.F) {
	ok := mkEvent(f, "MessageJson", jsonNew, evOpt{}, 3, 1, "C", 1, "", "{}", `{"a":"b"}`, "m", "", "", "")
	f.Add(ok.Payload, uint8(1))
	f.Add([]byte{1, 0, 0, 0}, uint8(0))
	layouts := []struct {
		name   string
		fields []nettrace.Field
	}{{"FormattedMessage", formattedNew}, {"MessageJson", jsonNew}, {"FormattedMessage", formatted31}, {"MessageJson", json31},
		{"ActivityJsonStart", scopeStart}, {"ActivityJsonStop", scopeStop}}
	f.Fuzz(func(t *testing.T, payload []byte, which uint8) {
		l := layouts[int(which)%len(layouts)]
		d := NewDecoder(Config{})
		ev := &nettrace.Event{Metadata: &nettrace.Metadata{ProviderName: Provider, EventName: l.name, Fields: l.fields}, Payload: payload, ActivityID: guid(which)}
		for range 3 {
			_ = d.Decode(ev, func(e *Entry) error {
				var b bytes.Buffer
				_ = NewTextWriter(&b).Write(e)
				_ = NewJSONWriter(&b, false).Write(e)
				return nil
			})
		}
		_ = d.Flush(func(*Entry) error { return nil })
	})
}
