package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/transport"
)

// process resolves the request's {pid} to a process the Source lists; it
// answers the request itself when it cannot.
func (u *ui) process(w http.ResponseWriter, r *http.Request) (Process, bool) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad process id %q", r.PathValue("pid")))
		return Process{}, false
	}
	procs, err := u.s.cfg.Source.Processes(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return Process{}, false
	}
	for _, p := range procs {
		if p.PID == pid {
			return p, true
		}
	}
	writeError(w, http.StatusNotFound, fmt.Errorf("no .NET process with pid %d: it may have exited", pid))
	return Process{}, false
}

// versionEntry is what the dashboard found out about a process's runtime.
type versionEntry struct {
	name, cmdline string // the process it was found for (pids are reused)
	version       string
	err           string
	pending       bool
	checked       time.Time
}

// versionRetry is how long a failed runtime version lookup is not retried.
const versionRetry = time.Minute

// runtimeVersion returns the runtime version of p when known, and starts
// finding it out in the background otherwise.
func (u *ui) runtimeVersion(p Process) (version, errText string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.versions[p.PID]
	if ok && e.name == p.Name && e.cmdline == p.CommandLine &&
		(e.pending || e.version != "" || time.Since(e.checked) < versionRetry) {
		return e.version, e.err
	}
	u.versions[p.PID] = versionEntry{name: p.Name, cmdline: p.CommandLine, pending: true}
	u.wg.Go(func() {
		v, err := u.lookupVersion(p)
		e := versionEntry{name: p.Name, cmdline: p.CommandLine, version: v, checked: time.Now()}
		if err != nil {
			e.err = err.Error()
		}
		u.mu.Lock()
		u.versions[p.PID] = e
		u.mu.Unlock()
	})
	return "", ""
}

// forgetVersions drops what is known of processes no longer listed.
func (u *ui) forgetVersions(procs []Process) {
	live := make(map[int]bool, len(procs))
	for _, p := range procs {
		live[p.PID] = true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for pid, e := range u.versions {
		if !live[pid] && !e.pending {
			delete(u.versions, pid)
		}
	}
}

// lookupVersion asks the runtime (ProcessInfo2, .NET 5 and later) or, for
// a local process, reads the version from the path of the libcoreclr it
// mapped (Microsoft.NETCore.App/3.1.2/libcoreclr.so).
func (u *ui) lookupVersion(p Process) (string, error) {
	var info *ipc.ProcessInfo
	err := u.inTurn(p, func(ctx context.Context, c *diag.Client) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		info, err = c.ProcessInfo(ctx)
		return err
	})
	if err == nil && info.ClrProductVersion != "" {
		v, _, _ := strings.Cut(info.ClrProductVersion, "+") // 8.0.1+<commit>
		return v, nil
	}
	if err != nil && !errors.Is(err, ipc.ErrUnknownCommand) {
		return "", err
	}
	if ep, ok := p.Dialer.(transport.Endpoint); ok && ep.PID > 0 {
		if v := versionFromMaps(ep.PID, u.coreclrPath); v != "" {
			return v, nil
		}
	}
	return "", errors.New("the runtime does not say its version (ProcessInfo2 is .NET 5 and later) and its libcoreclr path names none")
}

// coreclrPathPattern matches the path of a mapped libcoreclr, its first
// submatch the runtime version. newUI compiles it (not package init, which
// every clrdiag command would pay).
const coreclrPathPattern = `/Microsoft\.NETCore\.App/([0-9][^/\s]*)/libcoreclr\.(?:so|dylib)`

// versionFromMaps reads the runtime version from /proc/PID/maps, or "";
// coreclrPath is coreclrPathPattern compiled.
func versionFromMaps(pid int, coreclrPath *regexp.Regexp) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 16<<20))
	if m := coreclrPath.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// processJSON is one process of GET /ui/api/processes.
