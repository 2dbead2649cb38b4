package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
)

// The trigger types.
const (
	TriggerStartup               = "Startup"
	TriggerEventCounter          = "EventCounter"
	TriggerEventMeter            = "EventMeter"
	TriggerAspNetRequestCount    = "AspNetRequestCount"
	TriggerAspNetRequestDuration = "AspNetRequestDuration"
	TriggerAspNetResponseStatus  = "AspNetResponseStatus"
	// TriggerEventPipeEvent is clrdiag's: an event of any EventPipe
	// provider, optionally with given payload values.
	TriggerEventPipeEvent = "EventPipeEvent"
	// The shortcuts: EventCounter triggers on a System.Runtime counter
	// with dotnet-monitor's defaults and ranges (shortcuts below).
	TriggerCPUUsage              = "CPUUsage"
	TriggerGCHeapSize            = "GCHeapSize"
	TriggerThreadpoolQueueLength = "ThreadpoolQueueLength"
)

var triggerTypes = []string{TriggerStartup, TriggerEventCounter, TriggerEventMeter, TriggerAspNetRequestCount,
	TriggerAspNetRequestDuration, TriggerAspNetResponseStatus, TriggerEventPipeEvent,
	TriggerCPUUsage, TriggerGCHeapSize, TriggerThreadpoolQueueLength}

// shortcut is a trigger type that stands for an EventCounter trigger on
// one System.Runtime counter: dotnet-monitor's trigger shortcuts.
type shortcut struct {
	counter string
	// greaterThan is GreaterThan's default when neither threshold is
	// given; max bounds both thresholds (0: none).
	greaterThan float64
	max         float64
	unit        string
}

// shortcuts are the trigger shortcuts by type. The counters are
// EventCounters of System.Runtime, which every runtime from .NET Core 3.0
// publishes (on .NET 9 and later next to the System.Runtime Meter, whose
// instruments measure other things: dotnet.process.cpu.time is seconds of
// CPU, dotnet.gc.last_collection.heap.size one generation after a
// collection): the trigger reads the same counter everywhere.
var shortcuts = map[string]shortcut{
	TriggerCPUUsage:              {counter: "cpu-usage", greaterThan: 50, max: 100, unit: "percent"},
	TriggerGCHeapSize:            {counter: "gc-heap-size", greaterThan: 10, unit: "MB"},
	TriggerThreadpoolQueueLength: {counter: "threadpool-queue-length", greaterThan: 200, unit: "work items"},
}

// Trigger is what a rule watches for. Type says which; the matching field
// holds its settings.
type Trigger struct {
	Type    string
	Counter *CounterTrigger // EventCounter, EventMeter
	AspNet  *AspNetTrigger  // AspNetRequestCount, AspNetRequestDuration, AspNetResponseStatus
	Event   *EventTrigger   // EventPipeEvent
}

// DefaultSlidingWindow is the default SlidingWindowDuration of the
// threshold triggers, as dotnet-monitor's.
const DefaultSlidingWindow = time.Minute

// CounterTrigger fires when a counter's value stays beyond a threshold for
// a sliding window: every value published during Window is greater than
// GreaterThan and/or less than LessThan (both: inside the range).
type CounterTrigger struct {
	// Meter is true for EventMeter (a System.Diagnostics.Metrics
	// instrument), false for EventCounter.
	Meter bool
	// Provider is the EventSource (ProviderName) or Meter (MeterName);
	// Name the counter (CounterName) or instrument (InstrumentName).
	Provider, Name string
	GreaterThan    *float64
	LessThan       *float64
	Window         time.Duration
	// Percentile, for a histogram instrument, picks the published
	// percentile compared (50, 95 or 99 by default); nil compares the
	// value of other instruments.
	Percentile *int
}

// AspNetTrigger fires when enough ASP.NET Core requests of a kind happen in
// a sliding window: started (AspNetRequestCount), slower than Duration
// (AspNetRequestDuration; a request still running after Duration counts),
// or answered with one of StatusCodes (AspNetResponseStatus).
type AspNetTrigger struct {
	Type     string
	Count    int
	Window   time.Duration
	Duration time.Duration // AspNetRequestDuration
	// StatusCodes are inclusive ranges (a single code is lo == hi).
	StatusCodes [][2]int
	Include     []string // path patterns; nil: every path
	Exclude     []string
	include     []*regexp.Regexp
	exclude     []*regexp.Regexp
}

