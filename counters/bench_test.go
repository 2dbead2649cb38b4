package counters

import (
	"bytes"
	"testing"

	"github.com/clrdiag/clrdiag/nettrace"
)

// BenchmarkDecode measures one interval's worth of events: an EventCounter,
// a Metrics counter and a histogram.
func BenchmarkDecode(b *testing.B) {
	st := newStream(b)
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "route=/a,code=200", "3", "10", int32(1))
	st.metric(6, 2, "S1", "Shop", "", "lat", "ms", "", "0.5=1;0.95=2;0.99=3", int32(5), 9.5, int32(2))
	r, err := nettrace.NewReader(bytes.NewReader(st.bytes()))
	if err != nil {
		b.Fatal(err)
	}
	var evs []nettrace.Event
	for ev, err := range r.All() {
		if err != nil {
			b.Fatal(err)
		}
		e := *ev
		e.Payload = bytes.Clone(ev.Payload)
		evs = append(evs, e)
	}
	plan := &Plan{Specs: []Spec{{Provider: "Shop"}, {Provider: "System.Runtime"}}, Interval: 1e9, SessionID: "S1", ClientID: "C1"}
	d := NewDecoder(plan)
	n := 0
	fn := func(Update) error { n++; return nil }
	b.ReportAllocs()
	for b.Loop() {
		for i := range evs {
			if err := d.Decode(&evs[i], fn); err != nil {
				b.Fatal(err)
			}
		}
	}
	if n == 0 {
		b.Fatal("no samples")
	}
}
