package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// State is where a rule stands for one process.
type State string

// The states of a rule, as dotnet-monitor's /collectionrules names them.
const (
	// StateRunning: the trigger is watching.
	StateRunning State = "Running"
	// StateActionExecuting: the trigger fired and the actions run (or
	// wait for the process's earlier actions).
	StateActionExecuting State = "ActionExecuting"
	// StateThrottled: the actions ran ActionCount times within
	// ActionCountSlidingWindowDuration; a trigger now is not acted on.
	StateThrottled State = "Throttled"
	// StateFinished: the rule is done with the process: a Startup rule
	// ran, ActionCount was reached with no sliding window, RuleDuration
	// passed, or the process ended.
	StateFinished State = "Finished"
)

// Options configure an Engine. The zero value logs nothing, keeps
// artifacts in place (no egress) and has no artifact directory (rules with
// artifact actions then cannot be used).
type Options struct {
	// Logger hears every trigger and action (log/slog); nil discards.
	Logger *slog.Logger
	// Egress stores artifacts whose action names an egress provider.
	Egress Egress
	// ArtifactDir is where actions write their files. Dumps are written
	// by the target process itself: it must be a path the targets can
	// write (shared with them, in containers).
	ArtifactDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Turn, when set, is taken around every command an action sends to
	// the process (starting and stopping a session, a dump, ...; a
	// session's stream does not hold it): it returns when it is the
	// process's turn and a function that ends it (the monitor's
	// per-process queue, shared with its HTTP requests). The engine runs
	// one action at a time per process in any case.
	Turn func(ctx context.Context, pid int) (release func(), err error)
	// MaxOperations is how many finished operations are kept; 0 means
	// DefaultMaxOperations.
	MaxOperations int
}

// DefaultMaxOperations is how many finished operations an Engine keeps.
const DefaultMaxOperations = 500

// Engine applies rules to processes: it evaluates their triggers on the
// counter samples and events it is given, and runs their actions, one at a
// time per process. Its methods are safe for concurrent use.
type Engine struct {
	cfg     *Config
	opt     Options
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	procs   map[int]*proc
	ops     opTable
	metrics *metrics
}

// New checks that the engine can run every action of cfg (an artifact
// directory that exists, an Egress for rules that name a provider) and
// returns it.
func New(cfg *Config, opt Options) (*Engine, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxOperations <= 0 {
		opt.MaxOperations = DefaultMaxOperations
	}
	log := opt.Logger
	if log == nil {
		log = discard()
	}
	var errs []*FieldError
	needDir := false
	for _, r := range cfg.Rules {
		for _, a := range r.Actions {
			path := fmt.Sprintf("CollectionRules.%s.Actions[%d]", r.Name, a.Index)
			if a.Artifact() {
				needDir = true
			}
			if a.Egress != "" && opt.Egress == nil {
				errs = append(errs, &FieldError{Path: path + ".Settings.Egress", Msg: fmt.Sprintf("names egress provider %q, but the monitor has no egress configured", a.Egress)})
			}
		}
	}
	if needDir {
		if opt.ArtifactDir == "" {
			errs = append(errs, &FieldError{Path: "CollectionRules", Msg: "rules collect artifacts: give the monitor an artifact directory"})
		} else if st, err := os.Stat(opt.ArtifactDir); err != nil || !st.IsDir() {
			errs = append(errs, &FieldError{Path: "CollectionRules", Msg: fmt.Sprintf("artifact directory %s is not a directory that exists (create it, writable by the target processes: the runtime writes dumps itself)", opt.ArtifactDir)})
		}
	}
	if len(errs) > 0 {
		return nil, &ConfigError{Errors: errs}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, opt: opt, log: log, ctx: ctx, cancel: cancel, procs: map[int]*proc{}, metrics: newMetrics()}
	e.ops.max = opt.MaxOperations
	return e, nil
}

// Config is the engine's configuration.
func (e *Engine) Config() *Config { return e.cfg }

// Close cancels every running action and waits for them to end.
func (e *Engine) Close() {
	e.cancel()
	e.wg.Wait()
}

