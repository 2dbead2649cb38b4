package counters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

func collectUpdates(t *testing.T, p *Plan, data []byte) []Update {
	t.Helper()
	var got []Update
	if err := ReadTrace(context.Background(), bytes.NewReader(data), p, func(u Update) error {
		got = append(got, u)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func testPlan(t *testing.T, specs string) *Plan {
	t.Helper()
	sp, err := ParseSpecs(specs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Config{Specs: sp, SessionID: "S1", ClientID: "C1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// describe renders an update without its time for comparisons.
func describe(u Update) string {
	if u.Warning != nil {
		return "warning " + u.Warning.String()
	}
	s := *u.Sample
	s.Time = time.Time{}
	return fmt.Sprintf("%+v", s)
}

func TestDecodeEveryMetricsEvent(t *testing.T) {
	const tags = "route=/a,code=200"
	st := newStream(t)
	var want []Sample
	var wantWarn []string
	st.metric(1, 0, "hello")
	st.metric(2, 0, "S1", t0, t0.Add(time.Second))
	st.metric(10, 0, "S1")
	st.metric(11, 0, "S1", "Shop", "1.0", "orders", "Counter`1", "{order}", "orders placed")
	st.metric(7, 0, "S1", "Shop", "1.0", "orders", "Counter`1", "{order}", "orders placed")
	st.metric(7, 1, "S1", "Shop", "1.0", "queue", "UpDownCounter`1", "", "", "a=b", "m=n", "1234")
	st.metric(7, 2, "S1", "Shop", "1.0", "latency", "Histogram`1", "ms", "", "", "", "", int32(3), "https://schema")

	st.metric(4, 0, "S1", "Shop", "1.0", "orders", "{order}", tags, "5")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "orders", Unit: "{order}", Kind: KindRate, Value: 5, Tags: ParseTags(tags), Interval: time.Second, Elapsed: time.Second})
	st.metric(4, 1, "S1", "Shop", "1.0", "orders", "{order}", "", "2.5", "10")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "orders", Unit: "{order}", Kind: KindRate, Value: 2.5, Total: 10, HasTotal: true, Interval: time.Second, Elapsed: time.Second})
	st.metric(4, 2, "S1", "Shop", "1.0", "orders", "{order}", "", "", "", int32(1))
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "orders", Unit: "{order}", Kind: KindRate, NoValue: true, Interval: time.Second, Elapsed: time.Second})
	st.metric(5, 0, "S1", "Shop", "", "temp", "Cel", "", "42.5")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "temp", Unit: "Cel", Kind: KindGauge, Value: 42.5, Interval: time.Second, Elapsed: time.Second})
	st.metric(5, 2, "S1", "Shop", "", "temp", "Cel", "", "", int32(4))
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "temp", Unit: "Cel", Kind: KindGauge, NoValue: true, Interval: time.Second, Elapsed: time.Second})
	st.metric(6, 0, "S1", "Shop", "", "latency", "ms", "", "0.5=1;0.95=2;0.99=3")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "latency", Unit: "ms", Kind: KindHistogram, Quantiles: []Quantile{{0.5, 1}, {0.95, 2}, {0.99, 3}}, Interval: time.Second, Elapsed: time.Second})
	st.metric(6, 1, "S1", "Shop", "", "latency", "ms", "k=v", "0.5=1.5;0.95=2.5;0.99=3.5", int32(7), 12.5)
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "latency", Unit: "ms", Kind: KindHistogram, Quantiles: []Quantile{{0.5, 1.5}, {0.95, 2.5}, {0.99, 3.5}}, Count: 7, Sum: 12.5, Tags: []Tag{{"k", "v"}}, Interval: time.Second, Elapsed: time.Second})
	st.metric(6, 2, "S1", "Shop", "", "latency", "ms", "", "0.5=4;0.95=5;0.99=6", int32(2), 9.0, int32(3))
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "latency", Unit: "ms", Kind: KindHistogram, Quantiles: []Quantile{{0.5, 4}, {0.95, 5}, {0.99, 6}}, Count: 2, Sum: 9, Interval: time.Second, Elapsed: time.Second})
	st.metric(16, 1, "S1", "Shop", "", "queue", "", "", "-2", "8")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "queue", Kind: KindUpDown, Value: 8, Rate: -2, MeterTags: []Tag{{"m", "n"}}, InstrumentTags: []Tag{{"a", "b"}}, Interval: time.Second, Elapsed: time.Second})
	st.metric(16, 2, "S1", "Shop", "", "queue", "", "", "1", "9", int32(2))
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "queue", Kind: KindUpDown, Value: 9, Rate: 1, MeterTags: []Tag{{"m", "n"}}, InstrumentTags: []Tag{{"a", "b"}}, Interval: time.Second, Elapsed: time.Second})
	st.metric(4, 1, "S1", "Shop", "", "huge", "", "", "∞", "-Infinity")
	want = append(want, Sample{Meter: true, Provider: "Shop", Name: "huge", Kind: KindRate, Value: math.Inf(1), Total: math.Inf(-1), HasTotal: true, Interval: time.Second, Elapsed: time.Second})
	st.metric(8, 0, "S1", "Shop", "1.0", "orders", "Counter`1", "{order}", "orders placed")
	st.metric(8, 1, "S1", "Shop", "1.0", "queue", "UpDownCounter`1", "", "", "", "", "")
	st.metric(8, 2, "S1", "Shop", "1.0", "latency", "Histogram`1", "ms", "", "", "", "", int32(3))

	// Other sessions' events, meters nobody asked for: nothing.
	st.metric(4, 1, "OTHER", "Shop", "", "orders", "", "", "1", "1")
	st.metric(4, 1, "S1", "Unasked.Meter", "", "orders", "", "", "1", "1")
	st.metric(9, 0, "OTHER", "not ours")
	st.metric(15, 0, "S1")
	st.metric(17, 0, "C2", "10", "20", "1000", "1000", "1", "1")

	// Warnings, each once.
	st.metric(9, 0, "S1", "System.InvalidOperationException: boom\n   at Foo()")
	wantWarn = append(wantWarn, "warning error: the target's MetricsEventSource reported an error: System.InvalidOperationException: boom ...")
	st.metric(12, 0, "S1")
	st.metric(12, 0, "S1")
	wantWarn = append(wantWarn, "warning time-series limit: the time-series limit (MaxTimeSeries) was reached: new tag combinations are not shown")
	st.metric(13, 0, "S1")
	wantWarn = append(wantWarn, "warning histogram limit: the histogram limit (MaxHistograms) was reached: new histogram series are not shown")
	st.metric(14, 0, "S1", "callback threw")
	wantWarn = append(wantWarn, "warning callback error: an observable instrument's callback failed: callback threw")
	st.metric(15, 0, "another-tool")
	wantWarn = append(wantWarn, "warning multiple sessions: another tool's Metrics session (another-tool) is running in the target and a runtime before .NET 8 allows only one: no Meter values will arrive until it stops")
	// The running session's settings come first (expected*), then what
	// this client asked for (actual*).
	st.metric(17, 0, "C1", "20", "10", "1000", "1000", "2", "1")
	wantWarn = append(wantWarn, "warning shared session mismatch: the target's shared Metrics session (one per process on .NET 8+, shared with dotnet-counters, dotnet-monitor and clrdiag monitor) runs with other settings: RefreshInterval 2 (asked for 1), MaxHistograms 20 (asked for 10); "+
		"it did not take this session's meters, so only the meters it already reads arrive, at its settings. Ask for the same settings to share it (dotnet-counters' defaults: a 1 s refresh interval, 10 histograms, 1000 time series)")
	st.metric(4, 1, "S1", "Shop", "", "orders", "", "", "1,5", "3")
	wantWarn = append(wantWarn, `warning bad event: System.Diagnostics.Metrics event 4 (CounterRateValuePublished) skipped: instrument Shop/orders: value "1,5" is not a number`)
	st.metric(3, 0, "S1", t0, t0.Add(time.Second))

	got := collectUpdates(t, testPlan(t, "Shop"), st.bytes())
	var wantAll []string
	for i := range want {
		wantAll = append(wantAll, describe(Update{Sample: &want[i]}))
	}
	wantAll = append(wantAll, wantWarn...)
	var gotAll []string
	for _, u := range got {
		gotAll = append(gotAll, describe(u))
	}
	if strings.Join(gotAll, "\n") != strings.Join(wantAll, "\n") {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(gotAll, "\n"), strings.Join(wantAll, "\n"))
	}
	// Times are the events' times: the stream writes one every 100 ms.
	if first := got[0].Sample.Time; !first.After(t0) || first.Sub(t0)%(100*time.Millisecond) != 0 {
		t.Fatalf("first sample at %v (stream starts %v)", first, t0)
	}
}

