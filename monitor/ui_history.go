package monitor

import (
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// What the dashboard's charts keep of each process's counters.
const (
	// HistoryLen is how many values of a series the dashboard keeps (ten
	// minutes at the default two-second window).
	HistoryLen = 300
	// maxHistorySeries bounds the series with a history per process; the
	// dashboard charts a few System.Runtime counters and lists the others.
	maxHistorySeries = 64
	// historyProvider is the provider whose counters the dashboard charts.
	historyProvider = "System.Runtime"
)

// point is one value of a series: Unix milliseconds and the value.
type point struct {
	t int64
	v float64
}

// seriesHistory is the last HistoryLen values of one counter.
type seriesHistory struct {
	label, unit string
	rate        bool
	pts         [HistoryLen]point
	n, next     int // values kept; where the next one goes
}

func (h *seriesHistory) add(p point) {
	h.pts[h.next] = p
	h.next = (h.next + 1) % HistoryLen
	h.n = min(h.n+1, HistoryLen)
}

// after returns the values newer than t (Unix ms), oldest first.
func (h *seriesHistory) after(t int64) [][2]float64 {
	var out [][2]float64
	for i := range h.n {
		p := h.pts[(h.next-h.n+i+HistoryLen)%HistoryLen]
		if p.t > t {
			out = append(out, [2]float64{float64(p.t), p.v})
		}
	}
	return out
}

// history is the dashboard's memory of one process's System.Runtime
// counters, kept by the /metrics collector from the samples of its own
// session: a viewer opens no session. It survives the session's restarts
// (the charts show the gap) and ends with the process.
type history struct {
	series map[string]*seriesHistory
}

// add records a sample of an untagged System.Runtime counter. Rates (the
// increase over the refresh interval) are kept per second.
func (h *history) add(sm *counters.Sample) {
	if sm.Provider != historyProvider || len(sm.Tags) > 0 || sm.NoValue {
		return
	}
	s := h.series[sm.Name]
	if s == nil {
		if len(h.series) >= maxHistorySeries {
			return
		}
		if h.series == nil {
			h.series = map[string]*seriesHistory{}
		}
		s = &seriesHistory{}
		h.series[sm.Name] = s
	}
	v := sm.Value
	s.label, s.unit, s.rate = sm.DisplayName, sm.Unit, sm.Kind == counters.KindRate
	if s.rate {
		if sm.Interval > 0 {
			v /= sm.Interval.Seconds()
		}
		s.unit += "/s"
	}
	if s.label == "" {
		s.label = sm.Name
	}
	t := sm.Time
	if t.IsZero() {
		t = time.Now()
	}
	s.add(point{t.UnixMilli(), v})
}

// seriesJSON is one series of GET /ui/api/processes/{pid}/counters.
type seriesJSON struct {
	Label string `json:"label"`
	Unit  string `json:"unit,omitempty"`
	Rate  bool   `json:"rate,omitempty"`
	// Points are [Unix ms, value] pairs, oldest first.
	Points [][2]float64 `json:"points"`
}

// countersJSON is GET /ui/api/processes/{pid}/counters?after=MS.
type countersJSON struct {
	PID int `json:"pid"`
	// Up tells whether the collector's session is open; Error is its last
	// failure while it is not.
	Up     bool   `json:"up"`
	Error  string `json:"error,omitempty"`
	Errors int    `json:"errors"`
	// Window is the refresh interval in milliseconds; Now the server's
	// clock (Unix ms), the time axis's end.
	Window int64                 `json:"window"`
	Now    int64                 `json:"now"`
	Series map[string]seriesJSON `json:"series"`
}

// dashboard returns what the collector knows of pid's counters after
// Unix ms after; ok is false when the collector does not follow pid (yet).
func (c *collector) dashboard(pid int, after int64) (out countersJSON, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pm := c.procs[pid]
	if pm == nil {
		return out, false
	}
	out = countersJSON{PID: pid, Up: pm.up, Errors: pm.errors, Window: c.s.cfg.MetricsWindow.Milliseconds(),
		Now: time.Now().UnixMilli(), Series: map[string]seriesJSON{}}
	if pm.err != nil {
		out.Error = pm.err.Error()
	}
	for name, s := range pm.hist.series {
		out.Series[name] = seriesJSON{Label: s.label, Unit: s.unit, Rate: s.rate, Points: s.after(after)}
	}
	return out, true
}

// state returns the collector's view of pid for the process list: whether
// its session is open and its last error.
func (c *collector) state(pid int) (known, up bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pm := c.procs[pid]
	if pm == nil {
		return false, false, nil
	}
	return true, pm.up, pm.err
}
