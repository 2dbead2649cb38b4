package rules

import (
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
)

// The DiagnosticSource events through which ASP.NET Core's hosting layer
// reports each request (the Microsoft.AspNetCore DiagnosticListener, on
// every ASP.NET Core version): the request's activity starts and stops.
const (
	aspNetListener   = "Microsoft.AspNetCore"
	aspNetStartEvent = "Microsoft.AspNetCore.Hosting.HttpRequestIn.Start"
	aspNetStopEvent  = "Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop"
)

// aspNetSpecs is the FilterAndPayloadSpecs that makes
// DiagnosticSourceEventSource send, for each request, its path, method and
// activity id when it starts, and its status code and duration (in
// 100-ns ticks) when it stops.
const aspNetSpecs = aspNetListener + "/" + aspNetStartEvent + "@Activity1Start:-" +
	"Request.Path;Request.Method;ActivityId=*Activity.Id\r\n" +
	aspNetListener + "/" + aspNetStopEvent + "@Activity1Stop:-" +
	"Request.Path;Response.StatusCode;ActivityId=*Activity.Id;ActivityDuration=*Activity.Duration.Ticks"

// AspNetProvider is the EventPipe provider the ASP.NET triggers read:
// Microsoft-Diagnostics-DiagnosticSource (keywords Messages|Events) with
// the request specs.
func AspNetProvider() eventpipe.Provider {
	return eventpipe.Provider{Name: eventpipe.ProviderDiagSource, Keywords: 0x3, Level: eventpipe.LevelVerbose,
		Args: []eventpipe.Arg{{Key: "FilterAndPayloadSpecs", Value: aspNetSpecs}}}
}

// Request is one ASP.NET Core request event: its start, or (Stop) its end
// with the status code and duration.
type Request struct {
	ID         string // the request's Activity id
	Path       string
	Method     string
	Stop       bool
	StatusCode int
	Duration   time.Duration
	Time       time.Time
}

// DecodeAspNet reads a request start or stop from a
// Microsoft-Diagnostics-DiagnosticSource event sent for AspNetProvider's
// specs.
func DecodeAspNet(ev *nettrace.Event) (Request, bool) {
	md := ev.Metadata
	if md == nil || md.ProviderName != eventpipe.ProviderDiagSource {
		return Request{}, false
	}
	o, err := ev.Fields()
	if err != nil {
		return Request{}, false
	}
	src, _ := o.Get("SourceName")
	name, _ := o.Get("EventName")
	if s, _ := src.(string); s != aspNetListener {
		return Request{}, false
	}
	r := Request{Time: ev.Time()}
	switch n, _ := name.(string); n {
	case aspNetStartEvent:
	case aspNetStopEvent:
		r.Stop = true
	default:
		return Request{}, false
	}
	args, _ := o.Get("Arguments")
	list, _ := args.([]any)
	for _, a := range list {
		kv, ok := a.(nettrace.Object)
		if !ok {
			continue
		}
		k, _ := kv.Get("Key")
		v, _ := kv.Get("Value")
		ks, _ := k.(string)
		vs, _ := v.(string)
		switch ks {
		case "Path":
			r.Path = vs
		case "Method":
			r.Method = vs
		case "ActivityId":
			r.ID = vs
		case "StatusCode":
			r.StatusCode, _ = strconv.Atoi(vs)
		case "ActivityDuration":
			if t, err := strconv.ParseInt(vs, 10, 64); err == nil && t >= 0 {
				r.Duration = time.Duration(t) * 100
			}
		}
	}
	return r, true
}

// matchesPath applies IncludePaths and ExcludePaths (an exclusion wins).
func (a *AspNetTrigger) matchesPath(path string) bool {
	for _, re := range a.exclude {
		if re.MatchString(path) {
			return false
		}
	}
	if len(a.include) == 0 {
		return true
	}
	for _, re := range a.include {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

func (a *AspNetTrigger) matchesStatus(code int) bool {
	for _, r := range a.StatusCodes {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}

// window counts occurrences in a sliding window: it keeps the times of the
// last n, and is full when all n lie within the window.
type window struct {
	times []time.Time
	next  int
	n     int
	span  time.Duration
}

func newWindow(n int, span time.Duration) *window {
	return &window{times: make([]time.Time, 0, min(n, 1024)), n: n, span: span}
}

// add records an occurrence at t and reports whether n occurrences now lie
// within the window ending at t.
func (w *window) add(t time.Time) bool {
	if len(w.times) < w.n {
		w.times = append(w.times, t)
		if len(w.times) < w.n {
			return false
		}
		w.next = 0
	} else {
		w.times[w.next] = t
		w.next = (w.next + 1) % w.n
	}
	oldest := w.times[w.next%len(w.times)]
	return !t.Before(oldest) && t.Sub(oldest) <= w.span
}

func (w *window) reset() {
	w.times = w.times[:0]
	w.next = 0
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && strings.ToLower(s[j]) < strings.ToLower(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
