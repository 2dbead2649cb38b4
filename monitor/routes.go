package monitor

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// Param is a parameter of a route.
type Param struct {
	Name string `json:"name"`
	// In is "path" or "query".
	In          string `json:"in"`
	Description string `json:"description"`
}

// Route is one route of the API, as GET / lists it.
type Route struct {
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Summary string  `json:"summary"`
	Params  []Param `json:"params,omitempty"`
	// DotnetMonitor marks a route spelled as dotnet-monitor's, so that
	// scripts written for it work; Note says how it differs.
	DotnetMonitor bool   `json:"dotnetMonitor,omitempty"`
	Note          string `json:"note,omitempty"`

	handler func(*Server) http.HandlerFunc
}

// Parameters shared by several routes.
var (
	pathPID                   = Param{"pid", "path", "process id (see GET /processes)"}
	queryPID                  = Param{"pid", "query", "process id; or name= (the process name, when one process has it)"}
	queryName                 = Param{"name", "query", "process name, instead of pid="}
	queryDuration             = Param{"duration", "query", "how long: seconds or a Go duration (30s, 2m); durationSeconds= is the same in seconds"}
	queryProfile              = Param{"profile", "query", "a clrdiag/dotnet-trace profile (see clrdiag trace list-profiles); dotnet-monitor's Cpu and GcCollect are accepted"}
	queryProvider             = Param{"providers", "query", "providers in dotnet-trace syntax: Name[:keywords[:level[:args]]],..."}
	queryDumpType             = Param{"type", "query", "full (default), heap, mini or triage; dotnet-monitor's Full, WithHeap, Mini, Triage too"}
	queryFormat               = Param{"format", "query", "json (default) or text (as clrdiag stack prints it)"}
	queryTimeout              = Param{"timeout", "query", "bound on the heap walk: seconds or a Go duration (default 30s)"}
	querySample               = Param{"sample", "query", "what the profile weighs: " + strings.Join(profile.Measures(), ", ") + " (default wall; see clrdiag trace convert --help)"}
	queryProfileFormat        = Param{"format", "query", strings.Join(weighted.FormatNames(), ", ") + " (default " + DefaultProfileFormat + "; chromium draws time: wall, cpu, contention)"}
	queryLogLevel             = Param{"level", "query", "lowest level: Trace, Debug, Information (default), Warning, Error or Critical"}
	queryLogFilter            = Param{"filter", "query", "CATEGORY:LEVEL for a category, or a prefix ending in '*' (repeatable)"}
	queryLogApp               = Param{"useAppFilters", "query", "true: the application's own Logging:LogLevel settings for categories no filter names"}
	queryExceptionsFormat     = Param{"format", "query", "json (one object a line, the default), json-seq or text (dotnet-monitor's Accept header works too)"}
	queryExceptionType        = Param{"exceptionType", "query", "keep only exceptions of this type (System.InvalidOperationException); repeatable"}
	queryExcludeExceptionType = Param{"excludeExceptionType", "query", "leave out exceptions of this type; repeatable"}
	queryLogFormat            = Param{"format", "query", "json (one object a line, the default), json-seq or text (dotnet-monitor's Accept header works too)"}
	queryPIDFilter            = Param{"pid", "query", "only this process"}
	pathRule                  = Param{"name", "path", "a collection rule's name"}
	pathOperation             = Param{"id", "path", "an operation id (see GET /operations)"}
	pathProcess               = Param{"process", "path", "a pid, or the name of one process (stable across restarts)"}
	querySeconds              = Param{"seconds", "query", "how long to profile, in seconds (default 30): the ?seconds= scrapers add for delta profiles"}
	queryStopProvider         = Param{"stoppingEventProviderName", "query", "stop the trace (before duration=) at the first event of this provider, which providers= or profile= must enable; the rundown follows as after any stop"}
	queryStopEvent            = Param{"stoppingEventEventName", "query", "the stopping event's name or id"}
	queryStopPayload          = Param{"stoppingEventPayloadFilter", "query", "payload values the stopping event must have: name:value,name:value"}
)