// Meter and instrument tags come from BeginInstrumentReporting (v1+) and
// are attached to the instrument's values: by instrument id in v2 events
// (two meters of one name told apart by their tags), by names before.
func TestDecodeInstrumentTags(t *testing.T) {
	st := newStream(t)
	st.metric(7, 2, "S1", "Shop", "", "orders", "Counter`1", "", "", "kind=web", "region=eu,tier=1", "h1", int32(1), "")
	st.metric(7, 2, "S1", "Shop", "", "orders", "Counter`1", "", "", "kind=web", "region=us", "h2", int32(2), "")
	st.metric(7, 1, "S1", "Old", "", "hits", "Counter`1", "", "", "i=1", "m=1", "h3")
	st.metric(7, 2, "OTHER", "Old", "", "hits", "Counter`1", "", "", "wrong=1", "wrong=1", "h4", int32(9), "")
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "", "1", "1", int32(2))
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "", "2", "2", int32(1))
	st.metric(4, 1, "S1", "Old", "", "hits", "", "", "3", "3")
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "", "4", "4", int32(7)) // never announced: by name, the last announced
	st.metric(8, 2, "S1", "Shop", "", "orders", "Counter`1", "", "", "", "", "", int32(2))
	st.metric(8, 1, "S1", "Old", "", "hits", "Counter`1", "", "", "", "", "")
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "", "5", "5", int32(1))
	st.metric(4, 1, "S1", "Old", "", "hits", "", "", "6", "6")
	got := collectUpdates(t, testPlan(t, "Shop,Old"), st.bytes())
	want := []string{
		"1 kind=web region=us",
		"2 kind=web region=eu,tier=1",
		"3 i=1 m=1",
		"4 kind=web region=us",
		"5 kind=web region=eu,tier=1",
		"6  ",
	}
	var lines []string
	for _, u := range got {
		if u.Sample == nil {
			t.Fatalf("unexpected %s", describe(u))
		}
		s := u.Sample
		lines = append(lines, fmt.Sprintf("%v %s %s", s.Value, FormatTags(s.InstrumentTags), FormatTags(s.MeterTags)))
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("value instrumentTags meterTags:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeEventCounters(t *testing.T) {
	st := newStream(t)
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 12.5, 1, 12.5, 12.5)
	st.sum("System.Runtime", "exception-count", "Exception Count", "00:00:01", 1000, 3)
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 5000, 99, 1, 99, 99) // another session's interval
	st.mean("Not.Asked", "x", "X", "", 1000, 1, 1, 1, 1)
	st.mean("Clrdiag-Test", "test-latency", "Test Latency", "ms", 1000, 5.5, 10, 1, 10)
	st.sumAt("Clrdiag-Test", "test-requests", "Test Requests", "00:01:00", 1000, 2.5, 50) // 2.5 s measured
	st.mean("Clrdiag-Test", "unwanted", "", "", 1000, 1, 1, 1, 1)
	got := collectUpdates(t, testPlan(t, "System.Runtime,Clrdiag-Test[test-latency,test-requests]"), st.bytes())
	want := []Sample{
		{Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%", Kind: KindMean, Value: 12.5, Count: 1, Min: 12.5, Max: 12.5, Interval: time.Second, Elapsed: time.Second},
		{Provider: "System.Runtime", Name: "exception-count", DisplayName: "Exception Count", Kind: KindRate, Value: 3, Interval: time.Second, Elapsed: time.Second},
		{Provider: "Clrdiag-Test", Name: "test-latency", DisplayName: "Test Latency", Unit: "ms", Kind: KindMean, Value: 5.5, Count: 10, Min: 1, Max: 10, Interval: time.Second, Elapsed: time.Second},
		{Provider: "Clrdiag-Test", Name: "test-requests", DisplayName: "Test Requests", Kind: KindRate, Value: 50, Interval: time.Second, Elapsed: 2500 * time.Millisecond},
	}
	if len(got) != len(want) {
		for _, u := range got {
			t.Log(describe(u))
		}
		t.Fatalf("%d updates, want %d", len(got), len(want))
	}
	for i := range want {
		if describe(got[i]) != describe(Update{Sample: &want[i]}) {
			t.Errorf("update %d:\n%s\nwant\n%s", i, describe(got[i]), describe(Update{Sample: &want[i]}))
		}
	}
	// The rate is per second of the time measured, whatever the
	// interval asked for and the display scale (1 min) the source gives.
	if l, v := got[3].Sample.Label(), got[3].Sample.Shown(); l != "Test Requests (Count / 1 sec)" || v != 20 {
		t.Errorf("shown as %q %v, want Test Requests (Count / 1 sec) 20", l, v)
	}
}

