package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/egress"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/rules"
	"github.com/clrdiag/clrdiag/telemetry"
)

// fleet is what Config.Fleet adds to the server: the collection rules
// engine, the egress providers, and the telemetry pushed to the systems a
// team runs. It follows the processes the server serves (its own
// discovery, every DiscoveryInterval), and is fed the /metrics
// collector's counter samples (observe).
type fleet struct {
	s      *Server
	cfg    *FleetConfig
	log    *slog.Logger
	engine *rules.Engine // nil without rules
	egress map[string]egress.Provider
	push   *pusher // nil without telemetry
	// artifactDir is where rule actions write their files.
	artifactDir string
	// readsMeters: the metrics are pushed, or a rule watches a Meter
	// instrument, so the collector keeps its Meters sessions open.
	readsMeters bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	procs map[int]*fleetProc
}

// fleetProc is a process the fleet follows.
type fleetProc struct {
	p      Process
	cancel context.CancelFunc
	// ready is set once its runtime version is known; info and res are
	// then fixed.
	ready bool
	info  rules.ProcessInfo
	res   *telemetry.Resource
}

// newFleet builds every egress provider, the rules engine and every
// exporter of s.cfg.Fleet, and starts nothing: a mistake anywhere is a
// *rules.ConfigError naming its key, so the monitor never starts half
// configured.
func newFleet(s *Server) (*fleet, error) {
	fc := s.cfg.Fleet
	f := &fleet{s: s, cfg: fc, log: s.log, egress: map[string]egress.Provider{}, procs: map[int]*fleetProc{}}
	var errs []*rules.FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, &rules.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	for _, spec := range fc.Egress {
		var (
			p   egress.Provider
			err error
		)
		switch {
		case spec.FileSystem != nil:
			p, err = egress.NewFileSystem(*spec.FileSystem)
		case spec.S3 != nil:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			p, err = egress.NewS3(ctx, *spec.S3)
			cancel()
		}
		if err != nil {
			bad(spec.path, "%v", err)
			continue
		}
		f.egress[strings.ToLower(spec.Name)] = p
	}

	t := &fc.Telemetry
	if t.metricsOn() && s.cfg.NoMetrics {
		bad("Telemetry", "metrics are pushed from the /metrics collector's counters sessions: remove --no-metrics, or set Telemetry.Otlp.Metrics to false and drop Telemetry.RemoteWrite")
	}
	if t.OTLP != nil || t.RemoteWrite != nil || t.Pyroscope != nil {
		p, err := newPusher(t, s.log)
		if err != nil {
			bad("Telemetry", "%v", err)
		}
		f.push = p
	}

	if fc.Rules != nil && len(fc.Rules.Rules) > 0 {
		// The engine checks the directory; a private one is made only
		// once everything else is known to be right.
		dir, err := s.artifactDir(fc.Rules, len(errs) == 0)
		if err != nil {
			bad("CollectionRules", "%v", err)
		}
		f.artifactDir = dir
		opt := rules.Options{Logger: s.log, ArtifactDir: dir, Turn: s.lock}
		if len(f.egress) > 0 {
			opt.Egress = f
		}
		e, err := rules.New(fc.Rules, opt)
		var ce *rules.ConfigError
		switch {
		case errors.As(err, &ce):
			errs = append(errs, ce.Errors...)
		case err != nil:
			bad("CollectionRules", "%v", err)
		}
		f.engine = e
	}
	if len(errs) > 0 {
		return nil, &rules.ConfigError{Errors: errs}
	}
	f.readsMeters = f.push != nil && f.push.metricsOn()
	if fc.Rules != nil {
		// The collector reads what the rules' counter triggers need.
		specs := fc.Rules.CounterSpecs()
		s.specs = mergeSpecs(s.specs, specs)
		for _, sp := range specs {
			f.readsMeters = f.readsMeters || !sp.EventCountersOnly
		}
	}
	if f.engine != nil {
		if err := s.reg.Register(f.engine); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
	}
	if f.push != nil {
		if err := s.reg.Register(f.push); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
	}
	return f, nil
}

// artifactDir is where rule actions write: Config.ArtifactDir, else
// Config.DumpDir, else (only when a rule makes artifacts) a private
// directory made for the purpose.
func (s *Server) artifactDir(cfg *rules.Config, mayMake bool) (string, error) {
	if s.cfg.ArtifactDir != "" {
		return filepath.Abs(s.cfg.ArtifactDir)
	}
	if s.cfg.DumpDir != "" {
		return s.cfg.DumpDir, nil
	}
	need := false
	for _, r := range cfg.Rules {
		for _, a := range r.Actions {
			need = need || a.Artifact()
		}
	}
	if !need || !mayMake {
		return "", nil
	}
	dir, err := os.MkdirTemp("", "clrdiag-artifacts-")
	if err != nil {
		return "", fmt.Errorf("make an artifact directory (give one with --artifact-dir): %w", err)
	}
	s.log.Info("monitor: rule artifacts are written to a directory of its own (--artifact-dir chooses one; dumps need a path the targets can write)", "dir", dir)
	return dir, nil
}