// routeTable returns every route, in the order GET / lists them (a
// function, not a variable: the handlers refer back to it).
func routeTable() []Route {
	return []Route{
		{Method: "GET", Path: "/", Summary: "this index of the routes and their parameters (JSON)",
			handler: func(s *Server) http.HandlerFunc { return s.index }},
		{Method: "GET", Path: "/processes", Summary: "the .NET processes the monitor serves (JSON: pid, name, commandLine)",
			handler: func(s *Server) http.HandlerFunc { return s.listProcesses }},
		{Method: "GET", Path: "/processes/{pid}", Summary: "what the runtime says about itself (ProcessInfo), or what the OS says on .NET Core 3.x", Params: []Param{pathPID},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.info) }},
		{Method: "GET", Path: "/processes/{pid}/env", Summary: "the environment variables (JSON object; .NET 5+)", Params: []Param{pathPID},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.env) }},
		{Method: "POST", Path: "/processes/{pid}/dump", Summary: "write a dump into the monitor's --dump-dir; answers its path (JSON)", Params: []Param{pathPID, queryDumpType},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.dump) }},
		{Method: "GET", Path: "/processes/{pid}/trace", Summary: "an EventPipe trace, streamed as a .nettrace file while it is collected",
			Params:  []Param{pathPID, queryDuration, queryProfile, queryProvider, queryStopProvider, queryStopEvent, queryStopPayload},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.trace) }},
		{Method: "GET", Path: "/processes/{pid}/counters", Summary: "the counter samples of the /metrics collector over a duration (JSON array: the runtime's names, rates per second)", Params: []Param{pathPID, queryDuration},
			handler: func(s *Server) http.HandlerFunc { return s.withProcessTurn(s.counters, false) }},
		{Method: "GET", Path: "/processes/{pid}/stacks", Summary: "the managed stack of every thread", Params: []Param{pathPID, queryFormat},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.stackSnapshot) }},
		{Method: "GET", Path: "/processes/{pid}/gcdump", Summary: "a heap snapshot, streamed as a .gcdump file", Params: []Param{pathPID, queryTimeout},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.gcdump) }},
		{Method: "GET", Path: "/processes/{pid}/profile", Summary: "a profile of the process over a duration: CPU samples, allocations, lock waits or exceptions by stack",
			Params:  []Param{pathPID, queryDuration, querySample, queryProfileFormat},
			handler: func(s *Server) http.HandlerFunc { return s.withProcess(s.profile) }},
		{Method: "GET", Path: "/processes/{pid}/logs", Summary: "the process's ILogger messages (Microsoft-Extensions-Logging), streamed as they come for a duration (default 30s)",
			Params:  []Param{pathPID, queryDuration, queryLogLevel, queryLogFilter, queryLogApp, queryLogFormat},
			handler: func(s *Server) http.HandlerFunc { return s.withProcessTurn(s.processLogs, false) }},
		{Method: "GET", Path: "/processes/{pid}/exceptions", Summary: "the exceptions the process throws over a duration (default 30s), one by one: type, message, time, thread, stack; answered at the end",
			Params:  []Param{pathPID, queryDuration, queryExceptionsFormat, queryExceptionType, queryExcludeExceptionType},
			handler: func(s *Server) http.HandlerFunc { return s.withProcessTurn(s.processExceptions, false) }},
		{Method: "GET", Path: "/collectionrules", Summary: "the state of every collection rule for every process it applies to: Running, ActionExecuting, Throttled or Finished, with the last trigger (JSON)",
			Params: []Param{queryPIDFilter}, Note: "dotnet-monitor answers an object of rule names for one process; this is a list over every process",
			handler: func(s *Server) http.HandlerFunc { return s.collectionRules }},
		{Method: "GET", Path: "/collectionrules/{name}", Summary: "one collection rule's state for every process it applies to (JSON)", Params: []Param{pathRule, queryPIDFilter},
			handler: func(s *Server) http.HandlerFunc { return s.collectionRules }},
		{Method: "GET", Path: "/operations", Summary: "the artifact-producing actions of the rules (traces, dumps, ...): status, local artifact, egress provider and where it went (JSON)",
			Params:  []Param{queryPIDFilter},
			handler: func(s *Server) http.HandlerFunc { return s.operations }},
		{Method: "GET", Path: "/operations/{id}", Summary: "one operation's status and egress result (JSON)", Params: []Param{pathOperation},
			handler: func(s *Server) http.HandlerFunc { return s.operation }},
		{Method: "DELETE", Path: "/operations/{id}", Summary: "cancel a running operation (the rest of its rule's actions are skipped); answers it once ended, or 202",
			Params:  []Param{pathOperation},
			handler: func(s *Server) http.HandlerFunc { return s.cancelOperation }},
		{Method: "GET", Path: "/pprof/{process}/profile", Summary: "a CPU profile of N seconds as gzipped pprof, for Pyroscope/Alloy, Parca and go tool pprof to scrape",
			Params:  []Param{pathProcess, querySeconds},
			handler: func(s *Server) http.HandlerFunc { return s.pprofRoute(profile.MeasureWall) }},
		{Method: "GET", Path: "/pprof/{process}/alloc", Summary: "an allocation profile of N seconds (gzipped pprof)", Params: []Param{pathProcess, querySeconds},
			handler: func(s *Server) http.HandlerFunc { return s.pprofRoute("alloc") }},
		{Method: "GET", Path: "/pprof/{process}/contention", Summary: "a lock-wait profile of N seconds (gzipped pprof)", Params: []Param{pathProcess, querySeconds},
			handler: func(s *Server) http.HandlerFunc { return s.pprofRoute("contention") }},
		{Method: "GET", Path: "/pprof/{process}/exceptions", Summary: "the exceptions thrown in N seconds, by stack and type (gzipped pprof)", Params: []Param{pathProcess, querySeconds},
			handler: func(s *Server) http.HandlerFunc { return s.pprofRoute("exceptions") }},
		{Method: "GET", Path: "/metrics", Summary: "Prometheus exposition of every process's counters: System.Runtime, ASP.NET Core requests and --metrics-counters (unless --no-metrics)"},
		{Method: "GET", Path: "/ui/", Summary: "the dashboard, for a browser: processes, live counter charts, CPU profiles and heap snapshots as flame graphs, stacks, dumps",
			Note: "signs a browser in with a cookie: open the Dashboard link the monitor printed (/ui/login?token=...), or give the API key at /ui/login"},

		// dotnet-monitor's spellings.
		{Method: "GET", Path: "/process", Summary: "as GET /processes/{pid}, with dotnet-monitor's field names (pid, uid, name, commandLine, operatingSystem, processArchitecture)",
			Params: []Param{queryPID, queryName}, DotnetMonitor: true, Note: "uid= (the runtime cookie) is not accepted: give pid= or name=",
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.processDM, nil) }},
		{Method: "GET", Path: "/env", Summary: "as GET /processes/{pid}/env", Params: []Param{queryPID, queryName}, DotnetMonitor: true,
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.env, nil) }},
		{Method: "GET", Path: "/dump", Summary: "write a dump into --dump-dir and stream it back (application/octet-stream)",
			Params: []Param{queryPID, queryName, queryDumpType}, DotnetMonitor: true,
			Note:    "the dump is written by the target into the monitor's --dump-dir and kept there; egressProvider= is not accepted; when the monitor cannot read the file (a target in another container), the answer is its path as JSON",
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.dumpDM, nil) }},
		{Method: "GET", Path: "/trace", Summary: "as GET /processes/{pid}/trace", Params: []Param{queryPID, queryName, queryDuration, queryProfile, queryProvider, queryStopProvider, queryStopEvent, queryStopPayload}, DotnetMonitor: true,
			Note:    "profile= takes clrdiag's profiles and dotnet-monitor's Cpu and GcCollect (Http, Logs and Metrics are refused); POST /trace with a provider configuration and egressProvider= are not accepted",
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.trace, dmTraceProfile) }},
		{Method: "GET", Path: "/livemetrics", Summary: "as GET /processes/{pid}/counters", Params: []Param{queryPID, queryName, queryDuration}, DotnetMonitor: true,
			Note:    "answers one JSON array at the end of the duration (dotnet-monitor streams one JSON object per sample); the counters /metrics reads",
			handler: func(s *Server) http.HandlerFunc { return s.byQueryTurn(s.counters, nil, false) }},
		{Method: "GET", Path: "/stacks", Summary: "as GET /processes/{pid}/stacks", Params: []Param{queryPID, queryName, queryFormat}, DotnetMonitor: true,
			Note:    "the format is chosen with format= (json or text), not with the Accept header; no speedscope output",
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.stackSnapshot, nil) }},
		{Method: "GET", Path: "/gcdump", Summary: "as GET /processes/{pid}/gcdump", Params: []Param{queryPID, queryName, queryTimeout}, DotnetMonitor: true,
			Note:    "egressProvider= is not accepted",
			handler: func(s *Server) http.HandlerFunc { return s.byQuery(s.gcdump, nil) }},
		{Method: "GET", Path: "/logs", Summary: "as GET /processes/{pid}/logs", Params: []Param{queryPID, queryName, queryDuration, queryLogLevel, queryLogFilter, queryLogApp, queryLogFormat}, DotnetMonitor: true,
			Note:    "level= defaults to Information (dotnet-monitor's to the application's levels: give useAppFilters=true); POST /logs with a filter body and egressProvider= are not accepted",
			handler: func(s *Server) http.HandlerFunc { return s.byQueryTurn(s.processLogs, nil, false) }},
		{Method: "GET", Path: "/exceptions", Summary: "as GET /processes/{pid}/exceptions",
			Params: []Param{queryPID, queryName, queryDuration, queryExceptionsFormat, queryExceptionType, queryExcludeExceptionType}, DotnetMonitor: true,
			Note:    "the exceptions thrown from the request on, for the duration (dotnet-monitor answers at once with those its in-process library kept since the process started); no inner exceptions or module of the exception's type; egressProvider= is not accepted",
			handler: func(s *Server) http.HandlerFunc { return s.byQueryTurn(s.processExceptions, nil, false) }},
		{Method: "GET", Path: "/info", Summary: "the monitor itself: version and diagnostic port mode (JSON)", DotnetMonitor: true,
			handler: func(s *Server) http.HandlerFunc { return s.monitorInfo }},
	}
}