// A provider name without the EventCounters\ prefix is read as both; once
// its Meter publishes, its EventCounters are dropped. With the prefix only
// the EventCounters count.
func TestMeterPreferredOverEventCounters(t *testing.T) {
	build := func() []byte {
		st := newStream(t)
		st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
		st.metric(7, 2, "S1", "System.Runtime", "", "dotnet.process.cpu.count", "ObservableUpDownCounter`1", "{cpu}", "", "", "", "", int32(1), "")
		st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 2, 1, 2, 2)
		st.metric(16, 2, "S1", "System.Runtime", "", "dotnet.process.cpu.count", "{cpu}", "", "0", "2", int32(1))
		return st.bytes()
	}
	var names []string
	for _, u := range collectUpdates(t, testPlan(t, "System.Runtime"), build()) {
		names = append(names, fmt.Sprintf("%s=%g", u.Sample.Name, u.Sample.Value))
	}
	if got := strings.Join(names, " "); got != "cpu-usage=1 dotnet.process.cpu.count=2" {
		t.Errorf("both views: %s", got)
	}
	names = nil
	p := testPlan(t, `EventCounters\System.Runtime`)
	if p.SessionID != "" || len(p.Providers) != 1 {
		t.Fatalf("EventCounters-only plan enables Metrics: %+v", p)
	}
	for _, u := range collectUpdates(t, p, build()) {
		names = append(names, fmt.Sprintf("%s=%g", u.Sample.Name, u.Sample.Value))
	}
	if got := strings.Join(names, " "); got != "cpu-usage=1 cpu-usage=2" {
		t.Errorf("EventCounters only: %s", got)
	}
}

