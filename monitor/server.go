package monitor

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/procstate"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults.
const (
	DefaultTraceDuration    = 30 * time.Second
	DefaultCountersDuration = 5 * time.Second
	DefaultMaxDuration      = 10 * time.Minute
	DefaultMetricsWindow    = 2 * time.Second
	DefaultDiscovery        = 5 * time.Second
	DefaultRundownTimeout   = time.Minute
	// DefaultMaxTraceBytes caps a trace response (Config.MaxTraceBytes)
	// and a stack snapshot's session.
	DefaultMaxTraceBytes = 1 << 30
)

// DefaultMetricsIdle is Config.MetricsIdle's default: twice Prometheus'
// default scrape interval.
const DefaultMetricsIdle = 2 * time.Minute

// DefaultMetricsCounters is what the /metrics collector reads by default
// (Config.MetricsCounters): the runtime's counters and ASP.NET Core's
// request metrics, as dotnet-monitor collects by default.
const DefaultMetricsCounters = "System.Runtime,Microsoft.AspNetCore.Hosting"

// countersConfig is the configuration of the counters session GET
// /processes/{pid}/counters opens when the collector does not follow the
// process: Config.MetricsCounters at Config.MetricsWindow, with the
// Metrics provider at the settings of the shared Metrics session (.NET 8+)
// that the collector joins (the defaults of dotnet-counters: 1 s, 10
// histograms, 1000 time series).
func (s *Server) countersConfig() counters.Config {
	return counters.Config{
		Specs:                  s.specs,
		RefreshInterval:        s.cfg.MetricsWindow,
		MetricsRefreshInterval: counters.DefaultRefreshInterval,
		MaxHistograms:          counters.DefaultMaxHistograms,
		MaxTimeSeries:          counters.DefaultMaxTimeSeries,
	}
}

// eventCountersConfig is the collector's EventCounters session: the
// providers of Config.MetricsCounters read as EventSources only (their
// Meters are the Meters session's), so that it never holds the process's
// Metrics session.
func (s *Server) eventCountersConfig() counters.Config {
	cfg := s.countersConfig()
	cfg.Specs = make([]counters.Spec, len(s.specs))
	for i, sp := range s.specs {
		sp.EventCountersOnly = true
		cfg.Specs[i] = sp
	}
	return cfg
}

// metersConfig is the collector's Meters session in a runtime of the
// given major version: the Meters of Config.MetricsCounters alone, in the
// shared Metrics session on .NET 8+.
func (s *Server) metersConfig(major int) counters.Config {
	cfg := s.countersConfig()
	cfg.MetersOnly = true
	cfg.RuntimeMajor = major
	cfg.Specs = nil
	for _, sp := range s.specs {
		if !sp.EventCountersOnly {
			cfg.Specs = append(cfg.Specs, sp)
		}
	}
	return cfg
}

// ErrNoAPIKey is returned by New when neither an API key nor NoAuth is set.
var ErrNoAPIKey = errors.New("monitor: an API key is required (or set NoAuth)")

// DefaultDumpTimeout is Config.DumpTimeout's default: a full dump of a
// large process takes minutes.
const DefaultDumpTimeout = 5 * time.Minute