// Routes returns the API's routes, as GET / lists them.
func Routes() []Route {
	out := routeTable()
	for i := range out {
		out[i].handler = nil
	}
	return out
}

// registerRoutes adds every route of the table that has a handler, and
// the answer to every other request: a JSON error, as every route's.
func (s *Server) registerRoutes() {
	for _, rt := range routeTable() {
		if rt.handler == nil {
			continue
		}
		pattern := rt.Method + " " + rt.Path
		if rt.Path == "/" {
			pattern += "{$}" // only the root, not every unknown path
		}
		s.mux.HandleFunc(pattern, rt.handler(s))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { noRoute(w, r, s.mux, "/", s.cfg.NoMetrics) })
}

// noRoute answers a request no route of mux takes (mux's catch-all
// pattern is catchAll), in JSON: 405 with Allow when the path is served
// with other methods, else 404.
func noRoute(w http.ResponseWriter, r *http.Request, mux *http.ServeMux, catchAll string, noMetrics bool) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != catchAll {
			allow = append(allow, m)
		}
	}
	switch {
	case len(allow) > 0:
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: this path takes %s (GET / lists the routes)", r.Method, r.URL.Path, strings.Join(allow, " or ")))
	case r.URL.Path == "/metrics" && noMetrics:
		writeError(w, http.StatusNotFound, errors.New("/metrics is off: the monitor runs with --no-metrics"))
	default:
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s (GET / lists the routes)", r.Method, r.URL.Path))
	}
}