func TestDecodeBadEventCounters(t *testing.T) {
	st := newStream(t)
	st.counter("System.Runtime", []nettrace.Field{sf("Name"), sf("CounterType")}, "odd", "Weird")
	st.counter("System.Runtime", []nettrace.Field{sf("Name"), sf("CounterType")}, "no-mean", "Mean")
	st.counter("System.Runtime", []nettrace.Field{sf("Name"), sf("CounterType")}, "no-inc", "Sum")
	st.counter("System.Runtime", []nettrace.Field{sf("CounterType")}, "Sum")
	flat := st.metadata("System.Runtime", 2, 1, "EventCounters", []nettrace.Field{sf("Name")})
	st.event(flat, nettrace.Object{{Name: "Name", Value: "x"}})
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
	var got []string
	for _, u := range collectUpdates(t, testPlan(t, ""), st.bytes()) {
		got = append(got, describe(u))
	}
	want := []string{
		`warning bad event: System.Runtime event 2 (EventCounters) skipped: counter odd has unknown CounterType "Weird"`,
		`warning bad event: System.Runtime event 2 (EventCounters) skipped: counter no-mean of type Mean has no Mean`,
		`warning bad event: System.Runtime event 2 (EventCounters) skipped: counter no-inc of type Sum has no Increment`,
		`warning bad event: System.Runtime event 2 (EventCounters) skipped: counter without a Name`,
		`warning bad event: System.Runtime event 2 (EventCounters) skipped: no Payload object`,
	}
	if len(got) != len(want)+1 || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") || !strings.Contains(got[len(want)], "cpu-usage") {
		t.Fatalf("got:\n%s", strings.Join(got, "\n"))
	}
}