// Config configures a Server. The zero value with an APIKey serves the local
// processes with dumps disabled.
type Config struct {
	// APIKey is the bearer token every request must carry.
	APIKey string
	// NoAuth serves without authentication. Anyone who can reach the
	// address can then read environments and write dumps.
	NoAuth bool
	// Source lists the processes; nil means LocalSource{}.
	Source Source
	// DumpDir is where dumps are written; "" disables the dump route.
	// Give a path valid in the target's file system (the runtime writes it).
	DumpDir string
	// MaxDuration caps ?duration= of traces and counters; 0 means
	// DefaultMaxDuration. A trace's session is closed at the latest a
	// stop timeout and DefaultRundownTimeout after its duration.
	MaxDuration time.Duration
	// MaxTraceBytes caps what a trace request streams (and what a stack
	// snapshot's session may spool): a runtime that sends more has its
	// session stopped and the response ends there, cut in the middle of a
	// block (readers report the truncation and keep every event before
	// it); the X-Clrdiag-Trace-End trailer says so. 0 means
	// DefaultMaxTraceBytes (1 GiB); a negative value means no cap.
	MaxTraceBytes int64
	// MetricsWindow is the refresh interval of the long-lived counters
	// sessions behind /metrics: how often each process publishes its
	// System.Runtime counters, and the first delay before a failed session
	// is reopened (doubling up to a minute). 0 means DefaultMetricsWindow;
	// it must be a whole number of milliseconds.
	MetricsWindow time.Duration
	// DiscoveryInterval is how often /metrics' collector looks for new and
	// ended processes; 0 means DefaultDiscovery.
	DiscoveryInterval time.Duration
	// NoMetrics disables GET /metrics and its background counters
	// sessions.
	NoMetrics bool
	// MetricsIdle is how long after the last read of a process's values
	// (a /metrics scrape, the dashboard showing it, a counters request)
	// the collector keeps its Meters session open; 0 means
	// DefaultMetricsIdle. A .NET 8+ runtime refuses a private Metrics
	// session (dotnet-counters') while another exists: nobody reading the
	// monitor leaves the Metrics session free.
	MetricsIdle time.Duration
	// MetricsCounters are the providers the /metrics collector reads, in
	// the --counters syntax of dotnet-counters (counters.ParseSpecs):
	// EventSources with EventCounters and Meters. "" means
	// DefaultMetricsCounters: the runtime's System.Runtime and ASP.NET
	// Core's request metrics (Microsoft.AspNetCore.Hosting), which cost
	// nothing in a process that is not a web app. Give the defaults too
	// when adding a provider (DefaultMetricsCounters + ",MyApp.Meter").
	MetricsCounters string
	// CommandTimeout bounds each diagnostic command; 0 means diag's default.
	CommandTimeout time.Duration
	// Version is what GET /info reports as the monitor's version.
	Version string
	// DumpTimeout bounds a dump request, which lasts as long as createdump
	// writes the dump; 0 means DefaultDumpTimeout.
	DumpTimeout time.Duration
	// Now returns the current time (for dump names); nil means time.Now.
	Now func() time.Time
	// Logger receives what the /metrics collector does in the background:
	// a counters session lost, stalled or reopened, and every trigger and
	// action of the collection rules. nil discards it.
	Logger *slog.Logger
	// Fleet adds collection rules, egress and telemetry (FleetConfig,
	// fleet.go); nil runs none.
	Fleet *FleetConfig
	// ArtifactDir is where the rules' actions write their artifacts
	// (the target writes dumps there itself: give a path it can write);
	// "" means DumpDir, else a private directory the monitor makes.
	ArtifactDir string

	// AllowedHosts are the host names, besides IP addresses and localhost,
	// that requests may name in their Host header ("*": any). Any other
	// name is refused (421): a DNS-rebinding web page reaches the server
	// under its own name.
	AllowedHosts []string
	// CORSOrigins are the web origins (scheme://host[:port]) allowed to use
	// the API from a browser; every other cross-origin browser request is
	// refused (403) and no CORS headers are sent.
	CORSOrigins []string
	// QueueTimeout bounds how long a request waits for its process's turn
	// (the runtime serves one command at a time) before a 503 with
	// Retry-After; 0 means DefaultQueueTimeout.
	QueueTimeout time.Duration
	// StreamStallTimeout cuts a trace stream whose client has read nothing
	// for that long; 0 means DefaultStreamStallTimeout.
	StreamStallTimeout time.Duration
	// MaxConns, ReadHeaderTimeout, ReadTimeout, IdleTimeout and WriteTimeout
	// are the limits Serve puts on connections (0: the Default values).
	// Routes to a process extend the read and write deadlines to what
	// they may take (see Serve).
	MaxConns          int
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	WriteTimeout      time.Duration
}

// Server is the monitor's HTTP handler.
type Server struct {
	cfg Config
	mux *http.ServeMux
	reg *prometheus.Registry

	mu    sync.Mutex
	locks map[int]chan struct{} // one-slot queues, per pid

	guard *guard

	metrics   *collector      // nil with NoMetrics
	specs     []counters.Spec // Config.MetricsCounters parsed
	log       *slog.Logger
	ui        *ui    // the dashboard, /ui/ (ui.go)
	fleet     *fleet // rules, egress, telemetry (fleet.go); nil without Config.Fleet
	closeOnce sync.Once
}