// index is GET /: the routes this server answers.
func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	var routes []Route
	for _, rt := range Routes() {
		if rt.Path == "/metrics" && s.cfg.NoMetrics {
			continue
		}
		routes = append(routes, rt)
	}
	writeJSON(w, http.StatusOK, map[string]any{"routes": routes})
}

// byQuery serves a dotnet-monitor route that names its process in the
// query (pid= or name=) with the handler of the clrdiag route: the process
// is resolved, the selection parameters are removed from the query (the
// handlers check theirs), and rewrite, when set, translates the rest.
func (s *Server) byQuery(h procHandler, rewrite func(url.Values) error) http.HandlerFunc {
	return s.byQueryTurn(h, rewrite, true)
}

// byQueryTurn is byQuery; without turn h takes the process's turn itself
// (withProcessTurn).
func (s *Server) byQueryTurn(h procHandler, rewrite func(url.Values) error, turn bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has("egressProvider") {
			writeError(w, http.StatusBadRequest, errors.New("egressProvider= is not supported: the monitor answers with the data itself (dumps are also kept in --dump-dir)"))
			return
		}
		if q.Has("uid") {
			writeError(w, http.StatusBadRequest, errors.New("uid= (a runtime cookie) is not supported: give pid= or name= (see GET /processes)"))
			return
		}
		pid, name := q.Get("pid"), q.Get("name")
		switch {
		case pid != "" && name != "":
			writeError(w, http.StatusBadRequest, errors.New("give pid= or name=, not both"))
			return
		case pid == "" && name == "":
			writeError(w, http.StatusBadRequest, errors.New("give the process as ?pid=N or ?name=NAME (see GET /processes)"))
			return
		case pid != "":
			if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
				writeError(w, http.StatusBadRequest, fmt.Errorf("bad process id %q", pid))
				return
			}
		default:
			procs, err := s.cfg.Source.Processes(r.Context())
			if err != nil {
				writeError(w, http.StatusInternalServerError, err)
				return
			}
			var found []string
			for _, p := range procs {
				if strings.EqualFold(p.Name, name) {
					found = append(found, strconv.Itoa(p.PID))
				}
			}
			switch len(found) {
			case 0:
				writeError(w, http.StatusNotFound, fmt.Errorf("no .NET process named %q (see GET /processes; an app started with 'dotnet app.dll' is named dotnet)", name))
				return
			case 1:
				pid = found[0]
			default:
				writeError(w, http.StatusBadRequest, fmt.Errorf("%d processes are named %q (pids %s): give pid=", len(found), name, strings.Join(found, ", ")))
				return
			}
		}
		q.Del("pid")
		q.Del("name")
		if rewrite != nil {
			if err := rewrite(q); err != nil {
				writeError(w, http.StatusBadRequest, err)
				return
			}
		}
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery = q.Encode()
		r2.SetPathValue("pid", pid)
		s.withProcessTurn(h, turn)(w, r2)
	}
}