func TestReadTraceCutStream(t *testing.T) {
	st := newStream(t)
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
	cut := st.flush() + 5
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 2, 1, 2, 2)
	data := st.bytes()
	var n int
	err := ReadTrace(context.Background(), bytes.NewReader(data[:cut]), testPlan(t, ""), func(Update) error { n++; return nil })
	if !errors.Is(err, ErrStreamCut) {
		t.Fatalf("cut stream: %v", err)
	}
	if n != 1 {
		t.Fatalf("%d samples before the cut", n)
	}
	stop := errors.New("enough")
	if err := ReadTrace(context.Background(), bytes.NewReader(data), testPlan(t, ""), func(Update) error { return stop }); err != stop {
		t.Fatalf("callback error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ReadTrace(ctx, bytes.NewReader(data), testPlan(t, ""), func(Update) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := ReadTrace(context.Background(), strings.NewReader("not a trace"), testPlan(t, ""), func(Update) error { return nil }); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestPlanProviders(t *testing.T) {
	sp, _ := ParseSpecs(`System.Runtime,Shop[orders],EventCounters\Legacy`)
	for _, tt := range []struct {
		major int
		want  string
	}{{0, "guid"}, {6, "guid"}, {8, "SHARED"}, {10, "SHARED"}} {
		p, err := NewPlan(Config{Specs: sp, RuntimeMajor: tt.major, RefreshInterval: 2500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, pr := range p.Providers {
			got = append(got, pr.String())
		}
		if (tt.want == "SHARED") != (p.SessionID == "SHARED") || len(p.SessionID) != map[bool]int{true: 6, false: 36}[tt.want == "SHARED"] || len(p.ClientID) != 36 {
			t.Errorf(".NET %d: session %q client %q", tt.major, p.SessionID, p.ClientID)
		}
		want := []string{
			"System.Runtime:0x0:4:EventCounterIntervalSec=2.5",
			"Shop:0x0:4:EventCounterIntervalSec=2.5",
			"Legacy:0x0:4:EventCounterIntervalSec=2.5",
			"System.Diagnostics.Metrics:0x2:4:SessionId=" + p.SessionID + ";Metrics=System.Runtime,Shop;RefreshInterval=2.5;MaxTimeSeries=1000;MaxHistograms=10;ClientId=" + p.ClientID,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf(".NET %d providers:\n%s\nwant\n%s", tt.major, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	p, err := NewPlan(Config{})
	if err != nil || len(p.Specs) != 1 || p.Specs[0].Provider != "System.Runtime" || p.Interval != time.Second {
		t.Fatalf("zero config: %+v %v", p, err)
	}
	// The Meters alone, at their own interval (the shared session's).
	p, err = NewPlan(Config{Specs: sp, RuntimeMajor: 8, RefreshInterval: 2 * time.Second, MetricsRefreshInterval: time.Second,
		MetersOnly: true, SessionID: "SHARED", ClientID: "C"})
	if err != nil || len(p.Providers) != 1 || p.Providers[0].String() != "System.Diagnostics.Metrics:0x2:4:SessionId=SHARED;Metrics=System.Runtime,Shop;RefreshInterval=1;MaxTimeSeries=1000;MaxHistograms=10;ClientId=C" {
		t.Errorf("Meters only: %+v %v", p, err)
	}
	onlyLegacy, _ := ParseSpecs(`EventCounters\Legacy`)
	for _, bad := range []Config{
		{RefreshInterval: time.Microsecond}, {RefreshInterval: 1500 * time.Microsecond}, {RefreshInterval: -time.Second},
		{MaxHistograms: -1}, {SessionID: "a;b"}, {Specs: []Spec{{Provider: "a=b"}}},
		{MetricsRefreshInterval: 1500 * time.Microsecond}, {MetersOnly: true, Specs: onlyLegacy},
	} {
		if _, err := NewPlan(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("NewPlan(%+v) = %v, want ErrConfig", bad, err)
		}
	}
}

func TestRuntimeMajor(t *testing.T) {
	for in, want := range map[string]int{"8.0.1+abc": 8, "9.0.0-rc.2.24473.5": 9, "10.0.0": 10, "": 0, "v8": 0, "8": 8, "99999.1": 0, "8x": 0} {
		if got := RuntimeMajor(in); got != want {
			t.Errorf("RuntimeMajor(%q) = %d, want %d", in, got, want)
		}
	}
}