// proc is a process the engine applies rules to.
type proc struct {
	info   ProcessInfo
	target Target
	// ctx ends when the process is removed: its actions and sessions end.
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	rules  []*ruleState
	// counterRules caches, for each (provider, name) as samples spell
	// them, the rules with a counter trigger on it.
	counterRules map[counterKey][]*ruleState
	queue        []*job
	busy         bool
	gone         bool
}

type counterKey struct{ provider, name string }

type ruleState struct {
	rule        *Rule
	state       State
	reason      string
	applied     time.Time
	lastTrigger time.Time
	lastWhat    string
	execs       []time.Time // execution times within the action-count window
	executions  int
	throttled   int
	// trigger state
	series   map[string]*seriesState // counter: by tag string
	win      *window                 // aspnet, event
	inflight map[string]time.Time    // AspNetRequestDuration: started requests
	filter   *eventpipe.EventFilter  // event: which events count
}

type seriesState struct {
	covered time.Duration
	last    time.Time
}

func (rs *ruleState) resetTrigger() {
	clear(rs.series)
	if rs.win != nil {
		rs.win.reset()
	}
	// In-flight requests stay tracked: they may still become slow, and
	// those already counted must not count again when they end.
}

type job struct {
	rs   *ruleState
	when time.Time
	what string
}

// Add applies the rules whose filters p passes, fires their Startup
// triggers, and returns the names of the rules applied. Adding a pid
// already known replaces it (its earlier rules end).
func (e *Engine) Add(p ProcessInfo, t Target) []string {
	now := e.opt.Now()
	pr := &proc{info: p, target: t, counterRules: map[counterKey][]*ruleState{}}
	pr.ctx, pr.cancel = context.WithCancel(e.ctx)
	var names []string
	for _, r := range e.cfg.Rules {
		if !passes(r, p) {
			continue
		}
		rs := &ruleState{rule: r, state: StateRunning, applied: now}
		switch {
		case r.Trigger.Counter != nil:
			rs.series = map[string]*seriesState{}
		case r.Trigger.AspNet != nil:
			rs.win = newWindow(r.Trigger.AspNet.Count, r.Trigger.AspNet.Window)
			if r.Trigger.AspNet.Type == TriggerAspNetRequestDuration {
				rs.inflight = map[string]time.Time{}
			}
		case r.Trigger.Event != nil:
			rs.win = newWindow(r.Trigger.Event.Count, r.Trigger.Event.Window)
			rs.filter = r.Trigger.Event.filter()
		}
		pr.rules = append(pr.rules, rs)
		names = append(names, r.Name)
	}
	e.mu.Lock()
	old := e.procs[p.PID]
	e.procs[p.PID] = pr
	e.mu.Unlock()
	if old != nil {
		e.retire(old, "the process was replaced")
	}
	if len(names) > 0 {
		e.log.Info("collection rules applied", "pid", p.PID, "process", p.Name, "rules", strings.Join(names, ","))
	}
	pr.mu.Lock()
	for _, rs := range pr.rules {
		if rs.rule.Trigger.Type == TriggerStartup {
			e.fire(pr, rs, now, "process started")
		}
	}
	pr.mu.Unlock()
	return names
}

func passes(r *Rule, p ProcessInfo) bool {
	for _, f := range r.Filters {
		if !f.Matches(p) {
			return false
		}
	}
	return true
}

// Remove forgets a process (it ended): its rules finish and its queued
// actions are dropped; a running action is cancelled.
func (e *Engine) Remove(pid int) {
	e.mu.Lock()
	pr := e.procs[pid]
	delete(e.procs, pid)
	e.mu.Unlock()
	if pr != nil {
		e.retire(pr, "the process ended")
	}
}

func (e *Engine) retire(pr *proc, why string) {
	pr.mu.Lock()
	pr.gone = true
	pr.queue = nil
	for _, rs := range pr.rules {
		if rs.state != StateFinished {
			rs.state, rs.reason = StateFinished, why
		}
	}
	pr.mu.Unlock()
	pr.cancel()
}

func (e *Engine) proc(pid int) *proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.procs[pid]
}

