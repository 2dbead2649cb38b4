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
	// Rates are kept per second.
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate,
		Interval: 2 * time.Second, Time: t0, Value: 1000})
	// Other providers, tagged series and missing values are not charted.
	h.add(&counters.Sample{Provider: "Microsoft.AspNetCore.Hosting", Name: "requests-per-second", Time: t0, Value: 1})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "tagged", Tags: []counters.Tag{{Key: "k", Value: "v"}}, Time: t0, Value: 1})
	h.add(&counters.Sample{Provider: "System.Runtime", Name: "none", NoValue: true, Time: t0})
	if len(h.series) != 2 {
		t.Fatalf("series %v", h.series)
	}
	cpu := h.series["cpu-usage"]
	pts := cpu.after(0)
	if len(pts) != HistoryLen || pts[0][1] != 50 || pts[HistoryLen-1][1] != HistoryLen+49 || cpu.label != "CPU Usage" {
		t.Fatalf("%d points, first %v, last %v", len(pts), pts[0], pts[len(pts)-1])
	}
	last := int64(pts[HistoryLen-3][0])
	if got := cpu.after(last); len(got) != 2 || got[0][1] != HistoryLen+48 {
		t.Errorf("after the third last: %v", got)
	}
	a := h.series["alloc-rate"]
	if p := a.after(0); len(p) != 1 || p[0][1] != 500 || a.unit != "B/s" || !a.rate || a.label != "alloc-rate" {
		t.Errorf("rate: %+v %v", a, p)
	}
	// The number of series is bounded.
	for i := range 2 * maxHistorySeries {
		h.add(&counters.Sample{Provider: "System.Runtime", Name: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Time: t0, Value: 1})
	}
	if len(h.series) != maxHistorySeries {
		t.Errorf("%d series kept, want %d", len(h.series), maxHistorySeries)
	}
}
