package monitor

import (
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

func TestHistory(t *testing.T) {
	var h history
	t0 := time.UnixMilli(1_000_000)
	for i := range HistoryLen + 50 {
		h.add(&counters.Sample{Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%",
			Time: t0.Add(time.Duration(i) * time.Second), Value: float64(i)})
	}
	// Rates are kept per second of the time they cover (not the interval
	// asked for, nor the display scale), in SI base units.
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate,
		Interval: time.Second, Elapsed: 2 * time.Second, Time: t0, Value: 1000})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "working-set", Unit: "MB", Time: t0, Value: 250})
	// Tagged series, other providers and levels published by Meters are
	// kept; missing values and histograms are not.
	h.add(&counters.Sample{Provider: "Microsoft.AspNetCore.Hosting", Name: "http.server.active_requests", Unit: "{request}",
		Kind: counters.KindUpDown, Meter: true, Tags: []counters.Tag{{Key: "url.scheme", Value: "http"}}, Time: t0, Value: 3, Rate: -1})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "dotnet.gc.collections", Unit: "{collection}", Kind: counters.KindRate, Meter: true,
		Tags: []counters.Tag{{Key: "gc.heap.generation", Value: "gen0"}}, Elapsed: 500 * time.Millisecond, Time: t0, Value: 2})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "none", NoValue: true, Time: t0})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "latency", Kind: counters.KindHistogram, Time: t0})
	if len(h.series) != 5 {
		t.Fatalf("series %v", h.series)
	}
	cpu := h.series["cpu-usage"]
	pts := cpu.since(0)
	if len(pts) != HistoryLen || pts[0][1] != 50 || pts[HistoryLen-1][1] != HistoryLen+49 || cpu.label != "CPU Usage" {
		t.Fatalf("%d points, first %v, last %v", len(pts), pts[0], pts[len(pts)-1])
	}
	last := int64(pts[HistoryLen-3][0])
	if got := cpu.since(last); len(got) != 3 || got[0][1] != HistoryLen+47 {
		t.Errorf("since the third last: %v", got)
	}
	// The latest collection seen again replaces its value.
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "cpu-usage", Unit: "%", Time: t0.Add(time.Duration(HistoryLen+49) * time.Second), Value: 7})
	if got := cpu.since(0); len(got) != HistoryLen || got[HistoryLen-1][1] != 7 {
		t.Errorf("a value of the same time: %v", got[HistoryLen-2:])
	}
	for key, want := range map[string]struct {
		v    float64
		unit string
		rate bool
	}{
		"alloc-rate":  {500, "B/s", true},
		"working-set": {250e6, "B", false},
		"Microsoft.AspNetCore.Hosting/http.server.active_requests{url.scheme=http}": {3, "", false},
		"dotnet.gc.collections{gc.heap.generation=gen0}":                            {4, "/s", true},
	} {
		s := h.series[key]
		if s == nil {
			t.Errorf("no series %s in %v", key, h.series)
			continue
		}
		if p := s.since(0); len(p) != 1 || p[0][1] != want.v || s.unit != want.unit || s.rate != want.rate {
			t.Errorf("%s: %v %q rate %v, want %v %q rate %v", key, p, s.unit, s.rate, want.v, want.unit, want.rate)
		}
	}
	// A provider whose Meter publishes drops its EventCounters.
	h.add(&counters.Sample{Provider: "Microsoft.AspNetCore.Hosting", Name: "current-requests", Time: t0, Value: 1})
	h.dropEventCounters("Microsoft.AspNetCore.Hosting")
	if h.series["Microsoft.AspNetCore.Hosting/current-requests"] != nil || h.series["Microsoft.AspNetCore.Hosting/http.server.active_requests{url.scheme=http}"] == nil {
		t.Errorf("after the Meter: %v", h.series)
	}
	// The number of series is bounded.
	for i := range 2 * maxHistorySeries {
		h.add(&counters.Sample{Provider: "System.Runtime", Name: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Time: t0, Value: 1})
	}
	if len(h.series) != maxHistorySeries {
		t.Errorf("%d series kept, want %d", len(h.series), maxHistorySeries)
	}
}
