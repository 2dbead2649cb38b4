package counters

import (
	"bytes"
	"context"
	"testing"

	"github.com/clrdiag/clrdiag/nettrace"
)

// fuzzLayouts are the payload layouts the decoder meets: every
// MetricsEventSource signature, then the EventCounters Mean and Sum forms.
func fuzzLayouts() []*nettrace.Metadata {
	var mds []*nettrace.Metadata
	for i, sig := range metricsSigs {
		mds = append(mds, &nettrace.Metadata{ID: uint32(i + 1), ProviderName: MetricsProvider, EventID: sig.id, EventName: sig.name, Version: sig.version, Fields: sig.fields})
	}
	for _, f := range [][]nettrace.Field{meanFields, sumFields} {
		mds = append(mds, &nettrace.Metadata{ID: uint32(len(mds) + 1), ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters",
			Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: f}}}}})
	}
	return mds
}

// FuzzDecode feeds arbitrary payloads to the decoder under every layout:
// it must never panic and must only report warnings or valid samples.
func FuzzDecode(f *testing.F) {
	mds := fuzzLayouts()
	st := newStream(f)
	st.metric(4, 1, "S1", "Shop", "", "orders", "", "a=b", "1.5", "3")
	st.metric(6, 1, "S1", "Shop", "", "lat", "ms", "", "0.5=1;0.99=2", int32(3), 4.5)
	st.metric(17, 0, "C1", "1", "2", "3", "4", "5", "6")
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
	st.sum("System.Runtime", "exception-count", "Exception Count", "00:00:01", 1000, 2)
	r, err := nettrace.NewReader(bytes.NewReader(st.bytes()))
	if err != nil {
		f.Fatal(err)
	}
	seeds := 0
	for ev, err := range r.All() {
		if err != nil {
			f.Fatal(err)
		}
		for i, md := range mds {
			if md.EventName == ev.Metadata.EventName && md.Version == ev.Metadata.Version && md.EventID == ev.Metadata.EventID &&
				len(md.Fields) == len(ev.Metadata.Fields) && (md.EventName != "EventCounters" || len(md.Fields[0].Fields[0].Fields) == len(ev.Metadata.Fields[0].Fields[0].Fields)) {
				f.Add(uint8(i), bytes.Clone(ev.Payload))
				seeds++
			}
		}
	}
	if seeds != 5 {
		f.Fatalf("%d seeds, want one per event", seeds)
	}
	plan := &Plan{Specs: []Spec{{Provider: "Shop"}, {Provider: "System.Runtime"}}, Interval: 1e9, SessionID: "S1", ClientID: "C1"}
	f.Fuzz(func(t *testing.T, layout uint8, payload []byte) {
		md := mds[int(layout)%len(mds)]
		d := NewDecoder(plan)
		ev := &nettrace.Event{Metadata: md, Payload: payload}
		err := d.Decode(ev, func(u Update) error {
			if (u.Sample == nil) == (u.Warning == nil) {
				t.Fatalf("update with both or neither: %+v", u)
			}
			if u.Sample != nil && (u.Sample.Name == "" || u.Sample.Provider == "") {
				t.Fatalf("sample without a name: %+v", u.Sample)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Decode returned %v; it should only return the callback's error", err)
		}
	})
}

// FuzzReadTrace feeds arbitrary streams to ReadTrace: errors, no panics.
func FuzzReadTrace(f *testing.F) {
	st := newStream(f)
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "", "1", "1", int32(1))
	st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 1, 1, 1, 1)
	f.Add(st.bytes())
	plan := &Plan{Specs: []Spec{{Provider: "Shop"}, {Provider: "System.Runtime"}}, Interval: 1e9, SessionID: "S1", ClientID: "C1"}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ReadTrace(context.Background(), bytes.NewReader(data), plan, func(Update) error { return nil })
	})
}