// New makes a Server.
func New(cfg Config) (*Server, error) {
	if cfg.APIKey == "" && !cfg.NoAuth {
		return nil, ErrNoAPIKey
	}
	if cfg.Source == nil {
		cfg.Source = LocalSource{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	if cfg.MetricsWindow <= 0 {
		cfg.MetricsWindow = DefaultMetricsWindow
	}
	if _, err := counters.NewPlan(counters.Config{RefreshInterval: cfg.MetricsWindow}); err != nil {
		return nil, fmt.Errorf("monitor: metrics window: %w", err)
	}
	defaultDuration(&cfg.MetricsIdle, DefaultMetricsIdle)
	if cfg.MetricsCounters == "" {
		cfg.MetricsCounters = DefaultMetricsCounters
	}
	if cfg.Fleet != nil && cfg.Fleet.MetricsCounters != "" {
		cfg.MetricsCounters += "," + cfg.Fleet.MetricsCounters
	}
	specs, err := counters.ParseSpecs(cfg.MetricsCounters)
	if err != nil {
		return nil, fmt.Errorf("monitor: metrics counters: %w", err)
	}
	if _, err := counters.NewPlan(counters.Config{Specs: specs}); err != nil {
		return nil, fmt.Errorf("monitor: metrics counters: %w", err)
	}
	if cfg.DiscoveryInterval <= 0 {
		cfg.DiscoveryInterval = DefaultDiscovery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DumpTimeout <= 0 {
		cfg.DumpTimeout = DefaultDumpTimeout
	}
	defaultDuration(&cfg.QueueTimeout, DefaultQueueTimeout)
	defaultDuration(&cfg.StreamStallTimeout, DefaultStreamStallTimeout)
	defaultDuration(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defaultDuration(&cfg.ReadTimeout, DefaultReadTimeout)
	defaultDuration(&cfg.IdleTimeout, DefaultIdleTimeout)
	defaultDuration(&cfg.WriteTimeout, DefaultWriteTimeout)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	g, err := newGuard(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.DumpDir != "" {
		abs, err := filepath.Abs(cfg.DumpDir)
		if err != nil {
			return nil, fmt.Errorf("monitor: dump directory: %w", err)
		}
		cfg.DumpDir = abs
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), reg: prometheus.NewRegistry(), locks: map[int]chan struct{}{}, log: logger, guard: g, specs: specs}
	s.registerRoutes() // routes.go: the table GET / lists
	if cfg.Fleet != nil && !cfg.Fleet.Empty() {
		if s.fleet, err = newFleet(s); err != nil {
			return nil, err
		}
	}
	if !cfg.NoMetrics {
		c := &collector{s: s, desc: newCollectorDescs()}
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
		s.metrics = c
		c.start()
	}
	s.ui = newUI(s)
	if s.fleet != nil {
		s.fleet.start()
	}
	return s, nil
}

// Close stops the background counters sessions of /metrics (each is
// stopped in its process's turn, or closed when the turn does not come
// soon) and waits for them. It does not stop requests in progress; shut the
// http.Server down for that. Close may be called more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.ui.close()
		if s.fleet != nil {
			s.fleet.stop()
		}
		if s.metrics != nil {
			s.metrics.stop()
		}
	})
	return nil
}

// ServeHTTP implements http.Handler: it checks the API key, then routes.
// The dashboard (/ui/) signs browsers in with a cookie instead (ui.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard.serve(w, r) {
		return
	}
	if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, uiPrefix) {
		s.ui.ServeHTTP(w, r)
		return
	}
	if !s.cfg.NoAuth {
		if !s.bearerOK(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="clrdiag"`)
			writeError(w, http.StatusUnauthorized, errors.New("missing or wrong API key: send Authorization: Bearer <key>"))
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// bearerOK tells whether the request carries the API key.
func (s *Server) bearerOK(r *http.Request) bool {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	return len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) &&
		subtle.ConstantTimeCompare([]byte(h[len(prefix):]), []byte(s.cfg.APIKey)) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "cpu-usage > 80", not \u003e
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// statusOf maps a diagnostic error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ipc.ErrUnknownCommand):
		return http.StatusNotImplemented
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, procstate.ErrStopped):
		return http.StatusConflict // the process must continue first
	default:
		return http.StatusBadGateway
	}
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	procs, err := s.cfg.Source.Processes(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if procs == nil {
		procs = []Process{}
	}
	writeJSON(w, http.StatusOK, procs)
}

// lock waits for the pid's turn; the runtime serves one command at a time.
func (s *Server) lock(ctx context.Context, pid int) (unlock func(), err error) {
	s.mu.Lock()
	q := s.locks[pid]
	if q == nil {
		q = make(chan struct{}, 1)
		s.locks[pid] = q
	}
	s.mu.Unlock()
	select {
	case q <- struct{}{}:
		return func() { <-q }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// procHandler serves a request to one process.
type procHandler func(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client)

// withProcess resolves {pid}, serializes requests to it and passes a client.
func (s *Server) withProcess(h procHandler) http.HandlerFunc { return s.withProcessTurn(h, true) }

// withProcessTurn is withProcess; without turn the handler is called
// without waiting for the process's turn (it takes it itself with s.lock
// when it talks to the process).
func (s *Server) withProcessTurn(h procHandler, turn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pid, err := strconv.Atoi(r.PathValue("pid"))
		if err != nil || pid <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("bad process id %q", r.PathValue("pid")))
			return
		}
		procs, err := s.cfg.Source.Processes(r.Context())
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		var p *Process
		for i := range procs {
			if procs[i].PID == pid {
				p = &procs[i]
			}
		}
		if p == nil {
			writeError(w, http.StatusNotFound, fmt.Errorf("no .NET process with pid %d (see GET /processes)", pid))
			return
		}
		s.extendDeadlines(w)
		if turn {
			unlock, ok := s.turn(w, r, pid)
			if !ok {
				return
			}
			defer unlock()
		}
		h(w, r, *p, clientOf(*p, s.cfg.CommandTimeout))
	}
}

// turn waits for pid's turn for a request, at most QueueTimeout; when it
// does not come it answers the request (503) and ok is false.
func (s *Server) turn(w http.ResponseWriter, r *http.Request, pid int) (unlock func(), ok bool) {
	qctx, cancel := context.WithTimeout(r.Context(), s.cfg.QueueTimeout)
	unlock, err := s.lock(qctx, pid)
	cancel()
	if err != nil {
		if r.Context().Err() == nil {
			s.busy(w, pid)
		}
		return nil, false
	}
	return unlock, true
}

// infoJSON is GET /processes/{pid}.
type infoJSON struct {
	PID                int    `json:"pid"`
	Name               string `json:"name,omitempty"`
	CommandLine        string `json:"commandLine,omitempty"`
	OS                 string `json:"os,omitempty"`
	Arch               string `json:"arch,omitempty"`
	RuntimeCookie      string `json:"runtimeCookie,omitempty"`
	EntrypointAssembly string `json:"entrypointAssembly,omitempty"`
	ClrProductVersion  string `json:"clrProductVersion,omitempty"`
	RuntimeIdentifier  string `json:"runtimeIdentifier,omitempty"`
	// Source is "ProcessInfo" or "os" (a .NET Core 3.1 runtime has no
	// ProcessInfo; the fields then come from the operating system).
	Source string `json:"source"`
}

func (s *Server) info(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	pi, err := c.ProcessInfo(r.Context())
	if errors.Is(err, ipc.ErrUnknownCommand) {
		writeJSON(w, http.StatusOK, infoJSON{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, Source: "os"})
		return
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, infoJSON{
		PID: p.PID, Name: p.Name, CommandLine: pi.CommandLine, OS: pi.OS, Arch: pi.Arch,
		RuntimeCookie: pi.RuntimeCookie.String(), EntrypointAssembly: pi.ManagedEntrypointAssemblyName,
		ClrProductVersion: pi.ClrProductVersion, RuntimeIdentifier: pi.RuntimeIdentifier, Source: "ProcessInfo",
	})
}

func (s *Server) env(w http.ResponseWriter, r *http.Request, _ Process, c *diag.Client) {
	vars, err := c.Environment(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	m := make(map[string]string, len(vars))
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	writeJSON(w, http.StatusOK, m)
}

var dumpTypes = map[string]ipc.DumpType{"": ipc.DumpFull, "full": ipc.DumpFull, "heap": ipc.DumpWithHeap, "mini": ipc.DumpNormal, "triage": ipc.DumpTriage}

// dumpResult is where writeDump put the dump.
type dumpResult struct{ path, name string }

// dump is POST /processes/{pid}/dump: it answers the dump's path.
func (s *Server) dump(w http.ResponseWriter, r *http.Request, p Process, _ *diag.Client) {
	var res dumpResult
	s.writeDump(w, r, p, &res)
	if res.path != "" {
		writeJSON(w, http.StatusCreated, map[string]string{"path": res.path, "name": res.name})
	}
}

// writeDump has the runtime write a dump into DumpDir and fills res; on
// failure it answers the error and leaves res empty.
func (s *Server) writeDump(w http.ResponseWriter, r *http.Request, p Process, res *dumpResult) {
	if s.cfg.DumpDir == "" {
		writeError(w, http.StatusNotImplemented, errors.New("dumps are disabled: start the monitor with a dump directory (--dump-dir)"))
		return
	}
	q := r.URL.Query()
	typ, ok := dumpTypes[strings.ToLower(q.Get("type"))]
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Errorf("unknown dump type %q (want full, heap, mini or triage)", q.Get("type")))
		return
	}
	if len(q) > 1 || len(q["type"]) > 1 || (len(q) == 1 && !q.Has("type")) {
		writeError(w, http.StatusBadRequest, errors.New("only ?type= is accepted: the server chooses where dumps go"))
		return
	}
	// The name is made here from the pid and the time: nothing from the
	// request reaches the path.
	name := fmt.Sprintf("dump_%d_%s.dmp", p.PID, s.cfg.Now().UTC().Format("20060102_150405.000"))
	path := filepath.Join(s.cfg.DumpDir, name)
	// The runtime follows a link planted at the path: refuse what is there.
	if err := safefile.Prepare(path, false); err != nil {
		writeError(w, http.StatusConflict, err)
		return
	}
	dc := clientOf(p, s.cfg.DumpTimeout) // a dump outlasts other commands
	if err := dc.WriteDump(r.Context(), diag.DumpRequest{Path: path, Type: typ}); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	// createdump makes the file world-readable: a dump holds secrets.
	if _, err := safefile.Seal(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("the dump at %s is not safe to keep: %w", path, safefile.SealAdvice(path, err)))
		return
	}
	res.path, res.name = path, name
}

func (s *Server) durationParam(r *http.Request, def time.Duration) (time.Duration, error) {
	q := r.URL.Query()
	v := q.Get("duration")
	if secs := q.Get("durationSeconds"); secs != "" { // dotnet-monitor's name
		if v != "" {
			return 0, errors.New("give duration= or durationSeconds=, not both")
		}
		if n, err := strconv.Atoi(secs); err != nil || n <= 0 {
			return 0, fmt.Errorf("bad durationSeconds %q: give a positive number of seconds (an endless collection, -1 in dotnet-monitor, is not supported)", secs)
		}
		v = secs
	}
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.Atoi(v)
		if err2 != nil {
			return 0, fmt.Errorf("bad duration %q: give seconds or a Go duration such as 30s", v)
		}
		d = time.Duration(secs) * time.Second
	}
	if d <= 0 || d > s.cfg.MaxDuration {
		return 0, fmt.Errorf("duration %v out of range (0, %v]", d, s.cfg.MaxDuration)
	}
	return d, nil
}

// traceEndTrailer is the HTTP trailer of a trace response that says how the
// session ended (a client reading the body to its end can check it).
const traceEndTrailer = "X-Clrdiag-Trace-End"

func (s *Server) trace(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	d, err := s.durationParam(r, DefaultTraceDuration)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	q := r.URL.Query()
	req := eventpipe.Request{Providers: q.Get("providers")}
	if prof := q.Get("profile"); prof != "" {
		req.Profiles = []string{prof}
	}
	plan, err := eventpipe.Compose(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	stopAt, err := stoppingEvent(q, plan)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ctx := r.Context()
	sess, err := eventpipe.Start(ctx, c, plan.Config())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	defer sess.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%d_%s.nettrace"`, p.PID, s.cfg.Now().UTC().Format("20060102_150405")))
	w.Header().Set("Trailer", traceEndTrailer)
	w.WriteHeader(http.StatusOK)

	// The client going away ends ctx: the session is then abandoned.
	out := flushWriter{w, s.cfg.StreamStallTimeout}
	dc := eventpipe.DrainConfig{Duration: d, RundownTimeout: DefaultRundownTimeout, MaxBytes: s.maxTraceBytes()}
	var res eventpipe.DrainResult
	if stopAt != nil {
		// The stream is decoded as it is sent, at the decoder's pace.
		res, err = sess.DrainDecode(ctx, out, dc, stopAt.StopAt())
	} else {
		res, err = sess.Drain(ctx, out, dc)
	}
	end := res.Reason.String() + "; rundown " + res.Rundown.String()
	if err != nil {
		end += "; " + err.Error()
	}
	w.Header().Set(traceEndTrailer, end)
}

