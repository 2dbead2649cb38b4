package monitor

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
	"github.com/clrdiag/clrdiag/telemetry/pyroscope"
	"github.com/clrdiag/clrdiag/telemetry/remotewrite"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
)

// pusher sends the monitor's telemetry: the latest value of every counter
// series each ExportInterval (OTLP metrics, remote write), the processes'
// logs as they come (OTLP logs), and the continuous profiles (Pyroscope,
// OTLP profiles).
type pusher struct {
	cfg  *TelemetryConfig
	log  *slog.Logger
	otlp *otlp.Exporter
	rw   *remotewrite.Exporter
	pyro *pyroscope.Exporter

	mu    sync.Mutex
	procs map[int]*pushProc

	profiles, profileErrors, logSessions, logRecords int64 // under mu
	failed                                           map[string]uint64
}

// pushProc is one process's series.
type pushProc struct {
	conv   *telemetry.Converter
	latest map[string]*pushSeries
	// dropped counts samples of series beyond MaxSeriesPerProcess.
	dropped int
}

// pushSeries is the latest point of a series, and whether it arrived
// since the last export.
type pushSeries struct {
	m     telemetry.Metric
	fresh bool
}

func newPusher(t *TelemetryConfig, log *slog.Logger) (*pusher, error) {
	p := &pusher{cfg: t, log: log, procs: map[int]*pushProc{}}
	var err error
	if t.OTLP != nil {
		if p.otlp, err = otlp.New(*t.OTLP); err != nil {
			return nil, err
		}
	}
	if t.RemoteWrite != nil {
		if p.rw, err = remotewrite.New(*t.RemoteWrite); err != nil {
			return nil, err
		}
	}
	if t.Pyroscope != nil {
		if p.pyro, err = pyroscope.New(*t.Pyroscope); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// metricsOn tells whether samples are pushed.
func (p *pusher) metricsOn() bool { return p.cfg.metricsOn() }

// start runs the exporters and the export clock until ctx ends; what is
// queued then is sent one last time.
func (p *pusher) start(ctx context.Context, wg *sync.WaitGroup) {
	if p.otlp != nil {
		wg.Go(func() { p.otlp.Run(ctx) })
	}
	if p.rw != nil {
		wg.Go(func() { p.rw.Run(ctx) })
	}
	if p.pyro != nil {
		wg.Go(func() { p.pyro.Run(ctx) })
	}
	// The export clock: the latest values every ExportInterval, and a
	// warning for each exporter that failed meanwhile.
	wg.Go(func() {
		t := time.NewTicker(p.cfg.exportInterval())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				p.export() // the last values, before the exporters' last send
				return
			case <-t.C:
				p.export()
				p.logFailures()
			}
		}
	})
}

// sample converts one counter sample of a process into its series' latest
// point (names and units by telemetry.Converter).
func (p *pusher) sample(pid int, res *telemetry.Resource, sm *counters.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.procs[pid]
	if pp == nil {
		pp = &pushProc{conv: telemetry.NewConverter(), latest: map[string]*pushSeries{}}
		p.procs[pid] = pp
	}
	m, ok := pp.conv.Convert(sm, res)
	if !ok {
		return
	}
	key := seriesID(&m)
	ps := pp.latest[key]
	if ps == nil {
		if len(pp.latest) >= MaxSeriesPerProcess {
			pp.dropped++
			return
		}
		ps = &pushSeries{}
		pp.latest[key] = ps
	}
	ps.m, ps.fresh = m, true
}

// seriesID identifies a metric's series within its process.
func seriesID(m *telemetry.Metric) string {
	var b strings.Builder
	b.WriteString(m.Scope)
	b.WriteByte(0)
	b.WriteString(m.Name)
	for _, kv := range m.Attrs {
		b.WriteByte(0)
		b.WriteString(string(kv.Key))
		b.WriteByte('=')
		b.WriteString(kv.Value.String())
	}
	return b.String()
}

// export queues the latest point of every series that got one since the
// last export.
func (p *pusher) export() {
	if !p.metricsOn() {
		return
	}
	p.mu.Lock()
	var out []telemetry.Metric
	for _, pp := range p.procs {
		for _, ps := range pp.latest {
			if ps.fresh {
				out = append(out, ps.m)
				ps.fresh = false
			}
		}
	}
	p.mu.Unlock()
	if len(out) == 0 {
		return
	}
	if p.otlp != nil && p.cfg.OTLPMetrics {
		if n := p.otlp.ExportMetrics(out...); n > 0 {
			p.log.Warn("monitor: OTLP metrics queue full; points dropped", "dropped", n)
		}
	}
	if p.rw != nil {
		if n := p.rw.Export(out...); n > 0 {
			p.log.Warn("monitor: remote-write queue full; points dropped", "dropped", n)
		}
	}
}

