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
	"sync"
	"time"

	pprofile "github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/viewer"
	"github.com/clrdiag/clrdiag/weighted"
)

// Dashboard actions that take a while run as jobs: the request starts one
// and returns its id at once, the page polls it, and its result (a profile
// viewer, a report) stays until newer jobs push it out. No request waits
// for a collection, so the server's timeouts do not cut one.
const (
	// maxJobs bounds the jobs kept, finished ones with their profiles
	// included; the oldest finished job is dropped first.
	maxJobs = 8
	// DefaultProfileDuration is the dashboard's CPU profile length when the
	// request gives none.
	DefaultProfileDuration = 5 * time.Second
)

// Job states.
const (
	JobRunning = "running"
	JobDone    = "done"
	JobFailed  = "failed"
)

// job is one dashboard action in progress or finished.
type job struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"` // "profile" or "gcdump"
	PID     int       `json:"pid"`
	State   string    `json:"state"`
	Started time.Time `json:"started"`
	// Until is when a profile's collection ends.
	Until time.Time `json:"until,omitzero"`
	Error string    `json:"error,omitempty"`
	// Summary says what was collected; Report is a text report (heap
	// snapshots); URL opens the result in the viewer.
	Summary string `json:"summary,omitempty"`
	Report  string `json:"report,omitempty"`
	URL     string `json:"url,omitempty"`

	viewer *viewer.Viewer
}

// jobs are the dashboard's jobs, newest last.
type jobs struct {
	mu   sync.Mutex
	next int
	list []*job
}

func newJobs() *jobs { return &jobs{} }

// add registers a running job, dropping the oldest finished ones beyond
// maxJobs; it fails when maxJobs are running.
func (js *jobs) add(kind string, pid int, until time.Duration) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for len(js.list) >= maxJobs {
		i := -1
		for k, j := range js.list {
			if j.State != JobRunning {
				i = k
				break
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%d dashboard jobs are running already: wait for one to end", maxJobs)
		}
		js.list = append(js.list[:i], js.list[i+1:]...)
	}
	js.next++
	j := &job{ID: strconv.Itoa(js.next), Kind: kind, PID: pid, State: JobRunning, Started: time.Now()}
	if until > 0 {
		j.Until = j.Started.Add(until)
	}
	js.list = append(js.list, j)
	return j, nil
}

// get returns a copy of job id.
func (js *jobs) get(id string) (job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.ID == id {
			return *j, true
		}
	}
	return job{}, false
}

// finish records a job's outcome.
func (js *jobs) finish(j *job, f func(*job)) {
	js.mu.Lock()
	defer js.mu.Unlock()
	f(j)
}

// run starts a job for the request's process: work runs in the background
// in the process's turn and fills the job's result.
func (u *ui) run(w http.ResponseWriter, r *http.Request, kind string, until time.Duration, work func(ctx context.Context, p Process, c *diag.Client, j *job) error) {
	p, ok := u.process(w, r)
	if !ok {
		return
	}
	j, err := u.jobs.add(kind, p.PID, until)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	snapshot, _ := u.jobs.get(j.ID)
	u.wg.Go(func() {
		err := u.inTurn(p, func(ctx context.Context, c *diag.Client) error { return work(ctx, p, c, j) })
		u.jobs.finish(j, func(j *job) {
			if err != nil {
				j.State, j.Error = JobFailed, err.Error()
				return
			}
			j.State = JobDone
		})
	})
	writeJSON(w, http.StatusAccepted, snapshot)
}

// inTurn runs f with a client of p in p's turn, under the dashboard's
// lifetime.
func (u *ui) inTurn(p Process, f func(ctx context.Context, c *diag.Client) error) error {
	qctx, cancel := context.WithTimeout(u.ctx, u.s.cfg.QueueTimeout)
	unlock, err := u.s.lock(qctx, p.PID)
	cancel()
	if err != nil {
		if u.ctx.Err() != nil {
			return errors.New("the monitor is stopping")
		}
		return fmt.Errorf("process %d is busy with another request (waited %v for its turn; the runtime serves one command at a time): retry later", p.PID, u.s.cfg.QueueTimeout)
	}
	defer unlock()
	return f(u.ctx, clientOf(p, u.s.cfg.CommandTimeout))
}

func (u *ui) job(w http.ResponseWriter, r *http.Request) {
	j, ok := u.jobs.get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no job %q: the dashboard keeps the last %d", r.PathValue("id"), maxJobs))
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// profile serves the viewer of a finished job under /ui/profiles/{id}/.
func (u *ui) profile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	u.jobs.mu.Lock()
	var v *viewer.Viewer
	for _, j := range u.jobs.list {
		if j.ID == id {
			v = j.viewer
		}
	}
	u.jobs.mu.Unlock()
	if v == nil {
		http.Error(w, "no such profile: the dashboard keeps the last "+strconv.Itoa(maxJobs)+" results", http.StatusNotFound)
		return
	}
	http.StripPrefix("/ui/profiles/"+id, v).ServeHTTP(w, r)
}

