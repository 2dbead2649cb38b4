package monitor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/prometheus/client_golang/prometheus"
)

// maxRetryDelay caps the backoff between two attempts to open a process's
// counters session.
const maxRetryDelay = time.Minute

// MaxSeriesPerProcess bounds the time series /metrics keeps for one
// process, as dotnet-counters' --maxTimeSeries: a runtime that publishes
// ever new counter names or tag values cannot grow the monitor's memory and
// its scrapes without bound. Samples of further series are dropped and
// counted in clrdiag_collector_series_dropped_total.
const MaxSeriesPerProcess = 1000

// ErrStalled is recorded for a process whose counters session stopped
// publishing values (counters.ErrStalled); counters.Follow then stops it
// and opens a new one at once. A .NET Core 3.x runtime has been seen to stop
// the EventCounters of every session when one of them ends.
var ErrStalled = counters.ErrStalled

// ErrMetricsRefused is the error of a Meters session the runtime refused:
// another tool holds a private Metrics session (dotnet-counters does). The
// collector tries again with backoff; the EventCounters stand in meanwhile.
var ErrMetricsRefused = errors.New("monitor: the runtime refused the Meters session")

// ErrSessionEnded is recorded for a process whose counters session ended
// without an error (the runtime closed the stream, as when it shuts down).
var ErrSessionEnded = errors.New("monitor: the counters session ended")

// SessionError is the error recorded for a process whose counters session
// could not be opened or broke; it is exposed on /metrics and the session is
// retried with backoff.
type SessionError struct {
	PID int
	// Started is false when the session could not be opened, true when an
	// open session broke.
	Started bool
	Err     error
}

func (e *SessionError) Error() string {
	if e.Started {
		return fmt.Sprintf("monitor: counters session of process %d: %v", e.PID, e.Err)
	}
	return fmt.Sprintf("monitor: open the counters session of process %d: %v", e.PID, e.Err)
}

func (e *SessionError) Unwrap() error { return e.Err }

// seriesKey identifies one time series of a process.
type seriesKey struct{ name, tags string }

// procMetrics is the collector's state for one process.
type procMetrics struct {
	p      Process
	up     bool  // a session is open
	err    error // the last session error; nil while up or before the first attempt
	errors int   // session errors so far
	series map[seriesKey]*metricSeries
	// meters are the providers whose Meter publishes in the open Meters
	// session: their EventCounters are not kept meanwhile.
	meters map[string]bool
	// major is the runtime's major version as the EventCounters session
	// found it (0 before it opened; 3 for .NET Core 3.x).
	major int
	// lastRead is when /metrics, the dashboard or a counters request last
	// read the process's values: the Meters session is open only while
	// that is recent (Config.MetricsIdle).
	lastRead time.Time
	// metersUp tells whether the Meters session is open.
	metersUp bool
	// seriesDropped counts samples of series beyond MaxSeriesPerProcess.
	seriesDropped int
	cancel        context.CancelFunc
	// taps receive every sample of the process (GET
	// /processes/{pid}/counters reads the collector's session this way).
	taps map[*tap]struct{}

	// hist is what the dashboard charts (ui_history.go).
	hist history
}

// tap is a reader of a process's samples.
type tap struct {
	samples []counters.Sample
	max     int
	full    bool
}

// collector keeps an EventCounters session per discovered process, and a
// Meters session while someone reads the process's values (meterWork),
// re-discovers the processes every Config.DiscoveryInterval and answers
// scrapes from the latest sample of each series.
type collector struct {
	s      *Server
	desc   collectorDescs
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	procs        map[int]*procMetrics
	discoveryErr error
	discovered   bool // a discovery has completed
}

// start starts the background collection; stop ends it.
func (c *collector) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.procs = map[int]*procMetrics{}
	c.wg.Go(func() { c.run(ctx) })
}

// stop cancels every session and waits for them to end.
func (c *collector) stop() {
	c.cancel()
	c.wg.Wait()
}

