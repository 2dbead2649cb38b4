package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/rules"
)

// engine is the rules engine, nil without collection rules.
func (s *Server) engine() *rules.Engine {
	if s.fleet == nil {
		return nil
	}
	return s.fleet.engine
}

// pidFilter reads an optional ?pid= (0: every process).
func pidFilter(r *http.Request) (int, error) {
	v := r.URL.Query().Get("pid")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad process id %q", v)
	}
	return n, nil
}

// collectionRules is GET /collectionrules[?pid=] and GET
// /collectionrules/{name}[?pid=]: the state of each rule for each process
// it applies to (Running, ActionExecuting, Throttled, Finished), with the
// last trigger.
func (s *Server) collectionRules(w http.ResponseWriter, r *http.Request) {
	pid, err := pidFilter(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	name := r.PathValue("name")
	e := s.engine()
	if name != "" && (e == nil || !containsFold(e.Config().Names(), name)) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no collection rule named %q (see GET /collectionrules; rules come from the monitor's --config)", name))
		return
	}
	out := []rules.RuleStatus{}
	if e != nil {
		for _, st := range e.Status() {
			if (pid == 0 || st.PID == pid) && (name == "" || strings.EqualFold(st.Rule, name)) {
				out = append(out, st)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// operations is GET /operations[?pid=]: every artifact-producing action
// the rules ran or run (status, where its artifact went), oldest first.
func (s *Server) operations(w http.ResponseWriter, r *http.Request) {
	pid, err := pidFilter(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	out := []rules.Operation{}
	if e := s.engine(); e != nil {
		for _, op := range e.Operations() {
			if pid == 0 || op.PID == pid {
				out = append(out, op)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// operation is GET /operations/{id}.
func (s *Server) operation(w http.ResponseWriter, r *http.Request) {
	e := s.engine()
	id := r.PathValue("id")
	if e == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("no operation %q: the monitor runs no collection rules", id))
		return
	}
	op, ok := e.Operation(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no operation %q (see GET /operations; finished ones are kept up to %d)", id, rules.DefaultMaxOperations))
		return
	}
	writeJSON(w, http.StatusOK, op)
}

// cancelWait is how long DELETE /operations/{id} waits for the cancelled
// action to end before it answers 202.
const cancelWait = 10 * time.Second

// cancelOperation is DELETE /operations/{id}: the running action is
// cancelled (the rest of its rule's actions are skipped). It answers the
// operation once it has ended (200), or 202 when it is still ending.
func (s *Server) cancelOperation(w http.ResponseWriter, r *http.Request) {
	e := s.engine()
	id := r.PathValue("id")
	if e == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("no operation %q: the monitor runs no collection rules", id))
		return
	}
	switch err := e.Cancel(id); {
	case errors.Is(err, rules.ErrNoOperation):
		writeError(w, http.StatusNotFound, fmt.Errorf("no operation %q (see GET /operations)", id))
		return
	case errors.Is(err, rules.ErrOperationDone):
		op, _ := e.Operation(id)
		writeError(w, http.StatusConflict, fmt.Errorf("operation %s has already ended (%s)", id, op.Status))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	deadline := time.Now().Add(cancelWait)
	for {
		op, _ := e.Operation(id)
		if op.Status != rules.OperationRunning {
			writeJSON(w, http.StatusOK, op)
			return
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			writeJSON(w, http.StatusAccepted, op)
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DefaultLogsDuration is how long GET /processes/{pid}/logs reads without
// ?duration= (dotnet-monitor's default of /logs).
const DefaultLogsDuration = 30 * time.Second

// logsQuery are the parameters of the logs routes.
var logsQuery = []string{"duration", "durationSeconds", "level", "filter", "useAppFilters", "format"}

// processLogs is GET /processes/{pid}/logs: the process's ILogger messages
// (Microsoft-Extensions-Logging EventSource) at ?level= and above
// (Information by default; ?filter=CATEGORY:LEVEL, repeatable, for other
// levels; ?useAppFilters=true for the application's own levels), streamed
// as they come for ?duration= (30 s), in ?format= json (one object a
// line, the default), json-seq or text. dotnet-monitor's GET /logs
// chooses the format by the Accept header too. The session's start and
// stop take the process's turn; the stream does not hold it.
func (s *Server) processLogs(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	q := r.URL.Query()
	d, ok := s.streamParams(w, r, logsQuery, DefaultLogsDuration)
	if !ok {
		return
	}
	var err error
	cfg := logs.Config{DefaultLevel: logs.Information}
	if v := q.Get("level"); v != "" {
		if cfg.DefaultLevel, err = logs.ParseLevel(v); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("level: %w", err))
			return
		}
	}
	if v := q.Get("useAppFilters"); v != "" {
		if cfg.UseAppFilters, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("useAppFilters %q: give true or false", v))
			return
		}
	}
	for _, f := range q["filter"] {
		i := strings.LastIndexByte(f, ':')
		if i <= 0 || strings.ContainsAny(f[:i], ";:") {
			writeError(w, http.StatusBadRequest, fmt.Errorf("filter %q: give CATEGORY:LEVEL, e.g. Microsoft.AspNetCore*:Warning", f))
			return
		}
		l, err := logs.ParseLevel(f[i+1:])
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("filter %q: %w", f, err))
			return
		}
		cfg.Filters = append(cfg.Filters, logs.Filter{Category: f[:i], Level: l})
	}
	format, ctype, err := streamFormat(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	fw := flushWriter{w, s.cfg.StreamStallTimeout}
	var lw logs.Writer
	if format == "text" {
		lw = logs.NewTextWriter(fw)
	} else {
		lw = logs.NewJSONWriter(fw, format == "json-seq")
	}
	started := false
	// The session's commands take the process's turn; its stream does
	// not hold it (the rules and the collector go on meanwhile).
	err = logs.Collect(r.Context(), s.turnTracer(c, p.PID), cfg, logs.CollectConfig{Duration: d, Started: func(context.Context) error {
		started = true
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(http.StatusOK)
		return http.NewResponseController(w).Flush()
	}}, lw.Write)
	if !started {
		if err != nil && r.Context().Err() == nil {
			writeError(w, statusOf(err), err)
		}
		return
	}
	if err != nil && r.Context().Err() == nil {
		s.log.Warn("monitor: logs stream ended early", "pid", p.PID, "err", err)
	}
}

// streamParams checks that r names only the parameters allowed and reads
// its duration (def when it gives none); on a bad request it has answered
// 400 and reports false.
func (s *Server) streamParams(w http.ResponseWriter, r *http.Request, allowed []string, def time.Duration) (time.Duration, bool) {
	for k := range r.URL.Query() {
		if !containsFold(allowed, k) {
			writeError(w, http.StatusBadRequest, fmt.Errorf("unknown parameter %q: use %s", k, strings.Join(allowed, ", ")))
			return 0, false
		}
	}
	d, err := s.durationParam(r, def)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return 0, false
	}
	return d, true
}
