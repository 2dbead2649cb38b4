package counters

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// collectAt writes a CollectionStart of session S1 at the stream time ms,
// whose own interval (the runtime's schedule) is [from, to] seconds after
// t0.
func (s *stream) collectAt(ms int64, from, to float64) {
	s.t.Helper()
	s.ticks = ms*int64(time.Millisecond) - int64(100*time.Millisecond) // event() adds 100 ms
	sec := func(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Second))) }
	s.metric(2, 0, "S1", sec(from), sec(to))
}

// A Metrics counter's rate covers the real time between the session's
// collections, not the interval the runtime's schedule gives them: a
// process stopped for 6 s reports [1 s, 2 s] for the collection that
// covers 7 s (and [2 s, 8 s] for the next, which covers 1 s). Every sample
// of a collection has the collection's time.
func TestDecodeMeterRatesOverRealTime(t *testing.T) {
	st := newStream(t)
	st.metric(7, 2, "S1", "Shop", "", "orders", "Counter`1", "", "", "", "", "", int32(1), "")
	st.collectAt(1000, 0, 1)
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "a=1", "10", "10", int32(1))
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "a=2", "20", "20", int32(1))
	st.collectAt(2000, 1, 2)
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "a=1", "10", "20", int32(1))
	st.collectAt(9000, 1, 2) // stopped from 2 s to 8 s
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "a=1", "70", "90", int32(1))
	st.collectAt(10000, 2, 8)
	st.metric(4, 2, "S1", "Shop", "", "orders", "", "a=1", "10", "100", int32(1))
	var got []string
	var times []time.Time
	for _, u := range collectUpdates(t, testPlan(t, "Shop"), st.bytes()) {
		s := u.Sample
		r, _ := s.PerSecond()
		got = append(got, fmt.Sprintf("%s %v/%v=%v", s.TagString(), s.Value, s.Elapsed, r))
		times = append(times, s.Time)
	}
	want := []string{"a=1 10/1s=10", "a=2 20/1s=20", "a=1 10/1s=10", "a=1 70/7s=10", "a=1 10/1s=10"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("rates:\n%s\nwant\n%s", strings.Join(got, " | "), strings.Join(want, " | "))
	}
	if !times[0].Equal(times[1]) || !times[0].Equal(t0.Add(time.Second)) {
		t.Errorf("the samples of one collection at %v and %v, want both at the collection (%v)", times[0], times[1], t0.Add(time.Second))
	}
}

// Levels are shown as levels: an instrument BeginInstrumentReporting calls
// an up-down counter, and System.Runtime's thread-pool levels, which .NET 9
// and 10 publish as counters, carry their current value, not a rate.
func TestDecodeUpDownPublishedAsCounters(t *testing.T) {
	st := newStream(t)
	st.metric(7, 2, "S1", "Shop", "", "queue", "ObservableUpDownCounter`1", "", "", "", "", "", int32(1), "")
	st.metric(7, 2, "S1", "System.Runtime", "", "dotnet.thread_pool.queue.length", "ObservableCounter`1", "{work_item}", "", "", "", "", int32(2), "")
	st.metric(7, 2, "S1", "System.Runtime", "", "dotnet.exceptions", "Counter`1", "{exception}", "", "", "", "", int32(3), "")
	st.collectAt(1000, 0, 1)
	st.metric(4, 2, "S1", "Shop", "", "queue", "", "", "", "5", int32(1)) // first collection: no rate yet
	st.metric(4, 2, "S1", "System.Runtime", "", "dotnet.thread_pool.queue.length", "{work_item}", "", "-3", "4", int32(2))
	st.metric(4, 2, "S1", "System.Runtime", "", "dotnet.exceptions", "{exception}", "", "", "7", int32(3))
	st.collectAt(2000, 1, 2)
	st.metric(4, 2, "S1", "System.Runtime", "", "dotnet.exceptions", "{exception}", "", "2", "9", int32(3))
	var got []string
	for _, u := range collectUpdates(t, testPlan(t, "Shop,System.Runtime"), st.bytes()) {
		s := u.Sample
		got = append(got, fmt.Sprintf("%s %v value=%v rate=%v total=%v/%v none=%v label=%q", s.Name, s.Kind, s.Value, s.Rate, s.Total, s.HasTotal, s.NoValue, s.Label()))
	}
	want := []string{
		`queue UpDownCounter value=5 rate=0 total=0/false none=false label="queue"`,
		`dotnet.thread_pool.queue.length UpDownCounter value=4 rate=-3 total=0/false none=false label="dotnet.thread_pool.queue.length ({work_item})"`,
		`dotnet.exceptions Rate value=0 rate=0 total=7/true none=true label="dotnet.exceptions ({exception} / 1 sec)"`,
		`dotnet.exceptions Rate value=2 rate=0 total=9/true none=false label="dotnet.exceptions ({exception} / 1 sec)"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("samples:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