// EventTrigger fires when an event of Provider named EventName (or with
// EventID) arrives whose payload has the PayloadFilter values, Count times
// within Window (once, by default).
type EventTrigger struct {
	Provider  string
	EventName string
	EventID   int // -1: any
	// PayloadFilter maps payload field names to the value the field must
	// have, compared as text (numbers in their shortest decimal form,
	// booleans true/false).
	PayloadFilter map[string]string
	Keywords      uint64
	Level         eventpipe.Level
	Count         int
	Window        time.Duration
}

func readTrigger(s *Settings, d defaults) Trigger {
	t := Trigger{}
	typ := s.String("Type", true)
	for _, tt := range triggerTypes {
		if strings.EqualFold(tt, typ) {
			t.Type = tt
		}
	}
	if typ != "" && t.Type == "" {
		s.Errorf("Type", "unknown trigger type %q (known: %s)", typ, strings.Join(triggerTypes, ", "))
	}
	st := s.Section("Settings")
	window := func() time.Duration {
		def := DefaultSlidingWindow
		if d.window > 0 {
			def = d.window
		}
		return st.Duration("SlidingWindowDuration", def, time.Second, 24*time.Hour)
	}
	switch t.Type {
	case TriggerStartup:
	case TriggerCPUUsage, TriggerGCHeapSize, TriggerThreadpoolQueueLength:
		t.Counter = readShortcut(st, shortcuts[t.Type], window)
	case TriggerEventCounter, TriggerEventMeter:
		c := &CounterTrigger{Meter: t.Type == TriggerEventMeter}
		if c.Meter {
			c.Provider = st.String("MeterName", true)
			c.Name = st.String("InstrumentName", true)
		} else {
			c.Provider = st.String("ProviderName", true)
			c.Name = st.String("CounterName", true)
		}
		c.GreaterThan = st.Float("GreaterThan")
		c.LessThan = st.Float("LessThan")
		c.Window = window()
		if c.Meter {
			if st.Has("HistogramPercentile") {
				p := st.Int("HistogramPercentile", 0, 0, 100)
				c.Percentile = &p
			}
		}
		switch {
		case c.GreaterThan == nil && c.LessThan == nil && (st.Has("GreaterThan") || st.Has("LessThan")):
			// already reported as not a number
		case c.GreaterThan == nil && c.LessThan == nil:
			st.Errorf("GreaterThan", "give GreaterThan or LessThan (or both, for a range)")
		case c.GreaterThan != nil && c.LessThan != nil && *c.GreaterThan >= *c.LessThan:
			st.Errorf("LessThan", "%v is not above GreaterThan %v: no value can be in that range", *c.LessThan, *c.GreaterThan)
		}
		t.Counter = c
	case TriggerAspNetRequestCount, TriggerAspNetRequestDuration, TriggerAspNetResponseStatus:
		a := &AspNetTrigger{Type: t.Type}
		a.Window = window()
		if t.Type == TriggerAspNetResponseStatus {
			// dotnet-monitor names the threshold ResponseCount (its
			// documentation table says RequestCount): take either.
			if st.Has("ResponseCount") && st.Has("RequestCount") {
				st.Errorf("RequestCount", "give ResponseCount or RequestCount, not both")
			}
			key := "ResponseCount"
			if st.Has("RequestCount") {
				key = "RequestCount"
			}
			a.Count = st.Int(key, d.responseCount, 1, 1<<30)
			if a.Count == 0 {
				st.Errorf("ResponseCount", "required: how many matching responses within SlidingWindowDuration fire the trigger")
			}
			codes := st.Strings("StatusCodes")
			if len(codes) == 0 && !st.Has("StatusCodes") {
				st.Errorf("StatusCodes", "required: the status codes to count, e.g. [\"500-599\"]")
			}
			for i, c := range codes {
				r, err := parseStatusRange(c)
				if err != nil {
					st.Errorf(fmt.Sprintf("StatusCodes[%d]", i), "%v", err)
					continue
				}
				a.StatusCodes = append(a.StatusCodes, r)
			}
		} else {
			a.Count = st.Int("RequestCount", d.requestCount, 1, 1<<30)
			if a.Count == 0 {
				st.Errorf("RequestCount", "required: how many requests within SlidingWindowDuration fire the trigger")
			}
		}
		if t.Type == TriggerAspNetRequestDuration {
			a.Duration = st.Duration("RequestDuration", 5*time.Second, 0, time.Hour)
		}
		a.Include = st.Strings("IncludePaths")
		a.Exclude = st.Strings("ExcludePaths")
		for i, p := range append(append([]string(nil), a.Include...), a.Exclude...) {
			key := fmt.Sprintf("IncludePaths[%d]", i)
			if i >= len(a.Include) {
				key = fmt.Sprintf("ExcludePaths[%d]", i-len(a.Include))
			}
			if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**") && !strings.HasPrefix(p, "*") {
				st.Errorf(key, "path pattern %q must start with / (or ** to match any leading segments)", p)
			}
		}
		for _, p := range a.Include {
			a.include = append(a.include, globRegexp(p))
		}
		for _, p := range a.Exclude {
			a.exclude = append(a.exclude, globRegexp(p))
		}
		t.AspNet = a
	case TriggerEventPipeEvent:
		e := &EventTrigger{EventID: -1}
		e.Provider = st.String("ProviderName", true)
		e.EventName = st.String("EventName", false)
		e.EventID = st.Int("EventId", -1, 0, 65535)
		if e.EventName == "" && e.EventID < 0 {
			st.Errorf("EventName", "give EventName (or EventId) of the event to watch for")
		}
		e.PayloadFilter = st.Map("PayloadFilter")
		e.Keywords = ^uint64(0)
		if kw := st.String("Keywords", false); kw != "" {
			k, err := parseKeywords(kw)
			if err != nil {
				st.Errorf("Keywords", "%v", err)
			}
			e.Keywords = k
		}
		e.Level = eventpipe.LevelVerbose
		if lv := st.String("EventLevel", false); lv != "" {
			l, err := eventpipe.ParseLevel(lv)
			if err != nil {
				st.Errorf("EventLevel", "%v", err)
			}
			e.Level = l
		}
		e.Count = st.Int("Count", 1, 1, 1<<20)
		e.Window = st.Duration("SlidingWindowDuration", DefaultSlidingWindow, time.Second, 24*time.Hour)
		t.Event = e
	}
	if t.Type != "" {
		st.Done() // an unknown type's settings cannot be checked
	}
	s.Done()
	return t
}

