package monitor

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/profile"
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
// with a note. Notes and warnings (a rundown cut short, a process that
// ended the session) come as X-Clrdiag-Note and X-Clrdiag-Warning headers.
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
	f, err := profile.LookupFormat(cmp.Or(q.Get("format"), DefaultProfileFormat))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := f.CheckMeasure(m); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	d, err := s.durationParam(r, DefaultTraceDuration)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	plan, err := eventpipe.Compose(eventpipe.Request{Providers: m.Providers})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	ctx := r.Context()
	sess, err := eventpipe.Start(ctx, c, plan.Config())
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	defer sess.Close()
	warnings := append([]string(nil), sess.Warnings...)

	// The stream is decoded as it arrives. A decoder that stops (a damaged
	// stream) closes the pipe, which makes Drain stop the session.
	pr, pw := io.Pipe()
	type built struct {
		p   *profile.Profile
		err error
	}
	done := make(chan built, 1)
	go func() {
		prof, err := profile.Read(bufio.NewReaderSize(pr, 1<<16), profile.Config{Timeline: f.Timeline})
		pr.CloseWithError(cmp.Or(err, io.ErrClosedPipe))
		done <- built{prof, err}
	}()
	res, derr := sess.Drain(ctx, pw, eventpipe.DrainConfig{
		Duration: d, RundownTimeout: DefaultRundownTimeout, MaxBytes: s.maxTraceBytes(),
	})
	_ = pw.Close()
	b := <-done
	if res.Reason == eventpipe.StopCanceled || ctx.Err() != nil {
		return // the client went away
	}
	var fe *nettrace.FormatError
	switch {
	case b.p == nil:
		writeError(w, http.StatusBadGateway, fmt.Errorf("the session stream does not decode: %w", cmp.Or(b.err, derr)))
		return
	case errors.Is(derr, eventpipe.ErrNotNettrace):
		writeError(w, http.StatusBadGateway, derr)
		return
	case errors.Is(derr, eventpipe.ErrMaxBytes):
		warnings = append(warnings, fmt.Sprintf("the session reached the server's cap of %d bytes: the profile covers what came before", s.maxTraceBytes()))
	case errors.As(b.err, &fe):
		warnings = append(warnings, fmt.Sprintf("the session stream is damaged (%v): the profile covers the events before it", b.err))
	case derr != nil:
		warnings = append(warnings, "the session ended with an error: "+derr.Error())
	}
	if res.Reason == eventpipe.StopEnded {
		warnings = append(warnings, "the process ended the session before the duration (it exited?): the profile covers what it sent")
	}
	switch res.Rundown {
	case eventpipe.RundownComplete:
	case eventpipe.RundownMissing:
		warnings = append(warnings, "no rundown: methods jitted before the session may stay addresses")
	default:
		warnings = append(warnings, "rundown "+res.Rundown.String()+": methods jitted before the session may stay addresses")
	}

	prof := b.p
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
