package monitor

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
)

// gcdump is GET /processes/{pid}/gcdump: a heap snapshot of the process,
// streamed as a .gcdump file (as dotnet-gcdump writes it). ?timeout= bounds
// the heap walk (seconds or a Go duration, default 30s, at most the
// server's MaxDuration). Warnings come as X-Clrdiag-Warning headers.
func (s *Server) gcdump(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	timeout := gcdump.DefaultTimeout
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, err2 := strconv.Atoi(v)
			if err2 != nil {
				writeError(w, http.StatusBadRequest, fmt.Errorf("bad timeout %q: give seconds or a Go duration such as 30s", v))
				return
			}
			d = time.Duration(secs) * time.Second
		}
		if d <= 0 || d > s.cfg.MaxDuration {
			writeError(w, http.StatusBadRequest, fmt.Errorf("timeout %v out of range (0, %v]", d, s.cfg.MaxDuration))
			return
		}
		timeout = d
	}
	var warnings []string
	g, err := gcdump.Collect(r.Context(), c, gcdump.CollectConfig{
		Timeout: timeout, RundownTimeout: DefaultRundownTimeout, ProcessName: p.Name, ProcessID: p.PID,
		Notify: func(n gcdump.Note) {
			if n.Warning() {
				warnings = append(warnings, n.String())
			}
		},
	})
	if err != nil {
		status := statusOf(err)
		if errors.Is(err, gcdump.ErrTimeout) {
			status = http.StatusGatewayTimeout
		}
		writeError(w, status, err)
		return
	}
	for _, wn := range warnings {
		w.Header().Add("X-Clrdiag-Warning", wn)
	}
	name := p.Name
	if name == "" {
		name = strconv.Itoa(p.PID)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s_%s.gcdump"`, safeFileName(name), s.cfg.Now().UTC().Format("20060102_150405")))
	w.WriteHeader(http.StatusOK)
	// The snapshot is complete; a write error means the client went away.
	_ = gcdump.Write(w, g)
}

// safeFileName keeps letters, digits, '.', '-' and '_' of a process name
// for a download's file name.
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}
