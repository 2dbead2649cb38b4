package monitor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// DefaultPprofSeconds is the duration of a /pprof/ profile without
// ?seconds=, as Go's /debug/pprof/profile.
const DefaultPprofSeconds = 30

// pprofRoute serves GET /pprof/{process}/{kind}?seconds=N: a profile of the
// process (a pid, or a process name that one process has) over N seconds,
// as a gzipped pprof protobuf. The paths stay the same across restarts
// when the process is named, so that Pyroscope/Alloy's pyroscope.scrape,
// Parca and go tool pprof can scrape them (each with delta profiles:
// ?seconds=).
func (s *Server) pprofRoute(measure string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for k := range q {
			if k != "seconds" {
				writeError(w, http.StatusBadRequest, fmt.Errorf("unknown parameter %q: give only seconds=N", k))
				return
			}
		}
		secs := DefaultPprofSeconds
		if v := q.Get("seconds"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				writeError(w, http.StatusBadRequest, fmt.Errorf("bad seconds %q: give a positive whole number", v))
				return
			}
			secs = n
		}
		pid, status, err := s.resolveProcess(r.Context(), r.PathValue("process"))
		if err != nil {
			writeError(w, status, err)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery = fmt.Sprintf("sample=%s&duration=%ds&format=pprof", measure, secs)
		r2.SetPathValue("pid", strconv.Itoa(pid))
		s.withProcess(s.profile)(w, r2)
	}
}

// resolveProcess turns a pid or a process name into a pid of the
// processes served (a name must belong to exactly one).
func (s *Server) resolveProcess(ctx context.Context, sel string) (int, int, error) {
	if n, err := strconv.Atoi(sel); err == nil {
		if n <= 0 {
			return 0, http.StatusBadRequest, fmt.Errorf("bad process id %q", sel)
		}
		return n, 0, nil
	}
	procs, err := s.cfg.Source.Processes(ctx)
	if err != nil {
		return 0, http.StatusInternalServerError, err
	}
	var found []int
	for _, p := range procs {
		if strings.EqualFold(p.Name, sel) {
			found = append(found, p.PID)
		}
	}
	switch len(found) {
	case 0:
		return 0, http.StatusNotFound, fmt.Errorf("no .NET process named %q (see GET /processes; an app started with 'dotnet app.dll' is named dotnet)", sel)
	case 1:
		return found[0], 0, nil
	}
	pids := make([]string, len(found))
	for i, p := range found {
		pids[i] = strconv.Itoa(p)
	}
	return 0, http.StatusConflict, fmt.Errorf("%d processes are named %q (pids %s): give the pid", len(found), sel, strings.Join(pids, ", "))
}

// pprofOf takes a profile of the process over d (one session with the
// measure's providers, whose commands take the process's turn through t)
// and returns it as a gzipped pprof protobuf: the continuous profiler's
// profiles.
func (s *Server) pprofOf(ctx context.Context, t eventpipe.Tracer, p Process, measure string, d time.Duration) ([]byte, error) {
	m, err := profile.LookupMeasure(measure)
	if err != nil {
		return nil, err
	}
	prof, _, err := liveProfile(ctx, t, d, m, profile.Config{Measure: m.Name}, s.maxTraceBytes())
	if err != nil {
		return nil, err
	}
	wp, err := prof.Weighted(m.Name)
	if err != nil {
		return nil, err
	}
	if wp.Name == "" {
		wp.Name = cmp.Or(p.Name, "process "+strconv.Itoa(p.PID))
	}
	if wp.ProcessID == 0 {
		wp.ProcessID = p.PID
	}
	var b bytes.Buffer
	if err := weighted.WritePprof(&b, wp); err != nil {
		return nil, err
	}
	if b.Len() == 0 {
		return nil, errors.New("empty profile")
	}
	return b.Bytes(), nil
}