// readShortcut reads the settings of a trigger shortcut: GreaterThan
// (its default when LessThan is not given either), LessThan and
// SlidingWindowDuration, the thresholds within the counter's range.
func readShortcut(st *Settings, sc shortcut, window func() time.Duration) *CounterTrigger {
	c := &CounterTrigger{Provider: "System.Runtime", Name: sc.counter}
	c.GreaterThan = st.Float("GreaterThan")
	c.LessThan = st.Float("LessThan")
	c.Window = window()
	if c.GreaterThan == nil && c.LessThan == nil && !st.Has("GreaterThan") && !st.Has("LessThan") {
		g := sc.greaterThan
		c.GreaterThan = &g
	}
	for _, th := range []struct {
		key string
		v   *float64
	}{{"GreaterThan", c.GreaterThan}, {"LessThan", c.LessThan}} {
		key, v := th.key, th.v
		switch {
		case v == nil:
		case *v < 0:
			st.Errorf(key, "%v is below 0: give a threshold in %s from 0", *v, sc.unit)
		case sc.max > 0 && *v > sc.max:
			st.Errorf(key, "%v is above %v: give a threshold in %s from 0 to %v", *v, sc.max, sc.unit, sc.max)
		}
	}
	if c.GreaterThan != nil && c.LessThan != nil && *c.GreaterThan >= *c.LessThan {
		st.Errorf("LessThan", "%v is not above GreaterThan %v: no value can be in that range", *c.LessThan, *c.GreaterThan)
	}
	return c
}

func parseKeywords(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	base := 10
	if strings.HasPrefix(strings.ToLower(s), "0x") {
		s, base = s[2:], 16
	}
	k, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a keyword mask: give a number or 0x followed by hexadecimal digits", s)
	}
	return k, nil
}