// Sample evaluates the counter triggers of the process's rules on one
// sample (EventCounter triggers on EventCounters, EventMeter triggers on
// Meter instruments). It does not block on actions.
func (e *Engine) Sample(pid int, s *counters.Sample) {
	pr := e.proc(pid)
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	key := counterKey{s.Provider, s.Name}
	list, ok := pr.counterRules[key]
	if !ok {
		for _, rs := range pr.rules {
			if c := rs.rule.Trigger.Counter; c != nil && strings.EqualFold(c.Provider, s.Provider) && strings.EqualFold(c.Name, s.Name) {
				list = append(list, rs)
			}
		}
		if len(pr.counterRules) < 4096 {
			pr.counterRules[key] = list
		}
	}
	for _, rs := range list {
		if rs.rule.Trigger.Counter.Meter != s.Meter {
			continue
		}
		e.counterSample(pr, rs, s)
	}
}

func (e *Engine) counterSample(pr *proc, rs *ruleState, s *counters.Sample) {
	if rs.state == StateActionExecuting || rs.state == StateFinished {
		return
	}
	c := rs.rule.Trigger.Counter
	v, ok := c.value(s)
	if !ok {
		return
	}
	tags := ""
	if len(s.Tags) > 0 {
		tags = s.TagString()
	}
	st := rs.series[tags]
	if st == nil {
		if len(rs.series) >= 1000 {
			return // bounded: MaxTimeSeries of a Meter
		}
		st = &seriesState{}
		rs.series[tags] = st
	}
	iv := s.Interval
	if iv <= 0 {
		iv = time.Second
	}
	if !st.last.IsZero() && !s.Time.IsZero() && s.Time.Sub(st.last) > 2*iv+2*time.Second {
		st.covered = 0 // values were missing: the window starts again
	}
	st.last = s.Time
	if !c.satisfied(v) {
		st.covered = 0
		return
	}
	st.covered += iv
	if st.covered >= c.Window {
		what := fmt.Sprintf("%s/%s = %s", s.Provider, s.Name, strconv.FormatFloat(v, 'g', 6, 64))
		if tags != "" {
			what += " {" + tags + "}"
		}
		e.fire(pr, rs, e.opt.Now(), what+" for "+FormatDuration(st.covered))
	}
}

// value picks the number a sample gives the trigger.
func (c *CounterTrigger) value(s *counters.Sample) (float64, bool) {
	if s.NoValue {
		return 0, false
	}
	if c.Percentile != nil {
		want := float64(*c.Percentile) / 100
		for _, q := range s.Quantiles {
			if math.Abs(q.Quantile-want) < 1e-9 {
				return q.Value, true
			}
		}
		return 0, false
	}
	if s.Kind == counters.KindHistogram {
		return 0, false
	}
	return s.Value, true
}

func (c *CounterTrigger) satisfied(v float64) bool {
	return (c.GreaterThan == nil || v > *c.GreaterThan) && (c.LessThan == nil || v < *c.LessThan)
}