type processJSON struct {
	PID         int    `json:"pid"`
	Name        string `json:"name,omitempty"`
	CommandLine string `json:"commandLine,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	// RuntimeError says why the version is unknown.
	RuntimeError string `json:"runtimeError,omitempty"`
	// Counters is "up", "starting" or "failing" (with CountersError), or
	// "off" without the collector.
	Counters      string `json:"counters"`
	CountersError string `json:"countersError,omitempty"`
	// Meters is "up" while the Meters session is open (someone reads the
	// values), "idle" while it is not, "" for a runtime without Meters or
	// not known yet.
	Meters string `json:"meters,omitempty"`
}

// processesJSON is GET /ui/api/processes.
type processesJSON struct {
	Processes []processJSON `json:"processes"`
	Error     string        `json:"error,omitempty"`
	// Metrics tells whether the counters collector runs (not NoMetrics);
	// Window is its refresh interval in ms.
	Metrics bool  `json:"metrics"`
	Window  int64 `json:"window"`
	// Dumps tells whether dumps are enabled (DumpDir); MaxDuration is the
	// longest profile, in seconds.
	Dumps       bool  `json:"dumps"`
	MaxDuration int64 `json:"maxDuration"`
	// Measures are what a profile may weigh (profile.MeasureInfos), the
	// default first.
	Measures []measureJSON `json:"measures"`
}

// measureJSON is one measure a dashboard profile may weigh.
type measureJSON struct {
	Name string `json:"name"`
	Help string `json:"help"`
}

func (u *ui) processes(w http.ResponseWriter, r *http.Request) {
	out := processesJSON{Processes: []processJSON{}, Metrics: u.s.metrics != nil, Window: u.s.cfg.MetricsWindow.Milliseconds(),
		Dumps: u.s.cfg.DumpDir != "", MaxDuration: int64(u.s.cfg.MaxDuration / time.Second)}
	for _, m := range profile.MeasureInfos() {
		out.Measures = append(out.Measures, measureJSON{m.Name, m.Help})
	}
	procs, err := u.s.cfg.Source.Processes(r.Context())
	if err != nil {
		out.Error = "list the processes: " + err.Error()
	}
	if err == nil {
		u.forgetVersions(procs)
	}
	for _, p := range procs {
		j := processJSON{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, Counters: "off"}
		j.Runtime, j.RuntimeError = u.runtimeVersion(p)
		if u.s.metrics != nil {
			known, up, err := u.s.metrics.state(p.PID)
			j.Meters = u.s.metrics.metersState(p.PID)
			switch {
			case up:
				j.Counters = "up"
			case !known || err == nil:
				j.Counters = "starting"
			default:
				j.Counters, j.CountersError = "failing", err.Error()
			}
		}
		out.Processes = append(out.Processes, j)
	}
	writeJSON(w, http.StatusOK, out)
}

// counters is GET /ui/api/processes/{pid}/counters?after=MS: the history
// the collector keeps, at or after after (the page asks again for the time
// of its newest value, whose collection may have had more to come). It
// counts as reading the process's values (the Meters session opens).
func (u *ui) counters(w http.ResponseWriter, r *http.Request) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad process id %q", r.PathValue("pid")))
		return
	}
	var after int64
	if a := r.URL.Query().Get("after"); a != "" {
		if after, err = strconv.ParseInt(a, 10, 64); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("bad after=%q: give Unix milliseconds", a))
			return
		}
	}
	if u.s.metrics == nil {
		writeError(w, http.StatusNotImplemented, errors.New("the monitor runs with --no-metrics: no counters are collected"))
		return
	}
	out, ok := u.s.metrics.dashboard(pid, after)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("the counters collector does not follow process %d (yet): it looks for processes every %v",
			pid, u.s.cfg.DiscoveryInterval))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// stacks is GET /ui/api/processes/{pid}/stacks: the monitor's stack
// snapshot as text.
func (u *ui) stacks(w http.ResponseWriter, r *http.Request) {
	r.URL.RawQuery = "format=text"
	u.s.withProcess(u.s.stackSnapshot)(w, r)
}