// parseStatusRange reads "500" or "400-499".
func parseStatusRange(s string) ([2]int, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b := a
	var err2 error
	if isRange {
		b, err2 = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
		return [2]int{}, fmt.Errorf("%q is not a status code (100-599) or a range of them such as 500-599", s)
	}
	return [2]int{a, b}, nil
}

// Describe says what the trigger watches for.
func (t Trigger) Describe() string {
	switch {
	case t.Counter != nil:
		c := t.Counter
		what := c.Provider + "/" + c.Name
		if c.Percentile != nil {
			what += fmt.Sprintf(" p%d", *c.Percentile)
		}
		var cond string
		switch {
		case c.GreaterThan != nil && c.LessThan != nil:
			cond = fmt.Sprintf("in (%v, %v)", *c.GreaterThan, *c.LessThan)
		case c.GreaterThan != nil:
			cond = fmt.Sprintf("> %v", *c.GreaterThan)
		default:
			cond = fmt.Sprintf("< %v", *c.LessThan)
		}
		return fmt.Sprintf("%s %s %s for %s", t.Type, what, cond, FormatDuration(c.Window))
	case t.AspNet != nil:
		a := t.AspNet
		switch a.Type {
		case TriggerAspNetRequestDuration:
			return fmt.Sprintf("%s %d requests slower than %s within %s", a.Type, a.Count, FormatDuration(a.Duration), FormatDuration(a.Window))
		case TriggerAspNetResponseStatus:
			var cs []string
			for _, r := range a.StatusCodes {
				if r[0] == r[1] {
					cs = append(cs, strconv.Itoa(r[0]))
				} else {
					cs = append(cs, fmt.Sprintf("%d-%d", r[0], r[1]))
				}
			}
			return fmt.Sprintf("%s %d responses %s within %s", a.Type, a.Count, strings.Join(cs, ","), FormatDuration(a.Window))
		}
		return fmt.Sprintf("%s %d requests within %s", a.Type, a.Count, FormatDuration(a.Window))
	case t.Event != nil:
		e := t.Event
		name := e.EventName
		if name == "" {
			name = "#" + strconv.Itoa(e.EventID)
		}
		s := fmt.Sprintf("%s %s/%s", t.Type, e.Provider, name)
		if len(e.PayloadFilter) > 0 {
			s += fmt.Sprintf(" with %d payload values", len(e.PayloadFilter))
		}
		if e.Count > 1 {
			s += fmt.Sprintf(" x%d within %s", e.Count, FormatDuration(e.Window))
		}
		return s
	}
	return t.Type
}

// MatchPath reports whether an ASP.NET request path matches a pattern of
// IncludePaths/ExcludePaths: "*" matches any run of characters other than
// '/', "**/" any number of whole segments (none included), a trailing "**"
// anything, and any other character itself (paths are compared without
// regard to case, as ASP.NET Core routes them).
func MatchPath(pattern, path string) bool {
	return globRegexp(pattern).MatchString(path)
}

// globRegexp compiles a path pattern to a regular expression, which
// matches in time linear in the path (request paths come from clients).
func globRegexp(p string) *regexp.Regexp {
	p = strings.ToValidUTF8(p, "\uFFFD")
	var b strings.Builder
	b.WriteString("(?is)^")
	for len(p) > 0 {
		switch {
		case strings.HasPrefix(p, "**/"):
			b.WriteString("(?:[^/]*/)*")
			p = p[3:]
		case strings.HasPrefix(p, "**"):
			b.WriteString(".*")
			p = p[2:]
		case p[0] == '*':
			b.WriteString("[^/]*")
			p = p[1:]
		default:
			i := strings.IndexByte(p, '*')
			if i < 0 {
				i = len(p)
			}
			b.WriteString(regexp.QuoteMeta(p[:i]))
			p = p[i:]
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// filter is the trigger's provider, event name and payload values (the id,
// when a name is given too, is checked besides).
func (t *EventTrigger) filter() *eventpipe.EventFilter {
	f := &eventpipe.EventFilter{Provider: t.Provider, Event: t.EventName, Payload: t.PayloadFilter}
	if f.Event == "" && t.EventID >= 0 {
		f.Event = strconv.Itoa(t.EventID)
	}
	return f
}
