//go:build unix

package monitor_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
)

// TestRealTraceStoppingEvent: GET /processes/{pid}/trace with a stopping
// event, on .NET Core 3.1, .NET 8 and .NET 11. The Events target writes three
// rounds of events, then its Finish event (payload code 42): a 5-minute
// trace whose filter is code:42 ends there, with the events before it and
// the stop's rundown; one whose filter is code:7 runs to its duration.
func TestRealTraceStoppingEvent(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.Build(t, "Events"), nil, nil)
		m, err := monitor.New(monitor.Config{NoAuth: true, NoMetrics: true, Source: monitor.StaticSource{targetProcess(tg, "Events")}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(m)
		t.Cleanup(func() { hs.Close(); m.Close() })
		base := fmt.Sprintf("%s/processes/%d/trace?providers=Clrdiag-Test:0xB:5&stoppingEventProviderName=Clrdiag-Test&stoppingEventEventName=Finish", hs.URL, tg.PID)

		for _, c := range []struct {
			code, duration, end string
			maxTime             time.Duration
		}{
			{"42", "5m", "stopping event seen; rundown completed", time.Minute},
			{"7", "4s", "duration reached; rundown completed", time.Minute},
		} {
			resp, err := http.Get(base + "&stoppingEventPayloadFilter=code:" + c.code + "&duration=" + c.duration)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("code:%s: %d %s", c.code, resp.StatusCode, b)
			}
			// The session runs once the headers are here.
			tg.Send(t, "wait-enabled")
			tg.Expect(t, "ENABLED", 30*time.Second)
			tg.Send(t, "emit 3")
			tg.Expect(t, "EMITTED", 10*time.Second)
			began := time.Now()
			tg.Send(t, "stop-event")
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(began)
			if err != nil {
				t.Fatalf("code:%s: reading the trace: %v", c.code, err)
			}
			if end := resp.Trailer.Get("X-Clrdiag-Trace-End"); end != c.end {
				t.Errorf("code:%s: trace end %q, want %q", c.code, end, c.end)
			}
			if took > c.maxTime {
				t.Errorf("code:%s: the trace ran %v after the stopping event", c.code, took)
			}
			hello, finish := countTestEvents(t, body)
			if hello != 3 || finish != 1 {
				t.Errorf("code:%s: Hello %d, Finish %d in %d bytes", c.code, hello, finish, len(body))
			}
			t.Logf("code:%s: %d bytes, ended %v after the Finish event", c.code, len(body), took.Round(time.Millisecond))
		}
	})
}

// countTestEvents decodes a trace and counts the Events target's Hello
// (id 1) and Finish (id 6) events.
func countTestEvents(t *testing.T, b []byte) (hello, finish int) {
	t.Helper()
	rd, err := nettrace.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range rd.All() {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(ev.Metadata.ProviderName, "Clrdiag-Test") {
			continue
		}
		switch ev.Metadata.EventID {
		case 1:
			hello++
		case 6:
			finish++
		}
	}
	return hello, finish
}