// startProfile is POST /ui/api/processes/{pid}/profile?duration=&sample=:
// a session of the process for duration with the providers the measure
// needs (profile.MeasureInfo.Providers; wall, the default, and cpu are CPU
// samples) and the rundown, then its flame graph under /ui/profiles/{id}/.
func (u *ui) startProfile(w http.ResponseWriter, r *http.Request) {
	d, err := u.s.durationParam(r, DefaultProfileDuration)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	m, err := profile.LookupMeasure(cmp.Or(r.URL.Query().Get("sample"), profile.MeasureWall))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("sample: %w", err))
		return
	}
	u.run(w, r, "profile", d, func(ctx context.Context, p Process, c *diag.Client, j *job) error {
		prof, warnings, err := liveProfile(ctx, c, d, m, profile.Config{Measure: m.Name}, u.s.maxTraceBytes())
		if ctx.Err() != nil {
			return errors.New("the monitor is stopping")
		}
		if err != nil {
			return err
		}
		n, _ := prof.Events(m.Name)
		if n == 0 {
			msg := fmt.Sprintf("no %s in %v: the measure needs %s", m.Noun, d, m.Events)
			if len(warnings) > 0 {
				msg += "; " + strings.Join(warnings, "; ")
			}
			return errors.New(msg)
		}
		wp, err := prof.Weighted(m.Name)
		if err != nil {
			return err
		}
		wp.Name = cmp.Or(wp.Name, p.Name)
		pp, err := wp.Pprof()
		if err != nil {
			return err
		}
		summary := profileSummary(n, m, d, wp)
		for _, n := range append(prof.NotesFor(m.Name), warnings...) {
			summary += "; " + n
		}
		return u.publish(j, pp, summary, "")
	})
}

// publish makes the viewer of a job's profile.
func (u *ui) publish(j *job, pp *pprofile.Profile, summary, report string) error {
	v, err := viewer.New(pp, viewer.Config{})
	if err != nil {
		return err
	}
	u.jobs.finish(j, func(j *job) {
		j.viewer, j.Summary, j.Report = v, summary, report
		j.URL = "profiles/" + j.ID + "/flamegraph"
	})
	return nil
}

// startGCDump is POST /ui/api/processes/{pid}/gcdump: a heap snapshot
// (the runtime pauses the process for a full collection while it walks the
// heap), then its report by type and its flame graph (retention paths).
func (u *ui) startGCDump(w http.ResponseWriter, r *http.Request) {
	u.run(w, r, "gcdump", 0, func(ctx context.Context, p Process, c *diag.Client, j *job) error {
		g, err := gcdump.Collect(ctx, c, gcdump.CollectConfig{ProcessName: p.Name, ProcessID: p.PID})
		if err != nil {
			return err
		}
		d := gcdump.ComputeDominators(g)
		rep, err := gcdump.BuildReport(g, d, gcdump.ReportConfig{Sort: gcdump.SortRetained, Top: 30})
		if err != nil {
			return err
		}
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			return err
		}
		f := gcdump.BuildFlame(g, d, gcdump.FlameConfig{})
		pp, err := f.Pprof()
		if err != nil {
			return err
		}
		summary := fmt.Sprintf("%d objects, %d bytes of heap; the flame graph shows them on their retention path from their roots", rep.Objects, rep.TotalSize)
		return u.publish(j, pp, summary, text.String())
	})
}

// profileSummary says what a profile job's flame graph shows: "4000
// samples in 5s, weighted by wall time of the threads that ran (wall_ran);
// the Sample menu switches to samples, wall, cpu". It names the sample type
// the viewer opens on, which is pprof's default (PprofDefault), not
// necessarily the measure asked for.
func profileSummary(n int64, m profile.MeasureInfo, d time.Duration, wp *weighted.Profile) string {
	noun := m.Noun
	if n == 1 {
		noun = strings.TrimSuffix(noun, "s")
	}
	shown := wp.PprofDefault
	if shown == "" && wp.Default >= 0 && wp.Default < len(wp.Types) {
		shown = wp.Types[wp.Default].Type
	}
	var weight string
	switch shown {
	case profile.MeasureWall:
		weight = "wall time"
	case profile.MeasureCPU:
		weight = "CPU time"
	case profile.WallRanType:
		weight = "wall time of the threads that ran (" + profile.WallRanType + "; the threads that waited the whole time are left out)"
	default:
		weight = shown
	}
	var others []string
	for _, t := range wp.Types {
		if t.Type != shown {
			others = append(others, t.Type)
		}
	}
	s := fmt.Sprintf("%d %s in %v, weighted by %s", n, noun, d, weight)
	if len(others) > 0 {
		s += "; the Sample menu switches to " + strings.Join(others, ", ")
	}
	return s
}
