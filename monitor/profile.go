package monitor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
)

// DefaultProfileFormat is the format of GET /processes/{pid}/profile
// without ?format=.
const DefaultProfileFormat = "pprof"

// profileQuery are the parameters GET /processes/{pid}/profile accepts.
var profileQuery = []string{"sample", "duration", "durationSeconds", "format"}

// profile is GET /processes/{pid}/profile?sample=&duration=&format=: a
// session of ?duration= (default DefaultTraceDuration) with the providers
// the measure needs (profile.MeasureInfo.Providers) and the rundown, built
// into a profile as the stream arrives (nothing is spooled) and returned in
// ?format= (pprof by default; speedscope, folded, chromium). ?sample= is a
// measure of package profile: wall (the default), cpu, alloc, contention or
// exceptions. A window without such events gives a valid empty profile
// with a note. Notes and warnings (the server's byte cap, a damaged
// stream, a rundown cut short, a process that ended the session) come as
// X-Clrdiag-Note and X-Clrdiag-Warning headers; a session that gives no
// profile (not a nettrace stream, nothing sent) is 502 Bad Gateway. The
// dashboard's profile jobs build theirs the same way (liveProfile).
func (s *Server) profile(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	q := r.URL.Query()
	for k := range q {
		known := false
		for _, n := range profileQuery {
			known = known || k == n
		}
		if !known {
			writeError(w, http.StatusBadRequest, fmt.Errorf("unknown parameter %q: use %s", k, strings.Join(profileQuery, ", ")))
			return
		}
	}
	m, err := profile.LookupMeasure(cmp.Or(q.Get("sample"), profile.MeasureWall))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("sample: %w", err))
		return
	}
	f, err := weighted.LookupFormat(cmp.Or(q.Get("format"), DefaultProfileFormat))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := m.CheckFormat(f); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	d, err := s.durationParam(r, DefaultTraceDuration)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ctx := r.Context()
	prof, warnings, err := liveProfile(ctx, c, d, m, profile.Config{Timeline: f.Timeline, Measure: m.Name}, s.maxTraceBytes())
	if ctx.Err() != nil {
		return // the client went away
	}
	if err != nil {
		writeError(w, liveProfileStatus(err), err)
		return
	}
	wp, err := prof.Weighted(m.Name)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if wp.Name == "" {
		wp.Name = cmp.Or(p.Name, "process "+strconv.Itoa(p.PID))
	}
	if wp.ProcessID == 0 {
		wp.ProcessID = p.PID
	}
	var notes []string
	if n, _ := prof.Events(m.Name); n == 0 {
		notes = append(notes, fmt.Sprintf("no %s in %v", m.Noun, d))
		wp.Comments = append(wp.Comments, notes[0])
	} else {
		notes = prof.NotesFor(m.Name)
	}
	// The profile is written to memory first, so a failure is an error
	// status rather than a cut body.
	var body bytes.Buffer
	if err := f.Write(&body, wp); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	for _, wn := range warnings {
		w.Header().Add("X-Clrdiag-Warning", headerSafe(wn))
	}
	for _, n := range notes {
		w.Header().Add("X-Clrdiag-Note", headerSafe(n))
	}
	name := cmp.Or(p.Name, strconv.Itoa(p.PID))
	w.Header().Set("Content-Type", f.ContentType)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s_%s.%s%s"`,
		safeFileName(name), s.cfg.Now().UTC().Format("20060102_150405"), m.Name, f.Suffix))
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = body.WriteTo(w)
}

// liveProfile's errors wrap one of these, or are eventpipe.Start's.
var (
	// errProfilePlan: the measure's providers make no session request (a
	// fault of the monitor, not of the process).
	errProfilePlan = errors.New("the measure's providers make no session")
	// errNoProfile: the session's stream gives no profile: it is not a
	// nettrace stream, the runtime sent nothing, or it does not decode.
	errNoProfile = errors.New("the session gave no profile")
)

// liveProfileStatus is the HTTP status of a liveProfile error: 500 for
// the monitor's fault, 502 for a stream that gives no profile, and
// statusOf's for a session the runtime did not start.
func liveProfileStatus(err error) int {
	switch {
	case errors.Is(err, errProfilePlan):
		return http.StatusInternalServerError
	case errors.Is(err, errNoProfile):
		return http.StatusBadGateway
	default:
		return statusOf(err)
	}
}

// liveProfile runs a session of c with the measure's providers and the
// rundown for d (at most maxBytes of stream, 0 for no cap) and builds its
// profile as the stream arrives: nothing is spooled. The warnings say what
// cut the profile short (the cap, a damaged stream, a process that ended
// the session, a partial rundown). When ctx ends first it returns ctx's
// error, the session abandoned.
func liveProfile(ctx context.Context, c eventpipe.Tracer, d time.Duration, m profile.MeasureInfo, cfg profile.Config, maxBytes int64) (*profile.Profile, []string, error) {
	plan, err := eventpipe.Compose(eventpipe.Request{Providers: m.Providers})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errProfilePlan, err)
	}
	sess, err := eventpipe.Start(ctx, c, plan.Config())
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	warnings := append([]string(nil), sess.Warnings...)

	// The stream is decoded as it arrives; damage stops the session at
	// once. Drain stops the session after d and waits for the rundown,
	// which names the methods of the stacks.
	var prof *profile.Profile
	res, derr := sess.DrainDecode(ctx, nil, eventpipe.DrainConfig{Duration: d, RundownTimeout: DefaultRundownTimeout, MaxBytes: maxBytes},
		func(r io.Reader, _ func(eventpipe.StopReason)) error {
			var err error
			prof, err = profile.Read(bufio.NewReaderSize(r, 1<<16), cfg)
			return err
		})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	switch {
	case errors.Is(derr, eventpipe.ErrNotNettrace):
		return nil, nil, fmt.Errorf("%w: %w", errNoProfile, derr)
	case res.Bytes == 0:
		why := "the stream ended"
		if res.StreamErr != nil {
			why = res.StreamErr.Error()
		}
		return nil, nil, fmt.Errorf("%w: the runtime ended the session before sending anything (%s)", errNoProfile, why)
	case prof == nil:
		return nil, nil, fmt.Errorf("%w: the session stream does not decode: %w", errNoProfile, res.DecodeErr)
	}
	switch {
	case errors.Is(derr, eventpipe.ErrMaxBytes):
		warnings = append(warnings, fmt.Sprintf("the session reached the server's cap of %d bytes: the profile covers what came before", maxBytes))
	case derr != nil:
		warnings = append(warnings, "the session ended with an error: "+derr.Error())
	}
	for _, wn := range res.Warnings() {
		warnings = append(warnings, wn.String())
	}
	return prof, warnings, nil
}

// headerSafe keeps a header value on one line of printable ASCII.
func headerSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return string(b)
}