// Event evaluates the EventPipeEvent and ASP.NET triggers of the process's
// rules on one event of a session opened for Needs.
func (e *Engine) Event(pid int, ev *nettrace.Event) {
	pr := e.proc(pid)
	if pr == nil || ev.Metadata == nil {
		return
	}
	var req *Request
	if ev.Metadata.ProviderName == eventpipe.ProviderDiagSource {
		if r, ok := DecodeAspNet(ev); ok {
			req = &r
		}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, rs := range pr.rules {
		if rs.state == StateActionExecuting || rs.state == StateFinished {
			continue
		}
		switch t := rs.rule.Trigger; {
		case t.Event != nil:
			if rs.filter.Match(ev, 8) && (t.Event.EventID < 0 || int(ev.Metadata.EventID) == t.Event.EventID) && rs.win.add(eventTime(ev, e.opt.Now)) {
				e.fire(pr, rs, e.opt.Now(), fmt.Sprintf("event %s/%s", ev.Metadata.ProviderName, ev.Metadata.EventName))
			}
		case t.AspNet != nil && req != nil:
			e.request(pr, rs, *req)
		}
	}
}

func eventTime(ev *nettrace.Event, now func() time.Time) time.Time {
	if t := ev.Time(); !t.IsZero() {
		return t
	}
	return now()
}

// Request evaluates the ASP.NET triggers on one request event (Event does
// this for the events of a session; a caller with another source of
// requests can call it directly).
func (e *Engine) Request(pid int, r Request) {
	pr := e.proc(pid)
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, rs := range pr.rules {
		if rs.rule.Trigger.AspNet != nil && rs.state != StateActionExecuting && rs.state != StateFinished {
			e.request(pr, rs, r)
		}
	}
}

// maxInflight bounds the requests an AspNetRequestDuration trigger tracks.
const maxInflight = 10000

func (e *Engine) request(pr *proc, rs *ruleState, r Request) {
	a := rs.rule.Trigger.AspNet
	if r.Time.IsZero() {
		r.Time = e.opt.Now()
	}
	if !a.matchesPath(r.Path) {
		return
	}
	hit := false
	switch a.Type {
	case TriggerAspNetRequestCount:
		hit = !r.Stop
	case TriggerAspNetRequestDuration:
		if !r.Stop {
			if r.ID != "" && len(rs.inflight) < maxInflight {
				rs.inflight[r.ID] = r.Time
			}
			return
		}
		start, tracked := rs.inflight[r.ID]
		delete(rs.inflight, r.ID)
		if tracked && start.IsZero() {
			return // already counted while it was running
		}
		hit = r.Duration > a.Duration
	case TriggerAspNetResponseStatus:
		hit = r.Stop && a.matchesStatus(r.StatusCode)
	}
	if hit && rs.win.add(r.Time) {
		e.fire(pr, rs, e.opt.Now(), fmt.Sprintf("%d requests within %s (last %s %s)", a.Count, FormatDuration(a.Window), r.Method, r.Path))
	}
}

// Tick advances time-based state: rules whose RuleDuration passed finish,
// throttled rules whose window has room run again, and requests still
// running past an AspNetRequestDuration threshold are counted as slow.
// Watch calls it every second; a caller feeding samples itself must too.
func (e *Engine) Tick() {
	now := e.opt.Now()
	e.mu.Lock()
	procs := make([]*proc, 0, len(e.procs))
	for _, p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	for _, pr := range procs {
		pr.mu.Lock()
		for _, rs := range pr.rules {
			e.tick(pr, rs, now)
		}
		pr.mu.Unlock()
	}
}

func (e *Engine) tick(pr *proc, rs *ruleState, now time.Time) {
	l := rs.rule.Limits
	if rs.state == StateFinished {
		return
	}
	if l.RuleDuration > 0 && now.Sub(rs.applied) >= l.RuleDuration && rs.state != StateActionExecuting {
		rs.state, rs.reason = StateFinished, "RuleDuration "+FormatDuration(l.RuleDuration)+" passed"
		e.log.Info("collection rule finished", "rule", rs.rule.Name, "pid", pr.info.PID, "reason", rs.reason)
		return
	}
	if rs.state == StateThrottled && e.room(rs, now) {
		rs.state, rs.reason = StateRunning, ""
	}
	if a := rs.rule.Trigger.AspNet; a != nil && rs.inflight != nil && rs.state != StateActionExecuting {
		for id, start := range rs.inflight {
			if start.IsZero() {
				continue
			}
			if now.Sub(start) > a.Duration {
				rs.inflight[id] = time.Time{} // counted; its stop is ignored
				if rs.win.add(now) {
					e.fire(pr, rs, now, fmt.Sprintf("%d requests slower than %s within %s (still running)", a.Count, FormatDuration(a.Duration), FormatDuration(a.Window)))
					return
				}
			}
		}
		// Forget requests whose stop never came.
		if len(rs.inflight) > maxInflight/2 {
			for id, start := range rs.inflight {
				if start.IsZero() || now.Sub(start) > a.Window+a.Duration {
					delete(rs.inflight, id)
				}
			}
		}
	}
}

// room prunes the executions that left the action-count window and
// reports whether another may run.
func (e *Engine) room(rs *ruleState, now time.Time) bool {
	l := rs.rule.Limits
	if l.ActionCountWindow > 0 {
		i := 0
		for i < len(rs.execs) && now.Sub(rs.execs[i]) >= l.ActionCountWindow {
			i++
		}
		rs.execs = rs.execs[i:]
	}
	return len(rs.execs) < l.ActionCount
}

// fire acts on a trigger (pr.mu held): the trigger's window starts again
// (a window fires once), and the actions are queued when the limits allow.
func (e *Engine) fire(pr *proc, rs *ruleState, now time.Time, what string) {
	rs.resetTrigger()
	if rs.state == StateActionExecuting || rs.state == StateFinished || pr.gone {
		return
	}
	if l := rs.rule.Limits; l.RuleDuration > 0 && now.Sub(rs.applied) >= l.RuleDuration {
		rs.state, rs.reason = StateFinished, "RuleDuration "+FormatDuration(l.RuleDuration)+" passed"
		return
	}
	e.metrics.triggers.WithLabelValues(rs.rule.Name, rs.rule.Trigger.Type).Inc()
	if !e.room(rs, now) {
		rs.throttled++
		rs.state = StateThrottled
		rs.reason = fmt.Sprintf("ActionCount %d reached within %s", rs.rule.Limits.ActionCount, FormatDuration(rs.rule.Limits.ActionCountWindow))
		e.metrics.throttled.WithLabelValues(rs.rule.Name).Inc()
		e.log.Warn("collection rule throttled", "rule", rs.rule.Name, "pid", pr.info.PID, "trigger", what, "reason", rs.reason)
		return
	}
	rs.execs = append(rs.execs, now)
	rs.executions++
	rs.lastTrigger, rs.lastWhat = now, what
	rs.state, rs.reason = StateActionExecuting, ""
	e.log.Info("collection rule triggered", "rule", rs.rule.Name, "pid", pr.info.PID, "process", pr.info.Name, "trigger", rs.rule.Trigger.Type, "what", what)
	pr.queue = append(pr.queue, &job{rs: rs, when: now, what: what})
	if !pr.busy {
		pr.busy = true
		e.wg.Add(1)
		go e.drain(pr)
	}
}

// drain runs the process's queued action lists, one after the other.
func (e *Engine) drain(pr *proc) {
	defer e.wg.Done()
	for {
		pr.mu.Lock()
		if len(pr.queue) == 0 || pr.gone || e.ctx.Err() != nil {
			pr.queue = nil
			pr.busy = false
			pr.mu.Unlock()
			return
		}
		j := pr.queue[0]
		pr.queue = pr.queue[1:]
		pr.mu.Unlock()
		e.runList(pr, j)
		pr.mu.Lock()
		rs := j.rs
		if rs.state == StateActionExecuting {
			l := rs.rule.Limits
			switch {
			case rs.rule.Trigger.Type == TriggerStartup:
				rs.state, rs.reason = StateFinished, "the Startup trigger fires once"
			case l.ActionCountWindow == 0 && rs.executions >= l.ActionCount:
				rs.state, rs.reason = StateFinished, fmt.Sprintf("ActionCount %d reached", l.ActionCount)
			case l.RuleDuration > 0 && e.opt.Now().Sub(rs.applied) >= l.RuleDuration:
				rs.state, rs.reason = StateFinished, "RuleDuration "+FormatDuration(l.RuleDuration)+" passed"
			default:
				rs.state, rs.reason = StateRunning, ""
				rs.resetTrigger() // the trigger starts again after the actions
			}
			if rs.state == StateFinished {
				e.log.Info("collection rule finished", "rule", rs.rule.Name, "pid", pr.info.PID, "reason", rs.reason)
			}
		}
		pr.mu.Unlock()
	}
}

// runList runs one rule's actions in order; a failed action ends the list.
func (e *Engine) runList(pr *proc, j *job) {
	outputs := map[string]map[string]string{}
	rule := j.rs.rule
	for _, spec := range rule.Actions {
		if pr.ctx.Err() != nil {
			return
		}
		pr.mu.Lock()
		gone := pr.gone
		pr.mu.Unlock()
		if gone {
			return
		}
		err := e.runAction(pr, rule, spec, j, outputs)
		if err != nil {
			if skipped := len(rule.Actions) - spec.Index - 1; skipped > 0 {
				e.log.Warn("collection rule actions skipped", "rule", rule.Name, "pid", pr.info.PID, "skipped", skipped, "after", spec.Label())
			}
			return
		}
	}
}

func (e *Engine) runAction(pr *proc, rule *Rule, spec *ActionSpec, j *job, outputs map[string]map[string]string) error {
	ctx, cancel := context.WithCancel(pr.ctx)
	defer cancel()
	start := e.opt.Now()
	var op *opRecord
	if spec.Artifact() {
		op = e.ops.start(pr.info.PID, rule.Name, spec, start, cancel)
	}
	log := e.log.With("rule", rule.Name, "pid", pr.info.PID, "action", spec.Label(), "type", spec.Type)
	if op != nil {
		log = log.With("operation", op.ID)
	}
	log.Info("collection rule action started")
	target := pr.target
	if e.opt.Turn != nil && target != nil {
		target = turnTarget{t: target, pid: pr.info.PID, turn: e.opt.Turn}
	}
	run := &Run{Process: pr.info, Target: target, Rule: rule.Name, Action: spec, Dir: e.opt.ArtifactDir, Logger: log, Now: start, outputs: outputs}
	run.store = func(ctx context.Context, a Artifact) (string, error) {
		if op != nil {
			op.setArtifact(a.Path, spec.Egress)
		}
		if spec.Egress == "" || e.opt.Egress == nil {
			return a.Path, nil
		}
		where, err := e.opt.Egress.Egress(ctx, spec.Egress, a)
		if err != nil {
			e.metrics.egressFailures.WithLabelValues(rule.Name, spec.Egress).Inc()
			return "", fmt.Errorf("egress to %s failed, the artifact is kept at %s: %w", spec.Egress, a.Path, err)
		}
		return where, nil
	}
	outs, err := spec.Action.Run(ctx, run)
	elapsed := e.opt.Now().Sub(start)
	result := "succeeded"
	switch {
	case err != nil && ctx.Err() != nil:
		result = "cancelled"
	case err != nil:
		result = "failed"
	}
	e.metrics.actions.WithLabelValues(rule.Name, spec.Type, result).Inc()
	e.metrics.duration.WithLabelValues(spec.Type).Observe(elapsed.Seconds())
	if op != nil {
		op.finish(e.opt.Now(), outs[OutputEgressPath], err, ctx.Err() != nil)
	}
	if spec.Name != "" {
		m := map[string]string{}
		for k, v := range outs {
			m[strings.ToLower(k)] = v
		}
		outputs[strings.ToLower(spec.Name)] = m
	}
	if err != nil {
		log.Error("collection rule action "+result, "error", err.Error(), "elapsed", elapsed.Round(time.Millisecond).String())
		return err
	}
	attrs := []any{"elapsed", elapsed.Round(time.Millisecond).String()}
	keys := make([]string, 0, len(outs))
	for k := range outs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, k, outs[k])
	}
	log.Info("collection rule action succeeded", attrs...)
	return nil
}