// dmTraceProfile translates dotnet-monitor's trace profiles to clrdiag's.
func dmTraceProfile(q url.Values) error {
	p := q.Get("profile")
	if p == "" {
		return nil
	}
	var out []string
	for _, part := range strings.Split(p, ",") {
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "cpu":
			out = append(out, "cpu-sampling")
		case "gccollect":
			out = append(out, "gc-collect")
		case "http", "logs", "metrics":
			return fmt.Errorf("profile %s: dotnet-monitor's %s profile is not supported; give a clrdiag profile (GET / lists where) or providers=", part, part)
		default:
			out = append(out, strings.TrimSpace(part))
		}
	}
	if len(out) > 1 {
		return fmt.Errorf("profile=%s: give one profile (and providers= for more)", p)
	}
	q.Set("profile", out[0])
	return nil
}

// processDM is GET /process: GET /processes/{pid} with dotnet-monitor's
// field names.
func (s *Server) processDM(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	out := map[string]any{"pid": p.PID, "name": p.Name, "commandLine": p.CommandLine}
	pi, err := c.ProcessInfo(r.Context())
	switch {
	case errors.Is(err, ipc.ErrUnknownCommand):
		// .NET Core 3.x: what the OS says.
	case err != nil:
		writeError(w, statusOf(err), err)
		return
	default:
		out["uid"] = pi.RuntimeCookie.String()
		out["commandLine"] = pi.CommandLine
		out["operatingSystem"] = pi.OS
		out["processArchitecture"] = pi.Arch
	}
	writeJSON(w, http.StatusOK, out)
}

// dumpDM is GET /dump: the dump of POST /processes/{pid}/dump, streamed
// back when the monitor can read it.
func (s *Server) dumpDM(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	if t := r.URL.Query().Get("type"); strings.EqualFold(t, "withheap") {
		q := r.URL.Query()
		q.Set("type", "heap")
		r.URL.RawQuery = q.Encode()
	}
	rec := &dumpResult{}
	s.writeDump(w, r, p, rec)
	if rec.path == "" {
		return // the error is answered
	}
	f, err := os.Open(rec.path)
	if err != nil {
		writeJSON(w, http.StatusCreated, map[string]string{"path": rec.path, "name": rec.name,
			"note": "the dump is in --dump-dir as the target sees it; the monitor cannot read it: " + err.Error()})
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, filepath.Base(rec.path)))
	if st, err := f.Stat(); err == nil {
		w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f) // a write error means the client went away
}

// monitorInfo is GET /info.
func (s *Server) monitorInfo(w http.ResponseWriter, _ *http.Request) {
	mode := "Connect"
	if _, ok := s.cfg.Source.(*ReverseSource); ok {
		mode = "Listen"
	}
	info := map[string]any{"version": s.cfg.Version, "diagnosticPortMode": mode}
	s.fleetInfo(info) // rules, egress, telemetry (fleet.go)
	writeJSON(w, http.StatusOK, info)
}