// stoppingEvent reads the stoppingEvent* parameters of a trace (nil when
// there are none): the provider must be one the plan enables.
func stoppingEvent(q url.Values, plan *eventpipe.Plan) (*eventpipe.EventFilter, error) {
	prov, name, payload := q.Get("stoppingEventProviderName"), q.Get("stoppingEventEventName"), q.Get("stoppingEventPayloadFilter")
	switch {
	case prov == "" && (name != "" || payload != ""):
		return nil, errors.New("stoppingEventEventName and stoppingEventPayloadFilter need stoppingEventProviderName")
	case prov == "":
		return nil, nil
	case payload != "" && name == "":
		return nil, errors.New("stoppingEventPayloadFilter needs stoppingEventEventName")
	}
	enabled := false
	for _, p := range plan.Providers {
		enabled = enabled || strings.EqualFold(p.Name, prov)
	}
	if !enabled {
		return nil, fmt.Errorf("the stopping event's provider %s is not enabled: add it to providers=", prov)
	}
	filter, err := eventpipe.ParsePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("stoppingEventPayloadFilter %w", err)
	}
	return &eventpipe.EventFilter{Provider: prov, Event: name, Payload: filter}, nil
}

// maxTraceBytes is the byte cap of a trace response (0: none).
func (s *Server) maxTraceBytes() int64 {
	switch {
	case s.cfg.MaxTraceBytes < 0:
		return 0
	case s.cfg.MaxTraceBytes == 0:
		return DefaultMaxTraceBytes
	}
	return s.cfg.MaxTraceBytes
}