// Needs says what a process's rules must be fed: the counters of their
// EventCounter and EventMeter triggers (Sample), and the providers of
// their EventPipeEvent and ASP.NET triggers (Event).
type Needs struct {
	Counters  []counters.Spec
	Providers []eventpipe.Provider
}

// Needs returns what the process's rules that can still fire need (none
// for an unknown pid).
func (e *Engine) Needs(pid int) Needs {
	pr := e.proc(pid)
	if pr == nil {
		return Needs{}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var n Needs
	specs := map[string]*counters.Spec{}
	var order []string
	aspnet := false
	for _, rs := range pr.rules {
		if rs.state == StateFinished {
			continue
		}
		t := rs.rule.Trigger
		switch {
		case t.Counter != nil:
			key := strings.ToLower(t.Counter.Provider) + "\x00" + strconv.FormatBool(t.Counter.Meter)
			sp := specs[key]
			if sp == nil {
				sp = &counters.Spec{Provider: t.Counter.Provider, EventCountersOnly: !t.Counter.Meter}
				specs[key] = sp
				order = append(order, key)
			}
			sp.Counters = append(sp.Counters, t.Counter.Name)
		case t.AspNet != nil:
			aspnet = true
		case t.Event != nil:
			n.Providers = append(n.Providers, eventpipe.Provider{Name: t.Event.Provider, Keywords: t.Event.Keywords, Level: t.Event.Level})
		}
	}
	for _, k := range order {
		n.Counters = append(n.Counters, *specs[k])
	}
	if aspnet {
		n.Providers = append(n.Providers, AspNetProvider())
	}
	if len(n.Providers) > 1 {
		if merged, err := eventpipe.MergeProviders(n.Providers); err == nil {
			n.Providers = merged
		}
	}
	return n
}

// RuleStatus is the state of one rule for one process, as
// /collectionrules serves it.
type RuleStatus struct {
	PID     int    `json:"pid"`
	Process string `json:"processName,omitempty"`
	Rule    string `json:"rule"`
	State   State  `json:"state"`
	// Reason says why a rule is throttled or finished.
	Reason string `json:"stateReason,omitempty"`
	// Trigger describes what the rule watches for.
	Trigger     string     `json:"trigger"`
	LastTrigger *time.Time `json:"lastTrigger,omitempty"`
	// LastTriggerWhat says what fired it last.
	LastTriggerWhat string `json:"lastTriggerWhat,omitempty"`
	// Executions counts the action lists run, Throttled the triggers not
	// acted on because of ActionCount.
	Executions int `json:"executions"`
	Throttled  int `json:"throttled"`
}

// Status returns every rule's state for every process, by pid then rule.
func (e *Engine) Status() []RuleStatus {
	e.mu.Lock()
	procs := make([]*proc, 0, len(e.procs))
	for _, p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	sort.Slice(procs, func(i, j int) bool { return procs[i].info.PID < procs[j].info.PID })
	var out []RuleStatus
	for _, pr := range procs {
		pr.mu.Lock()
		for _, rs := range pr.rules {
			st := RuleStatus{PID: pr.info.PID, Process: pr.info.Name, Rule: rs.rule.Name, State: rs.state, Reason: rs.reason,
				Trigger: rs.rule.Trigger.Describe(), LastTriggerWhat: rs.lastWhat, Executions: rs.executions, Throttled: rs.throttled}
			if !rs.lastTrigger.IsZero() {
				t := rs.lastTrigger
				st.LastTrigger = &t
			}
			out = append(out, st)
		}
		pr.mu.Unlock()
	}
	return out
}

// ErrNoProcess is returned for a pid the engine does not know.
var ErrNoProcess = errors.New("rules: no such process")

// CounterSpecs are the counters that the counter triggers of every rule
// read, whatever the rules' filters: one Spec per provider (EventCounters
// and Meters apart), for a caller that keeps one counters session per
// process for all of them (the monitor's /metrics collector).
func (c *Config) CounterSpecs() []counters.Spec {
	specs := map[string]*counters.Spec{}
	var order []string
	for _, r := range c.Rules {
		t := r.Trigger.Counter
		if t == nil {
			continue
		}
		key := strings.ToLower(t.Provider) + "\x00" + strconv.FormatBool(t.Meter)
		sp := specs[key]
		if sp == nil {
			sp = &counters.Spec{Provider: t.Provider, EventCountersOnly: !t.Meter}
			specs[key] = sp
			order = append(order, key)
		}
		if !slices.ContainsFunc(sp.Counters, func(n string) bool { return strings.EqualFold(n, t.Name) }) {
			sp.Counters = append(sp.Counters, t.Name)
		}
	}
	out := make([]counters.Spec, 0, len(order))
	for _, k := range order {
		out = append(out, *specs[k])
	}
	return out
}
