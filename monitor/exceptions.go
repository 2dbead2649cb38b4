package monitor

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/exceptions"
)

// DefaultExceptionsDuration is how long GET /processes/{pid}/exceptions
// collects without ?duration=.
const DefaultExceptionsDuration = 30 * time.Second

// exceptionsQuery are the parameters of the exceptions routes.
var exceptionsQuery = []string{"duration", "durationSeconds", "format", "exceptionType", "excludeExceptionType"}

// processExceptions is GET /processes/{pid}/exceptions (and dotnet-monitor's
// GET /exceptions?pid=): the exceptions the process throws during
// ?duration= (default DefaultExceptionsDuration), one by one with their
// stacks (package exceptions), answered at the end of the duration, when
// the rundown has named the stacks' methods: JSON lines (the default),
// a JSON sequence or dotnet-monitor's text, by ?format= or the Accept
// header. ?exceptionType= keeps only exceptions of the types given,
// ?excludeExceptionType= leaves those out. Warnings (a rundown cut short,
// the server's byte cap) come as X-Clrdiag-Warning headers.
func (s *Server) processExceptions(w http.ResponseWriter, r *http.Request, p Process, c *diag.Client) {
	q := r.URL.Query()
	d, ok := s.streamParams(w, r, exceptionsQuery, DefaultExceptionsDuration)
	if !ok {
		return
	}
	var cfg exceptions.Config
	for _, t := range q["exceptionType"] {
		cfg.Filters.Include = append(cfg.Filters.Include, exceptions.Filter{ExceptionType: t})
	}
	for _, t := range q["excludeExceptionType"] {
		cfg.Filters.Exclude = append(cfg.Filters.Exclude, exceptions.Filter{ExceptionType: t})
	}
	format, ctype, err := streamFormat(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	// The session's commands take the process's turn; its stream does
	// not hold it (the rules and the collector go on meanwhile).
	ctx := r.Context()
	res, err := exceptions.Collect(ctx, s.turnTracer(c, p.PID), cfg, exceptions.CollectConfig{Duration: d, MaxBytes: cmp.Or(s.maxTraceBytes(), exceptions.DefaultMaxBytes)})
	if ctx.Err() != nil {
		return // the client went away
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	var body bytes.Buffer
	if format == "text" {
		err = exceptions.WriteText(&body, res.Exceptions)
	} else {
		err = exceptions.WriteJSON(&body, res.Exceptions, format == "json-seq")
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	for _, wn := range res.Warnings {
		w.Header().Add("X-Clrdiag-Warning", headerSafe(wn))
	}
	w.Header().Set("X-Clrdiag-Exceptions-Thrown", strconv.Itoa(res.Thrown))
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = body.WriteTo(w)
}

// streamFormat is the format of a streamed list (logs, exceptions) that
// the request asks for, by its format parameter or else its Accept
// header: "json" (newline-delimited), "json-seq" (RFC 7464) or "text",
// with the response's content type.
func streamFormat(r *http.Request) (format, ctype string, err error) {
	format = strings.ToLower(r.URL.Query().Get("format"))
	if format == "" {
		switch accept := r.Header.Get("Accept"); {
		case strings.Contains(accept, "text/plain"):
			format = "text"
		case strings.Contains(accept, "application/json-seq"):
			format = "json-seq"
		default:
			format = "json"
		}
	}
	switch format {
	case "json":
		return format, "application/x-ndjson", nil
	case "json-seq":
		return format, "application/json-seq", nil
	case "text":
		return format, "text/plain; charset=utf-8", nil
	}
	return "", "", fmt.Errorf("unknown format %q (want json, json-seq or text)", format)
}