// start starts the fleet's goroutines: discovery, the engine's clock,
// the exporters.
func (f *fleet) start() {
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if f.engine != nil {
		f.wg.Go(func() { f.engine.Run(f.ctx) })
	}
	if f.push != nil {
		f.push.start(f.ctx, &f.wg)
	}
	f.wg.Go(f.run)
}

// stop ends the fleet: actions are cancelled, sessions stopped, what the
// exporters hold is sent one last time.
func (f *fleet) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	if f.engine != nil {
		f.engine.Close()
	}
	f.wg.Wait()
}

// run discovers the processes until the fleet stops.
func (f *fleet) run() {
	t := time.NewTicker(f.s.cfg.DiscoveryInterval)
	defer t.Stop()
	for {
		f.discover()
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// discover follows new processes and forgets ended ones.
func (f *fleet) discover() {
	ctx, cancel := context.WithTimeout(f.ctx, max(f.s.cfg.DiscoveryInterval, 10*time.Second))
	procs, err := f.s.cfg.Source.Processes(ctx)
	cancel()
	if err != nil {
		if f.ctx.Err() == nil {
			f.log.Warn("monitor: discover processes for the collection rules and telemetry", "err", err)
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := make(map[int]bool, len(procs))
	for _, p := range procs {
		seen[p.PID] = true
		if fp := f.procs[p.PID]; fp != nil {
			if fp.p.Name == p.Name && fp.p.CommandLine == p.CommandLine {
				continue
			}
			fp.cancel() // the pid now names another process
		}
		pctx, pcancel := context.WithCancel(f.ctx)
		fp := &fleetProc{p: p, cancel: pcancel}
		f.procs[p.PID] = fp
		f.wg.Go(func() { f.follow(pctx, fp) })
	}
	for pid, fp := range f.procs {
		if !seen[pid] {
			fp.cancel()
			delete(f.procs, pid)
		}
	}
}

// follow applies the rules to one process and pushes its telemetry until
// ctx ends (the process ended, or the monitor stops).
func (f *fleet) follow(ctx context.Context, fp *fleetProc) {
	p := fp.p
	client := clientOf(p, f.s.cfg.CommandTimeout)
	info := rules.ProcessInfo{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, RuntimeVersion: f.runtimeVersion(ctx, client, p.PID)}
	res := telemetry.ProcessResource(telemetry.Process{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, RuntimeVersion: info.RuntimeVersion}, nil)
	f.mu.Lock()
	fp.info, fp.res, fp.ready = info, res, true
	f.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	var wg sync.WaitGroup
	if f.engine != nil {
		if applied := f.engine.Add(info, client); len(applied) > 0 {
			wg.Go(func() {
				err := f.engine.Watch(ctx, p.PID, rules.WatchConfig{
					Interval:   f.s.cfg.MetricsWindow,
					Turn:       func(ctx context.Context) (func(), error) { return f.s.lock(ctx, p.PID) },
					NoCounters: f.s.metrics != nil,
				})
				if err != nil && ctx.Err() == nil {
					f.log.Warn("monitor: collection rules stopped watching the process", "pid", p.PID, "process", p.Name, "err", err)
				}
			})
		}
	}
	if f.push != nil {
		if t := &f.cfg.Telemetry; t.OTLP != nil && t.OTLPLogs != nil {
			wg.Go(func() { f.push.followLogs(ctx, f.s.turnTracer(client, p.PID), p, res, *t.OTLPLogs) })
		}
		if f.cfg.Telemetry.profilingOn() {
			wg.Go(func() { f.push.profileLoop(ctx, f.s, client, p, res, f.cfg.Telemetry.Profiling) })
		}
	}
	<-ctx.Done()
	if f.engine != nil {
		f.engine.Remove(p.PID)
	}
	if f.push != nil {
		f.push.drop(p.PID)
	}
	wg.Wait()
}

// runtimeVersion asks the process its runtime version (ProcessInfo2 and
// later, .NET 5+), in its turn; "" when it does not say (.NET Core 3.1).
func (f *fleet) runtimeVersion(ctx context.Context, c *diag.Client, pid int) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	unlock, err := f.s.lock(ctx, pid)
	if err != nil {
		return ""
	}
	defer unlock()
	pi, err := c.ProcessInfo(ctx)
	if err != nil {
		if !errors.Is(err, ipc.ErrUnknownCommand) && ctx.Err() == nil {
			f.log.Debug("monitor: ProcessInfo failed; the RuntimeVersion filter sees an empty version", "pid", pid, "err", err)
		}
		return ""
	}
	return pi.ClrProductVersion
}

// observeRules is the /metrics collector's hook for every counter sample
// it reads (EventCounters and Meters alike): the rules' counter triggers.
func (s *Server) observeRules(pid int, sm *counters.Sample) {
	if f := s.fleet; f != nil && f.engine != nil {
		f.engine.Sample(pid, sm)
	}
}

// observeSeries is the collector's hook for every sample it keeps for
// /metrics (a provider's EventCounters are left out once its Meter
// publishes): the metrics pushed are the series /metrics shows.
func (s *Server) observeSeries(pid int, sm *counters.Sample) {
	f := s.fleet
	if f == nil || f.push == nil || !f.push.metricsOn() {
		return
	}
	f.mu.Lock()
	fp := f.procs[pid]
	var res *telemetry.Resource
	if fp != nil && fp.ready {
		res = fp.res
	}
	f.mu.Unlock()
	if res != nil {
		f.push.sample(pid, res, sm)
	}
}

// fleetReadsMeters tells whether the collector must keep its Meters
// sessions open though nobody reads /metrics: the metrics are pushed, or a
// rule watches a Meter instrument.
func (s *Server) fleetReadsMeters() bool {
	return s.fleet != nil && s.fleet.readsMeters
}

// mergeSpecs adds to base the specs of extra that it does not cover.
func mergeSpecs(base, extra []counters.Spec) []counters.Spec {
	out := append([]counters.Spec(nil), base...)
next:
	for _, e := range extra {
		for i := range out {
			b := &out[i]
			if !strings.EqualFold(b.Provider, e.Provider) {
				continue
			}
			if len(b.Counters) == 0 && (!b.EventCountersOnly || e.EventCountersOnly) {
				continue next // b reads every counter of the provider
			}
			if b.EventCountersOnly == e.EventCountersOnly {
				for _, n := range e.Counters {
					if !containsFold(b.Counters, n) {
						b.Counters = append(b.Counters, n)
					}
				}
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// Egress implements rules.Egress with the configured providers: the
// artifact is shipped, and its local file removed once it is safely
// elsewhere (a failed upload keeps it, and says where).
func (f *fleet) Egress(ctx context.Context, provider string, a rules.Artifact) (string, error) {
	p := f.egress[strings.ToLower(provider)]
	if p == nil {
		return "", fmt.Errorf("no egress provider named %q", provider)
	}
	art, file, err := egress.File(a.Path, a.Name, a.ContentType)
	if err != nil {
		return "", fmt.Errorf("open the artifact: %w", err)
	}
	art.Metadata = map[string]string{"pid": fmt.Sprint(a.PID), "rule": a.Rule, "action": a.Action, "kind": a.Kind,
		"time": a.Time.UTC().Format(time.RFC3339)}
	res, err := p.Put(ctx, art)
	file.Close()
	if err != nil {
		return "", err
	}
	if abs, _ := filepath.Abs(a.Path); res.Location != abs && res.Location != a.Path {
		if err := os.Remove(a.Path); err != nil {
			f.log.Warn("monitor: the artifact was shipped but its local copy could not be removed", "path", a.Path, "err", err)
		}
	}
	f.log.Info("monitor: artifact shipped", "provider", provider, "location", res.Location, "bytes", res.Size, "pid", a.PID, "rule", a.Rule)
	return res.Location, nil
}

// turnTracer is a process's client whose session commands (start, stop)
// take the process's turn, as the monitor's own requests do; the session's
// stream does not hold it.
type turnTracer struct {
	c   *diag.Client
	pid int
	s   *Server
}

func (s *Server) turnTracer(c *diag.Client, pid int) turnTracer {
	return turnTracer{c: c, pid: pid, s: s}
}

// StartTracing implements eventpipe.Tracer.
func (t turnTracer) StartTracing(ctx context.Context, req *ipc.CollectTracingRequest) (uint64, net.Conn, error) {
	unlock, err := t.s.lock(ctx, t.pid)
	if err != nil {
		return 0, nil, err
	}
	defer unlock()
	return t.c.StartTracing(ctx, req)
}

// StopTracing implements eventpipe.Tracer.
func (t turnTracer) StopTracing(ctx context.Context, id uint64) error {
	unlock, err := t.s.lock(ctx, t.pid)
	if err != nil {
		return err
	}
	defer unlock()
	return t.c.StopTracing(ctx, id)
}

// fleetInfo adds to GET /info the collection rules, the egress providers
// and what the exporters did.
func (s *Server) fleetInfo(info map[string]any) {
	f := s.fleet
	if f == nil {
		return
	}
	if f.engine != nil {
		info["collectionRules"] = f.engine.Config().Names()
	}
	if len(f.cfg.Egress) > 0 {
		names := make([]string, len(f.cfg.Egress))
		for i, e := range f.cfg.Egress {
			names[i] = e.Name
		}
		info["egressProviders"] = names
	}
	if f.push != nil {
		info["telemetry"] = f.push.status()
	}
}
