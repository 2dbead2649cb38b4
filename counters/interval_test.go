package counters

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// decodeAll decodes a test stream with a plan for interval and returns the
// samples' intervals (0 for a warning of the interval change).
func decodeAll(t *testing.T, b []byte, interval time.Duration) (got []time.Duration, warns []Warning) {
	t.Helper()
	p, err := NewPlan(Config{RefreshInterval: interval, Specs: []Spec{{Provider: "System.Runtime", EventCountersOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	err = ReadTrace(context.Background(), bytes.NewReader(b), p, func(u Update) error {
		if u.Warning != nil {
			warns = append(warns, *u.Warning)
			got = append(got, 0)
			return nil
		}
		got = append(got, u.Sample.Interval)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, warns
}

// at writes a cpu-usage EventCounters payload published for intervalMS, at
// the stream time ms.
func (s *stream) at(ms int64, intervalMS int) {
	s.t.Helper()
	s.ticks = ms*int64(time.Millisecond) - int64(100*time.Millisecond) // event() adds 100 ms
	s.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", intervalMS, 1, 1, 1, 1)
}

// A .NET Core 3.x runtime keeps one interval for every session: when
// another session asked for a shorter one, only that one is published. The
// session adopts it (with a warning) once payloads at it have come for
// longer than its own interval, and goes back to its own when it returns.
func TestDecoderAdoptsTheOnlyInterval(t *testing.T) {
	s := newStream(t)
	for ms := int64(1000); ms <= 6000; ms += 1000 {
		s.at(ms, 1000) // another session's 1 s; ours is 2 s
	}
	s.at(8000, 2000) // ours again (the other session ended, ours reopened)
	s.at(9000, 1000)
	got, warns := decodeAll(t, s.bytes(), 2*time.Second)
	// 1 s, 2 s, 3 s dropped (span < 2 s + 0.5 s); at 4 s adopted: warning, then samples.
	want := []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("updates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("updates %v, want %v", got, want)
		}
	}
	if len(warns) != 1 || warns[0].Kind != WarnIntervalChanged {
		t.Fatalf("warnings %v", warns)
	}
}

// .NET 5 and later publish every session's interval: a foreign interval
// between two of the session's own payloads is never adopted.
func TestDecoderKeepsItsIntervalWhenPublished(t *testing.T) {
	s := newStream(t)
	for ms := int64(1000); ms <= 40000; ms += 1000 {
		s.at(ms, 1000)
		if ms%10000 == 0 {
			s.at(ms+1, 10000)
		}
	}
	got, warns := decodeAll(t, s.bytes(), 10*time.Second)
	if len(warns) != 0 || len(got) != 4 {
		t.Fatalf("updates %v, warnings %v; want the 4 own payloads only", got, warns)
	}
}