// logFailures logs each exporter whose batches failed since the last
// call, with its last error (what /metrics and GET /info count).
func (p *pusher) logFailures() {
	check := func(name string, st telemetry.Stats) {
		p.mu.Lock()
		if p.failed == nil {
			p.failed = map[string]uint64{}
		}
		prev := p.failed[name]
		p.failed[name] = st.Failed
		p.mu.Unlock()
		if st.Failed > prev && st.LastError != nil {
			p.log.Warn("monitor: telemetry not delivered", "exporter", name, "records", st.Failed-prev, "err", st.LastError.Error())
		}
	}
	if p.otlp != nil {
		check("otlp metrics", p.otlp.MetricsStats())
		check("otlp logs", p.otlp.LogsStats())
	}
	if p.rw != nil {
		check("remote write", p.rw.Stats())
	}
	if p.pyro != nil {
		check("pyroscope", p.pyro.Stats())
	}
}

// drop forgets an ended process's series.
func (p *pusher) drop(pid int) {
	p.mu.Lock()
	delete(p.procs, pid)
	p.mu.Unlock()
}

// followLogs keeps a logs session open in the process (reopened with
// backoff when it fails) and pushes every entry as an OTLP log record,
// until ctx ends.
func (p *pusher) followLogs(ctx context.Context, t eventpipe.Tracer, proc Process, res *telemetry.Resource, cfg logs.Config) {
	delay := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		p.mu.Lock()
		p.logSessions++
		p.mu.Unlock()
		err := logs.Collect(ctx, t, cfg, logs.CollectConfig{}, func(e *logs.Entry) error {
			p.otlp.ExportLogs(logRecord(e, res))
			p.mu.Lock()
			p.logRecords++
			p.mu.Unlock()
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			delay = time.Second
		}
		p.log.Warn("monitor: logs session lost; retrying", "pid", proc.PID, "process", proc.Name, "err", errText(err), "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

func errText(err error) string {
	if err == nil {
		return "the session ended"
	}
	return err.Error()
}

// logRecord turns a log entry into an OpenTelemetry log record, as the
// OpenTelemetry .NET SDK's ILogger bridge does: the category is the scope,
// the message the body, the arguments (with {OriginalFormat}) attributes,
// the exception the exception.* attributes.
func logRecord(e *logs.Entry, res *telemetry.Resource) telemetry.LogRecord {
	sev, text := telemetry.SeverityOfLogLevel(int(e.Level))
	r := telemetry.LogRecord{Resource: res, Scope: e.Category, Time: e.Time, ObservedTime: time.Now(),
		Severity: sev, SeverityText: text, Body: e.Message, EventName: e.EventName}
	if e.EventID != 0 {
		r.Attrs = append(r.Attrs, attribute.Int("event.id", e.EventID))
	}
	for _, kv := range e.State {
		r.Attrs = append(r.Attrs, attribute.String(kv.Key, kv.Value))
	}
	if x := e.Exception; x != nil {
		r.Attrs = append(r.Attrs, attribute.String("exception.type", x.Type), attribute.String("exception.message", x.Message))
		if x.Details != "" {
			r.Attrs = append(r.Attrs, attribute.String("exception.stacktrace", x.Details))
		}
	}
	if len(e.Scopes) > 0 {
		scopes := make([]string, len(e.Scopes))
		for i, s := range e.Scopes {
			scopes[i] = s.Message()
		}
		r.Attrs = append(r.Attrs, attribute.StringSlice("log.scopes", scopes))
	}
	if e.TraceID != "" {
		r.Attrs = append(r.Attrs, attribute.String("trace_id", e.TraceID), attribute.String("span_id", e.SpanID))
	}
	if e.ThreadID != 0 {
		r.Attrs = append(r.Attrs, attribute.Int64("thread.id", int64(e.ThreadID)))
	}
	return r
}

// profileLoop is the continuous profiler of one process: every Interval
// (the first after a random part of it, so that processes found together
// are not profiled together), a profile of Duration for each measure,
// pushed to Pyroscope and, with OTLPProfiles, as OTLP profiles.
func (p *pusher) profileLoop(ctx context.Context, s *Server, c *diag.Client, proc Process, res *telemetry.Resource, pc ProfilingConfig) {
	interval := pc.Interval
	if interval <= 0 {
		interval = DefaultProfilingInterval
	}
	d := pc.Duration
	if d <= 0 {
		d = DefaultProfilingDuration
	}
	wait := time.Duration(rand.Int64N(int64(interval)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		next := time.Now().Add(interval)
		for _, m := range pc.Samples {
			start := time.Now()
			data, err := s.pprofOf(ctx, s.turnTracer(c, proc.PID), proc, m, d)
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			if err != nil {
				p.profileErrors++
			} else {
				p.profiles++
			}
			p.mu.Unlock()
			if err != nil {
				p.log.Warn("monitor: continuous profile failed", "pid", proc.PID, "process", proc.Name, "sample", m, "err", err)
				continue
			}
			if p.pyro != nil {
				p.pyro.Export(pyroscope.Profile{Resource: res, Start: start, End: time.Now(), PProf: data})
			}
			if p.otlp != nil && p.cfg.OTLPProfiles {
				if err := p.otlp.ExportProfile(ctx, res, "clrdiag", data); err != nil && ctx.Err() == nil {
					p.log.Warn("monitor: OTLP profile not sent", "pid", proc.PID, "err", err)
				}
			}
		}
		wait = max(time.Until(next), time.Second)
	}
}

// Describe implements prometheus.Collector (unchecked).
func (p *pusher) Describe(chan<- *prometheus.Desc) {}

var (
	telemetryPointsDesc = prometheus.NewDesc("clrdiag_telemetry_records_total",
		"Records the monitor pushed, by exporter, signal and result (sent: accepted by the receiver; dropped: a full queue; failed: given up after retries or refused).",
		[]string{"exporter", "signal", "result"}, nil)
	telemetryProfilesDesc = prometheus.NewDesc("clrdiag_telemetry_profiles_total",
		"Continuous profiles taken, by result.", []string{"result"}, nil)
	telemetryLogSessionsDesc = prometheus.NewDesc("clrdiag_telemetry_log_sessions_total",
		"Logs sessions opened for OTLP logs (one per process, reopened after a failure).", nil, nil)
)

// Collect implements prometheus.Collector: what each exporter did.
func (p *pusher) Collect(ch chan<- prometheus.Metric) {
	emit := func(exporter, signal string, st telemetry.Stats) {
		for _, r := range []struct {
			name string
			n    uint64
		}{{"sent", st.Sent}, {"dropped", st.Dropped}, {"failed", st.Failed}} {
			ch <- prometheus.MustNewConstMetric(telemetryPointsDesc, prometheus.CounterValue, float64(r.n), exporter, signal, r.name)
		}
	}
	if p.otlp != nil {
		emit("otlp", "metrics", p.otlp.MetricsStats())
		emit("otlp", "logs", p.otlp.LogsStats())
	}
	if p.rw != nil {
		emit("remotewrite", "metrics", p.rw.Stats())
	}
	if p.pyro != nil {
		emit("pyroscope", "profiles", p.pyro.Stats())
	}
	p.mu.Lock()
	ok, bad, sessions := p.profiles, p.profileErrors, p.logSessions
	p.mu.Unlock()
	if p.cfg.profilingOn() {
		ch <- prometheus.MustNewConstMetric(telemetryProfilesDesc, prometheus.CounterValue, float64(ok), "succeeded")
		ch <- prometheus.MustNewConstMetric(telemetryProfilesDesc, prometheus.CounterValue, float64(bad), "failed")
	}
	if p.cfg.OTLPLogs != nil {
		ch <- prometheus.MustNewConstMetric(telemetryLogSessionsDesc, prometheus.CounterValue, float64(sessions))
	}
}

// Status is what GET /info says about the exporters.
func (p *pusher) status() map[string]any {
	out := map[string]any{}
	add := func(name string, st telemetry.Stats) {
		m := map[string]any{"sent": st.Sent, "queued": st.Queued, "dropped": st.Dropped, "failed": st.Failed}
		if st.LastError != nil {
			m["lastError"] = st.LastError.Error()
		}
		out[name] = m
	}
	if p.otlp != nil {
		add("otlpMetrics", p.otlp.MetricsStats())
		add("otlpLogs", p.otlp.LogsStats())
	}
	if p.rw != nil {
		add("remoteWrite", p.rw.Stats())
	}
	if p.pyro != nil {
		add("pyroscope", p.pyro.Stats())
	}
	return out
}
