package monitor

import (
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// What the dashboard's charts keep of each process's counters.
const (
	// HistoryLen is how many values of a series the dashboard keeps (ten
	// minutes at the default two-second window, five at the Meters' one
	// second).
	HistoryLen = 300
	// maxHistorySeries bounds the series with a history per process: the
	// System.Runtime Meter of .NET 9+ alone has about 40 (an instrument per
	// tag combination: generations, CPU modes, exception types).
	maxHistorySeries = 160
	// chartProvider is the provider whose counters the dashboard charts;
	// its series are keyed by their names alone.
	chartProvider = counters.DefaultProvider
)

// point is one value of a series: Unix milliseconds and the value.
type point struct {
	t int64
	v float64
}

// seriesHistory is the last HistoryLen values of one time series (a
// counter, or one tag combination of an instrument).
type seriesHistory struct {
	provider, name string
	tags           []counters.Tag
	label, unit    string
	rate, meter    bool
	kind           counters.Kind
	pts            [HistoryLen]point
	n, next        int // values kept; where the next one goes
}

// add records a value; a value of the same time as the last one (a
// collection seen again) replaces it.
func (h *seriesHistory) add(p point) {
	if h.n > 0 {
		if last := &h.pts[(h.next-1+HistoryLen)%HistoryLen]; last.t == p.t {
			last.v = p.v
			return
		}
	}
	h.pts[h.next] = p
	h.next = (h.next + 1) % HistoryLen
	h.n = min(h.n+1, HistoryLen)
}

// since returns the values at or after t (Unix ms), oldest first: a poll
// asks again for the time of the newest value it has, whose collection may
// have had more to come.
func (h *seriesHistory) since(t int64) [][2]float64 {
	var out [][2]float64
	for i := range h.n {
		p := h.pts[(h.next-h.n+i+HistoryLen)%HistoryLen]
		if p.t >= t {
			out = append(out, [2]float64{float64(p.t), p.v})
		}
	}
	return out
}

// history is the dashboard's memory of one process's counters, kept by the
// /metrics collector from the samples of its own session: a viewer opens
// no session. It survives the session's restarts (the charts show the
// gap) and ends with the process.
type history struct {
	series map[string]*seriesHistory
}

// historyKey names a series in the dashboard's API: the counter's name for
// System.Runtime ("cpu-usage", "dotnet.gc.heap.total_allocated"), with its
// tags in braces ("dotnet.gc.collections{gc.heap.generation=gen0}"), and
// prefixed with its provider and a slash for other providers
// ("Microsoft.AspNetCore.Hosting/http.server.active_requests").
func historyKey(sm *counters.Sample) string {
	k := sm.Name
	if sm.Provider != chartProvider {
		k = sm.Provider + "/" + k
	}
	if len(sm.Tags) > 0 {
		k += "{" + sm.TagString() + "}"
	}
	return k
}

// dashUnit is the unit the dashboard shows a counter in, and the factor
// that brings its values there: bytes and seconds in base units (so that
// the page formats them with SI prefixes: MB = 10^6 bytes), percentages as
// they are, counts ("count", "{exception}") without a unit.
func dashUnit(unit string) (string, float64) {
	u := strings.TrimSpace(unit)
	switch strings.ToLower(u) {
	case "%":
		return "%", 1
	case "", "count", "#", "1":
		return "", 1
	}
	if strings.HasPrefix(u, "{") && strings.HasSuffix(u, "}") {
		return "", 1
	}
	if b := baseUnit(u); b.otel == "By" || b.otel == "s" {
		name := "B"
		if b.otel == "s" {
			name = "s"
		}
		return name, b.mul / b.div
	}
	return u, 1
}

// add records a sample. Rates are kept per second of the time they cover
// (counters.Sample.PerSecond), levels (means, gauges, up-down counters) as
// they are; histograms are not charted.
func (h *history) add(sm *counters.Sample) {
	if sm.NoValue || sm.Kind == counters.KindHistogram {
		return
	}
	key := historyKey(sm)
	s := h.series[key]
	if s == nil {
		if len(h.series) >= maxHistorySeries {
			return
		}
		if h.series == nil {
			h.series = map[string]*seriesHistory{}
		}
		s = &seriesHistory{provider: sm.Provider, name: sm.Name, tags: sm.Tags}
		h.series[key] = s
	}
	unit, scale := dashUnit(sm.Unit)
	v := sm.Value * scale
	s.rate, s.meter, s.kind = sm.Kind == counters.KindRate, sm.Meter, sm.Kind
	if r, ok := sm.PerSecond(); ok {
		v = r * scale
		unit += "/s"
	}
	s.label, s.unit = sm.DisplayName, unit
	if s.label == "" {
		s.label = sm.Name
	}
	t := sm.Time
	if t.IsZero() {
		t = time.Now()
	}
	s.add(point{t.UnixMilli(), v})
}

// dropEventCounters forgets the EventCounters of a provider that publishes
// through its Meter from now on.
func (h *history) dropEventCounters(provider string) {
	for k, s := range h.series {
		if s.provider == provider && !s.meter {
			delete(h.series, k)
		}
	}
}

// seriesJSON is one series of GET /ui/api/processes/{pid}/counters.
type seriesJSON struct {
	Provider string            `json:"provider"`
	Name     string            `json:"name"`
	Tags     map[string]string `json:"tags,omitempty"`
	Label    string            `json:"label"`
	// Unit is B, s or % (values in those units), "" for counts, or the
	// counter's own; a rate's ends in /s.
	Unit string `json:"unit,omitempty"`
	// Rate marks a rate: the increase per second of the time each value
	// covers.
	Rate bool `json:"rate,omitempty"`
	// Kind is "mean" (EventCounter), "rate", "updown" or "gauge".
	Kind string `json:"kind"`
	// Points are [Unix ms, value] pairs, oldest first.
	Points [][2]float64 `json:"points"`
}

// kindJSON names a kind in the dashboard's API.
func kindJSON(k counters.Kind) string {
	switch k {
	case counters.KindRate:
		return "rate"
	case counters.KindUpDown:
		return "updown"
	case counters.KindGauge:
		return "gauge"
	case counters.KindHistogram:
		return "histogram"
	}
	return "mean"
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

// dashboard returns what the collector knows of pid's counters at or after
// Unix ms after; ok is false when the collector does not follow pid (yet).
func (c *collector) dashboard(pid int, after int64) (out countersJSON, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pm := c.procs[pid]
	if pm == nil {
		return out, false
	}
	c.read(pid)
	out = countersJSON{PID: pid, Up: pm.up, Errors: pm.errors, Window: c.s.cfg.MetricsWindow.Milliseconds(),
		Now: time.Now().UnixMilli(), Series: map[string]seriesJSON{}}
	if pm.err != nil {
		out.Error = pm.err.Error()
	}
	for key, s := range pm.hist.series {
		j := seriesJSON{Provider: s.provider, Name: s.name, Label: s.label, Unit: s.unit, Rate: s.rate,
			Kind: kindJSON(s.kind), Points: s.since(after)}
		if len(s.tags) > 0 {
			j.Tags = make(map[string]string, len(s.tags))
			for _, t := range s.tags {
				j.Tags[t.Key] = t.Value
			}
		}
		if j.Points == nil {
			j.Points = [][2]float64{}
		}
		out.Series[key] = j
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

// metersState is the process's Meters session for the process list: "up",
// "idle", or "" for a runtime without Meters or not known yet.
func (c *collector) metersState(pid int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	pm := c.procs[pid]
	switch {
	case pm == nil || pm.major < 6:
		return ""
	case pm.metersUp:
		return "up"
	}
	return "idle"
}