// run re-discovers the processes until ctx ends.
func (c *collector) run(ctx context.Context) {
	t := time.NewTicker(c.s.cfg.DiscoveryInterval)
	defer t.Stop()
	for {
		c.discover(ctx)
		select {
		case <-ctx.Done():
			c.mu.Lock()
			for pid, pm := range c.procs {
				pm.cancel()
				delete(c.procs, pid)
			}
			c.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// discover lists the processes, starts a session worker for each new one and
// drops the ended ones with their series. A failed listing keeps the
// current processes.
func (c *collector) discover(ctx context.Context) {
	dctx, cancel := context.WithTimeout(ctx, max(c.s.cfg.DiscoveryInterval, 10*time.Second))
	procs, err := c.s.cfg.Source.Processes(dctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.discoveryErr = fmt.Errorf("monitor: discover processes: %w", err)
		return
	}
	c.discoveryErr = nil
	c.discovered = true
	seen := make(map[int]bool, len(procs))
	for _, p := range procs {
		seen[p.PID] = true
		if pm := c.procs[p.PID]; pm != nil {
			if pm.p.Name == p.Name && pm.p.CommandLine == p.CommandLine {
				continue
			}
			pm.cancel() // the pid now names another process
		}
		wctx, wcancel := context.WithCancel(ctx)
		pm := &procMetrics{p: p, series: map[seriesKey]*metricSeries{}, meters: map[string]bool{}, cancel: wcancel}
		c.procs[p.PID] = pm
		c.wg.Go(func() { c.work(wctx, pm) })
		c.wg.Go(func() { c.meterWork(wctx, pm) })
	}
	for pid, pm := range c.procs {
		if !seen[pid] {
			pm.cancel()
			delete(c.procs, pid)
		}
	}
}

// work keeps a counters session open in one process until ctx ends,
// reopening it with backoff (from Config.MetricsWindow up to a minute)
// after each failure (session reopens at once after a stall).
func (c *collector) work(ctx context.Context, pm *procMetrics) {
	delay := c.s.cfg.MetricsWindow
	for {
		sampled, err := c.session(ctx, pm)
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		pm.up = false
		pm.err = err
		pm.errors++
		clear(pm.series) // stale values are not reported
		c.mu.Unlock()
		if sampled {
			delay = c.s.cfg.MetricsWindow
		}
		c.s.log.Warn("monitor: counters session lost; retrying", "pid", pm.p.PID, "process", pm.p.Name, "err", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// session keeps the process's EventCounters session open (counters.Follow,
// which takes the process's turn to open and stop sessions and reopens a
// stalled one on .NET Core 3.x) and records its samples until the session
// ends (an error) or ctx ends (nil). A stall is recorded as an error of the
// process; its series are withdrawn until the reopened session publishes
// again, and what they added up is kept (a counter continues, no reset).
// sampled tells whether any sample arrived.
func (c *collector) session(ctx context.Context, pm *procMetrics) (sampled bool, err error) {
	pid := pm.p.PID
	client := clientOf(pm.p, c.s.cfg.CommandTimeout)
	started := false
	err = counters.Follow(ctx, client, c.s.eventCountersConfig(), counters.FollowConfig{
		Turn: func(ctx context.Context) (func(), error) { return c.s.lock(ctx, pid) },
		Started: func(sess *counters.Session, _ bool) error {
			started = true
			c.mu.Lock()
			pm.up, pm.err = true, nil
			if sess.RuntimeMajor != 0 {
				pm.major = sess.RuntimeMajor
			}
			reopened := pm.errors > 0
			c.mu.Unlock()
			if reopened {
				c.s.log.Info("monitor: counters session reopened", "pid", pid, "process", pm.p.Name)
			} else {
				c.s.log.Debug("monitor: counters session opened", "pid", pid, "process", pm.p.Name)
			}
			return nil
		},
		Stalled: func(err error) {
			c.s.log.Warn("monitor: counters session stalled; reopening it", "pid", pid, "process", pm.p.Name, "err", err)
			c.mu.Lock()
			pm.up = false
			pm.err = &SessionError{PID: pid, Started: true, Err: err}
			pm.errors++
			for _, ms := range pm.series {
				ms.stale = true // not reported until the next value
			}
			c.mu.Unlock()
		},
	}, func(u counters.Update) error {
		if c.update(pm, u) {
			sampled = true
		}
		return nil
	})
	if ctx.Err() != nil {
		return false, nil
	}
	if err == nil {
		err = ErrSessionEnded
	}
	return sampled, &SessionError{PID: pid, Started: started, Err: err}
}

// update records what a session of the process sends: a sample (it
// reports true), or a warning, logged.
func (c *collector) update(pm *procMetrics, u counters.Update) bool {
	if u.Warning != nil {
		c.s.log.Warn("monitor: "+u.Warning.String(), "pid", pm.p.PID, "process", pm.p.Name)
		return false
	}
	if u.Sample == nil || u.Sample.NoValue && !u.Sample.HasTotal {
		return false
	}
	c.mu.Lock()
	c.record(pm, u.Sample)
	c.mu.Unlock()
	return true
}

// meterPoll is how often the Meters worker looks whether someone reads the
// process's values.
const meterPoll = time.Second

// meterWork keeps the process's Meters session (System.Diagnostics.Metrics)
// open while someone reads its values (Config.MetricsIdle), in a runtime
// that has Meters (.NET 6+, as the EventCounters session found it), until
// ctx ends. The session is apart from the EventCounters one because a
// .NET 8+ runtime allows one Metrics session: shared among the clients that
// ask for the shared one (the monitor, clrdiag counters, dotnet-monitor),
// refused to one that asks for a private session (dotnet-counters
// 10.0.750501) while any other exists. So the monitor holds it only while
// its Meter values are read, and dotnet-counters works next to a monitor
// nobody reads; meanwhile the EventCounters stand in.
func (c *collector) meterWork(ctx context.Context, pm *procMetrics) {
	delay := c.s.cfg.MetricsWindow
	t := time.NewTicker(meterPoll)
	defer t.Stop()
	for {
		c.mu.Lock()
		major, wanted := pm.major, c.wanted(pm)
		c.mu.Unlock()
		switch {
		case major != 0 && major < 6:
			return // .NET Core 3.x and .NET 5 have no Meters
		case major != 0 && wanted:
			err := c.meterSession(ctx, pm)
			if ctx.Err() != nil {
				return
			}
			if err == nil { // nobody reads the values any more
				delay = c.s.cfg.MetricsWindow
				continue
			}
			c.s.log.Warn("monitor: Meters session lost; retrying", "pid", pm.p.PID, "process", pm.p.Name, "err", err, "retry_in", delay)
			rt := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				rt.Stop()
				return
			case <-rt.C:
			}
			delay = min(2*delay, maxRetryDelay)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// wanted tells whether someone read the process's values recently; c.mu
// is held.
func (c *collector) wanted(pm *procMetrics) bool {
	if c.s.fleetReadsMeters() { // pushed telemetry, Meter triggers (fleet.go)
		return true
	}
	return !pm.lastRead.IsZero() && time.Since(pm.lastRead) < c.s.cfg.MetricsIdle
}

// meterSession holds the process's Meters session until nobody reads its
// values (nil) or it fails (an error), and then withdraws its series (the
// EventCounters stand in for them).
func (c *collector) meterSession(ctx context.Context, pm *procMetrics) error {
	pid := pm.p.PID
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := make(chan struct{})
	go func() {
		t := time.NewTicker(meterPoll)
		defer t.Stop()
		for {
			select {
			case <-mctx.Done():
				return
			case <-t.C:
				c.mu.Lock()
				w := c.wanted(pm)
				c.mu.Unlock()
				if !w {
					close(idle)
					cancel()
					return
				}
			}
		}
	}()
	client := clientOf(pm.p, c.s.cfg.CommandTimeout)
	var refused *counters.Warning
	err := counters.Follow(mctx, client, c.s.metersConfig(pm.major), counters.FollowConfig{
		Turn: func(ctx context.Context) (func(), error) { return c.s.lock(ctx, pid) },
		Started: func(*counters.Session, bool) error {
			c.mu.Lock()
			pm.metersUp = true
			c.mu.Unlock()
			c.s.log.Debug("monitor: Meters session opened", "pid", pid, "process", pm.p.Name)
			return nil
		},
	}, func(u counters.Update) error {
		if u.Warning != nil && u.Warning.Kind == counters.WarnMultipleSessions {
			// Another tool's private session holds the runtime's only
			// one: nothing will come to this one, even once that tool
			// leaves. Close it and try again later.
			refused = u.Warning
			cancel()
			return nil
		}
		c.update(pm, u)
		return nil
	})
	c.mu.Lock()
	pm.metersUp = false
	for p := range pm.meters {
		delete(pm.meters, p)
	}
	for k, ms := range pm.series {
		if ms.last.Meter {
			delete(pm.series, k)
		}
	}
	c.mu.Unlock()
	select {
	case <-idle:
		c.s.log.Debug("monitor: Meters session closed: nobody reads the values", "pid", pid, "process", pm.p.Name)
		return nil
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	if refused != nil {
		return &SessionError{PID: pid, Started: true, Err: fmt.Errorf("%w: %s", ErrMetricsRefused, refused.Message)}
	}
	if err == nil {
		err = ErrSessionEnded
	}
	return &SessionError{PID: pid, Started: true, Err: err}
}

// read notes that someone reads pid's values (all processes for pid 0):
// their Meters sessions open, or stay open; c.mu is held.
func (c *collector) read(pid int) {
	now := time.Now()
	for p, pm := range c.procs {
		if pid == 0 || p == pid {
			pm.lastRead = now
		}
	}
}

// record keeps a sample of the process; c.mu is held.
func (c *collector) record(pm *procMetrics, sm *counters.Sample) {
	c.s.observeRules(pm.p.PID, sm) // every sample: the rules' triggers (fleet.go)
	for t := range pm.taps {
		if len(t.samples) < t.max {
			t.samples = append(t.samples, *sm)
		} else {
			t.full = true
		}
	}
	if !sm.Meter && pm.meters[sm.Provider] {
		return // its Meter stands for it
	}
	if sm.Meter && !pm.meters[sm.Provider] {
		// The provider publishes through its Meter from now on: drop
		// its EventCounters series.
		pm.meters[sm.Provider] = true
		for k, ms := range pm.series {
			if !ms.last.Meter && ms.last.Provider == sm.Provider {
				delete(pm.series, k)
			}
		}
		pm.hist.dropEventCounters(sm.Provider)
	}
	c.s.observeSeries(pm.p.PID, sm) // what /metrics keeps: the telemetry pushed (fleet.go)
	key := seriesKey{sm.Provider + "/" + sm.Name, sm.TagString()}
	ms := pm.series[key]
	if ms == nil {
		if len(pm.series) >= MaxSeriesPerProcess {
			pm.seriesDropped++
			return
		}
		ms = &metricSeries{fam: familyOf(sm)}
		pm.series[key] = ms
	}
	ms.add(*sm)
	pm.hist.add(sm)
}

// listen starts a tap on pid's samples, keeping at most max; ok is false
// when the collector does not follow pid (yet). stop ends it and returns
// what arrived, and whether samples were left out.
func (c *collector) listen(pid, max int) (stop func() (samples []counters.Sample, full bool), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pm := c.procs[pid]
	if pm == nil || !pm.up {
		return nil, false
	}
	c.read(pid)
	t := &tap{max: max}
	if pm.taps == nil {
		pm.taps = map[*tap]struct{}{}
	}
	pm.taps[t] = struct{}{}
	return func() ([]counters.Sample, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(pm.taps, t)
		return t.samples, t.full
	}, true
}

// Describe sends nothing: the metrics depend on the processes found, so the
// collector is unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// collectorDescs describe the collector's own metrics. They are made with
// the collector, not at program start (which every clrdiag command would
// pay).
type collectorDescs struct {
	scrapeErrors, collectorUp, collectorErrors, seriesDropped, discoveryUp, metersUp *prometheus.Desc
}

func newCollectorDescs() collectorDescs {
	return collectorDescs{
		scrapeErrors: prometheus.NewDesc("clrdiag_scrape_errors",
			"Processes whose counters session is failing (see clrdiag_collector_up).", nil, nil),
		collectorUp: prometheus.NewDesc("clrdiag_collector_up",
			"1 while the process's counters session is open, 0 while it is being (re)opened after an error.",
			[]string{"pid", "process_name"}, nil),
		collectorErrors: prometheus.NewDesc("clrdiag_collector_errors_total",
			"Counters sessions of the process that could not be opened, broke or stalled.",
			[]string{"pid", "process_name"}, nil),
		seriesDropped: prometheus.NewDesc("clrdiag_collector_series_dropped_total",
			"Samples dropped because the process has more than MaxSeriesPerProcess (1000) time series.",
			[]string{"pid", "process_name"}, nil),
		discoveryUp: prometheus.NewDesc("clrdiag_discovery_up",
			"1 when the last process discovery succeeded.", nil, nil),
		metersUp: prometheus.NewDesc("clrdiag_collector_meters_up",
			"1 while the process's Meters session (System.Diagnostics.Metrics, .NET 6+) is open: while someone reads the values (MetricsIdle).",
			[]string{"pid", "process_name"}, nil),
	}
}

// Collect implements prometheus.Collector from the collector's state; it
// never talks to a process. A series whose name clashes with another family
// of a different type or help is left out (with a log line), so that one odd
// counter never breaks the scrape.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read(0)
	failed := 0
	type famKey struct {
		kind prometheus.ValueType
		help string
	}
	families := map[string]famKey{}
	for _, pm := range c.procs {
		up := 0.0
		if pm.up {
			up = 1
		}
		if pm.err != nil {
			failed++
		}
		pid := strconv.Itoa(pm.p.PID)
		ch <- prometheus.MustNewConstMetric(c.desc.collectorUp, prometheus.GaugeValue, up, pid, pm.p.Name)
		ch <- prometheus.MustNewConstMetric(c.desc.collectorErrors, prometheus.CounterValue, float64(pm.errors), pid, pm.p.Name)
		if pm.major >= 6 {
			mu := 0.0
			if pm.metersUp {
				mu = 1
			}
			ch <- prometheus.MustNewConstMetric(c.desc.metersUp, prometheus.GaugeValue, mu, pid, pm.p.Name)
		}
		if pm.seriesDropped > 0 {
			ch <- prometheus.MustNewConstMetric(c.desc.seriesDropped, prometheus.CounterValue, float64(pm.seriesDropped), pid, pm.p.Name)
		}
		for _, ms := range pm.series {
			if ms.stale {
				continue
			}
			f := ms.fam
			if k, ok := families[f.name]; ok && k != (famKey{f.kind, f.help}) {
				c.s.log.Debug("monitor: metric left out: its name clashes with another counter's", "metric", f.name,
					"counter", ms.last.Provider+"/"+ms.last.Name, "pid", pm.p.PID)
				continue
			}
			families[f.name] = famKey{f.kind, f.help}
			m, err := seriesMetric(f, ms, pm.p)
			switch {
			case err != nil:
				ch <- prometheus.NewInvalidMetric(prometheus.NewDesc(f.name, f.help, nil, nil), err)
			case m != nil:
				ch <- m
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc.scrapeErrors, prometheus.GaugeValue, float64(failed))
	if c.discoveryErr != nil {
		ch <- prometheus.MustNewConstMetric(c.desc.discoveryUp, prometheus.GaugeValue, 0)
	} else if c.discovered {
		ch <- prometheus.MustNewConstMetric(c.desc.discoveryUp, prometheus.GaugeValue, 1)
	}
}

// metricName maps a provider name to the prefix of its EventCounters'
// metric names: System.Runtime -> systemruntime (dots dropped, as
// dotnet-monitor does), other characters outside [a-z0-9] -> _.
func metricName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.':
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "_" + name
	}
	return name
}