// flushWriter flushes after each write so the trace reaches the client as it
// is collected. Each write must complete within stall: a client that stops
// reading cuts its stream rather than holding the session.
type flushWriter struct {
	w     http.ResponseWriter
	stall time.Duration
}

func (f flushWriter) Write(b []byte) (int, error) {
	_ = http.NewResponseController(f.w).SetWriteDeadline(time.Now().Add(f.stall))
	n, err := f.w.Write(b)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

// stackSnapshot is GET /processes/{pid}/stacks: the first sample of every
// thread of a short SampleProfiler session, as clrdiag stack prints it.
func (s *Server) stackSnapshot(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "text" {
		writeError(w, http.StatusBadRequest, fmt.Errorf("unknown format %q (want json or text)", format))
		return
	}
	cfg := stacks.Config{RundownTimeout: DefaultRundownTimeout, SlowRundown: -1, MaxBytes: s.cfg.MaxTraceBytes}
	// Thread names come from /proc only for a process this machine's
	// /proc shows under that pid (not a runtime in another container).
	if ep, ok := p.Dialer.(transport.Endpoint); ok && ep.PID > 0 {
		cfg.PID = ep.PID
	}
	var warnings []string
	cfg.Notify = func(n stacks.Note) {
		if n.Warning() {
			warnings = append(warnings, n.String())
		}
	}
	snap, err := stacks.Capture(r.Context(), c, cfg)
	if err != nil {
		status := statusOf(err)
		if se := (*stacks.Error)(nil); errors.As(err, &se) && se.Local {
			status = http.StatusInternalServerError
		}
		writeError(w, status, err)
		return
	}
	for _, wn := range warnings {
		w.Header().Add("X-Clrdiag-Warning", wn)
	}
	if format != "text" {
		writeJSON(w, http.StatusOK, snap)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = snap.WriteText(w)
}

// sampleJSON is one counter value of GET /processes/{pid}/counters. Names
// are the runtime's (EventCounter names, or the Meter instruments'
// dotnet.* names on .NET 9+), as /metrics reads them.
type sampleJSON struct {
	Time     time.Time         `json:"timestamp"`
	Provider string            `json:"provider"`
	Name     string            `json:"name"`
	Display  string            `json:"displayName,omitempty"`
	Unit     string            `json:"unit,omitempty"`
	Kind     string            `json:"kind"`
	Meter    bool              `json:"meter,omitempty"`
	Value    float64           `json:"value"`
	Tags     map[string]string `json:"tags,omitempty"`
	// RatePerSecond is a rate's Value (its increase) per second of
	// ElapsedSeconds, the real time the runtime measured it over.
	RatePerSecond  *float64 `json:"ratePerSecond,omitempty"`
	ElapsedSeconds float64  `json:"elapsedSeconds,omitempty"`
	// Total is a Metrics counter's total since it was created (.NET 8+).
	Total *float64 `json:"total,omitempty"`
	// Quantiles, Count and Sum describe a histogram's interval.
	Quantiles map[string]float64 `json:"quantiles,omitempty"`
	Count     int64              `json:"count,omitempty"`
	Sum       float64            `json:"sum,omitempty"`
}

// maxRouteSamples bounds what GET /processes/{pid}/counters keeps.
const maxRouteSamples = 100000

// counters is GET /processes/{pid}/counters?duration=: the samples of the
// collector's session over the duration (no session of its own, so the
// names, providers and rates are those of /metrics), or of a session
// opened with the collector's settings when the collector does not follow
// the process (--no-metrics, not discovered yet).
func (s *Server) counters(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	d, err := s.durationParam(r, DefaultCountersDuration)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var samples []counters.Sample
	if stop, ok := s.tapCollector(p.PID); ok {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
		var full bool
		if samples, full = stop(); full {
			w.Header().Add("X-Clrdiag-Warning", fmt.Sprintf("more than %d samples in the duration: the later ones are left out", maxRouteSamples))
		}
	} else {
		unlock, ok := s.turn(w, r, p.PID)
		if !ok {
			return
		}
		defer unlock() // the session is stopped in the turn too
		samples, err = s.collectCounters(r.Context(), c, d)
		if err != nil && len(samples) == 0 {
			writeError(w, statusOf(err), err)
			return
		}
	}
	writeJSON(w, http.StatusOK, samplesJSON(samples))
}

// tapCollector listens to the collector's samples of pid.
func (s *Server) tapCollector(pid int) (stop func() ([]counters.Sample, bool), ok bool) {
	if s.metrics == nil {
		return nil, false
	}
	return s.metrics.listen(pid, maxRouteSamples)
}

// samplesJSON turns samples into the route's JSON. A provider that
// published through its Meter has its EventCounters samples (sent before
// the Meter's first collection) left out, as /metrics drops them.
func samplesJSON(samples []counters.Sample) []sampleJSON {
	meters := map[string]bool{}
	for i := range samples {
		if samples[i].Meter {
			meters[samples[i].Provider] = true
		}
	}
	out := make([]sampleJSON, 0, len(samples))
	for i := range samples {
		sm := &samples[i]
		if !sm.Meter && meters[sm.Provider] {
			continue
		}
		j := sampleJSON{Time: sm.Time, Provider: sm.Provider, Name: sm.Name, Display: sm.DisplayName, Unit: sm.Unit,
			Kind: kindJSON(sm.Kind), Meter: sm.Meter, Value: sm.Value, ElapsedSeconds: sm.Elapsed.Seconds()}
		if sm.NoValue {
			j.Value = 0
		}
		if r, ok := sm.PerSecond(); ok {
			j.RatePerSecond = &r
		}
		if sm.HasTotal {
			j.Total = &sm.Total
		}
		if len(sm.Tags) > 0 {
			j.Tags = map[string]string{}
			for _, t := range sm.Tags {
				j.Tags[t.Key] = t.Value
			}
		}
		if sm.Kind == counters.KindHistogram {
			j.Quantiles = map[string]float64{}
			for _, q := range sm.Quantiles {
				j.Quantiles[strconv.FormatFloat(q.Quantile, 'f', -1, 64)] = q.Value
			}
			j.Count, j.Sum = sm.Count, sm.Sum
		}
		if sm.NoValue && !sm.HasTotal {
			continue
		}
		out = append(out, j)
	}
	return out
}

// collectCounters reads the collector's counters (countersConfig) for d in
// a session of its own and returns every sample. An error with samples
// means the session ended early.
func (s *Server) collectCounters(ctx context.Context, c *diag.Client, d time.Duration) ([]counters.Sample, error) {
	sess, err := counters.Start(ctx, c, s.countersConfig())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var out []counters.Sample
	err = sess.Run(rctx, func(u counters.Update) error {
		if u.Sample != nil && (!u.Sample.NoValue || u.Sample.HasTotal) && len(out) < maxRouteSamples {
			out = append(out, *u.Sample)
		}
		return nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil
	}
	return out, err
}
