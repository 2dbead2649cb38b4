package counters

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

// WarningKind says what a Warning is about.
type WarningKind uint8

// The kinds of warnings.
const (
	// WarnError is MetricsEventSource's Error event: the Metrics session
	// failed (its message says why).
	WarnError WarningKind = iota + 1
	// WarnTimeSeriesLimit: MaxTimeSeries was reached; new tag combinations
	// are not tracked.
	WarnTimeSeriesLimit
	// WarnHistogramLimit: MaxHistograms was reached; new histogram series
	// are not tracked.
	WarnHistogramLimit
	// WarnCallbackError: an observable instrument's callback threw.
	WarnCallbackError
	// WarnMultipleSessions: another tool holds the target's only Metrics
	// session (runtimes before .NET 8).
	WarnMultipleSessions
	// WarnSharedSessionMismatch: the shared Metrics session (.NET 8+) runs
	// with other settings than this client asked for.
	WarnSharedSessionMismatch
	// WarnBadEvent: a counters event could not be decoded; it was skipped.
	WarnBadEvent
	// WarnIntervalChanged: the runtime publishes the EventCounters at
	// another interval only (.NET Core 3.x keeps one interval for all
	// sessions, and gives the first session of a process 1 s); the values
	// are reported at that interval.
	WarnIntervalChanged
)

var warningNames = [...]string{"", "error", "time-series limit", "histogram limit", "callback error", "multiple sessions", "shared session mismatch", "bad event", "interval changed"}

func (k WarningKind) String() string {
	if int(k) < len(warningNames) && k != 0 {
		return warningNames[k]
	}
	return "WarningKind(" + strconv.Itoa(int(k)) + ")"
}

// Warning is something the user should know about a session that does not
// end it: limits reached, errors reported by the target, undecodable
// events. A Decoder reports each distinct warning once.
type Warning struct {
	Time    time.Time
	Kind    WarningKind
	Message string
}

func (w *Warning) String() string { return w.Kind.String() + ": " + w.Message }

// Update is one item a session produces: a Sample or a Warning (exactly one
// is set).
type Update struct {
	Sample  *Sample
	Warning *Warning
}

// MetricsEventSource event ids (nettrace-format.md §9).
const (
	evMessage               = 1
	evCollectionStart       = 2
	evCollectionStop        = 3
	evCounterRate           = 4
	evGauge                 = 5
	evHistogram             = 6
	evBeginInstrument       = 7
	evEndInstrument         = 8
	evError                 = 9
	evInitialEnumeration    = 10
	evInstrumentPublished   = 11
	evTimeSeriesLimit       = 12
	evHistogramLimit        = 13
	evCallbackError         = 14
	evMultipleSessions      = 15
	evUpDownCounterRate     = 16
	evMultipleSessionsSetup = 17
)

// Decoder turns the events of a counters session into Updates. It keeps
// what it learnt from earlier events (which providers publish through a
// Meter, which warnings were given), so one Decoder reads one session.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	plan   *Plan
	meters map[string]bool // lower-case names of providers seen as Meters
	warned map[string]bool
	// instruments holds the Meter and instrument tags announced by
	// BeginInstrumentReporting, by instrument id (v2 events) and by
	// meter and instrument name.
	instruments map[instrumentKey]instrumentInfo
	// payloads counts the counter payloads of this session (EventCounters
	// of a planned provider at any interval, Metrics events of the
	// session): a session whose count stops growing has stalled.
	payloads uint64
	// adopted is another session's EventCounters interval taken because
	// the runtime publishes no other (.NET Core 3.x); foreignSince is the
	// time of the first payload at a foreign interval since the last one
	// at the planned interval.
	adopted      time.Duration
	foreignSince time.Time
	// The Metrics session's latest collection (CollectionStart): when it
	// was written, the real time since the one before it (or its own
	// interval for the first), and its period.
	collectTime    time.Time
	collectElapsed time.Duration
	collectPeriod  time.Duration
}

// instrumentKey names an instrument: by the id of version 2 events when
// it is set, else by meter and instrument name.
type instrumentKey struct {
	id          int64
	meter, name string
}

// instrumentInfo is what BeginInstrumentReporting says of an instrument:
// its Meter and instrument tags and its type ("ObservableCounter`1").
type instrumentInfo struct {
	meter, instrument []Tag
	typ               string
}

// maxInstruments bounds the instruments a Decoder remembers; the target
// tracks at most MaxTimeSeries series anyway.
const maxInstruments = 10000

// NewDecoder returns a decoder for the events of a session planned by p.
func NewDecoder(p *Plan) *Decoder {
	return &Decoder{plan: p, meters: map[string]bool{}, warned: map[string]bool{}, instruments: map[instrumentKey]instrumentInfo{}}
}

// Decode looks at one event and calls fn for the samples and warnings it
// carries (none for events that are not about counters or belong to
// another session). Events that do not decode become a WarnBadEvent
// warning, never an error: Decode returns only fn's error.
func (d *Decoder) Decode(ev *nettrace.Event, fn func(Update) error) error {
	md := ev.Metadata
	if md == nil {
		return nil
	}
	if md.ProviderName == MetricsProvider {
		return d.metrics(ev, fn)
	}
	if md.EventName == "EventCounters" {
		return d.eventCounters(ev, fn)
	}
	return nil
}

func (d *Decoder) warn(ev *nettrace.Event, kind WarningKind, msg string, fn func(Update) error) error {
	key := kind.String() + "\x00" + msg
	if d.warned[key] {
		return nil
	}
	if len(d.warned) < 1000 {
		d.warned[key] = true
	}
	return fn(Update{Warning: &Warning{Time: ev.Time(), Kind: kind, Message: msg}})
}

func (d *Decoder) badEvent(ev *nettrace.Event, err error, fn func(Update) error) error {
	return d.warn(ev, WarnBadEvent, fmt.Sprintf("%s event %d (%s) skipped: %v", ev.Metadata.ProviderName, ev.Metadata.EventID, ev.Metadata.EventName, err), fn)
}

// eventCounters decodes the self-described "EventCounters" event of any
// EventSource: one unnamed object holding the Payload object.
func (d *Decoder) eventCounters(ev *nettrace.Event, fn func(Update) error) error {
	provider := ev.Metadata.ProviderName
	sp := d.plan.spec(provider)
	if sp == nil || (!sp.EventCountersOnly && d.meters[strings.ToLower(provider)]) {
		return nil
	}
	o, err := ev.Fields()
	if err != nil {
		return d.badEvent(ev, err, fn)
	}
	p, ok := counterPayload(o)
	if !ok {
		return d.badEvent(ev, fmt.Errorf("no Payload object"), fn)
	}
	name, _ := str(p, "Name")
	if name == "" {
		return d.badEvent(ev, fmt.Errorf("counter without a Name"), fn)
	}
	d.payloads++
	interval := d.plan.Interval
	if series, ok := str(p, "Series"); ok {
		if ms, ok := strings.CutPrefix(series, "Interval="); ok {
			if n, err := strconv.ParseInt(ms, 10, 64); err == nil && n > 0 {
				iv := time.Duration(n) * time.Millisecond
				use, err := d.interval(ev, iv, fn)
				if err != nil || !use {
					return err
				}
				interval = iv
			}
		}
	}
	if !sp.Wants(name) {
		return nil
	}
	s := &Sample{Time: ev.Time(), Provider: provider, Name: name, Interval: interval}
	// IntervalSec is the time the runtime measured since its previous
	// payload of the counter: what an increment covers.
	if sec, ok := num(p, "IntervalSec"); ok && sec > 0 && sec < maxElapsed.Seconds() {
		s.Elapsed = time.Duration(sec * float64(time.Second))
	}
	s.DisplayName, _ = str(p, "DisplayName")
	s.Unit, _ = str(p, "DisplayUnits")
	typ, _ := str(p, "CounterType")
	switch typ {
	case "Sum":
		// DisplayRateTimeScale (1 s, or 1 min for the GC counts of .NET
		// Core 3.x) is only a display hint: the increment covers Elapsed.
		s.Kind = KindRate
		if s.Value, ok = num(p, "Increment"); !ok {
			return d.badEvent(ev, fmt.Errorf("counter %s of type Sum has no Increment", name), fn)
		}
	case "Mean", "":
		s.Kind = KindMean
		if s.Value, ok = num(p, "Mean"); !ok {
			return d.badEvent(ev, fmt.Errorf("counter %s of type Mean has no Mean", name), fn)
		}
		c, _ := num(p, "Count")
		if c < 0 || c > math.MaxInt64/2 || c != math.Trunc(c) {
			return d.badEvent(ev, fmt.Errorf("counter %s: Count %v", name, c), fn)
		}
		s.Count = int64(c)
		s.Min, _ = num(p, "Min")
		s.Max, _ = num(p, "Max")
	default:
		return d.badEvent(ev, fmt.Errorf("counter %s has unknown CounterType %q", name, typ), fn)
	}
	return fn(Update{Sample: s})
}

// interval decides whether an EventCounters payload published at iv is
// this session's. A runtime that keeps one interval per EventSource for
// every session (.NET Core 3.x: the shortest asked for wins, and the first
// session of a process gets 1 s whatever it asks for, as seen on 3.1.2)
// may publish only another interval; when payloads have come at a foreign
// interval for longer than the planned interval (and half the foreign one)
// with none at the planned interval, that interval is adopted with a
// warning. Runtimes that publish each session's interval (.NET 5 and
// later) always send a planned-interval payload within that time.
func (d *Decoder) interval(ev *nettrace.Event, iv time.Duration, fn func(Update) error) (bool, error) {
	switch {
	case iv == d.plan.Interval:
		d.foreignSince, d.adopted = time.Time{}, 0
		return true, nil
	case iv == d.adopted:
		return true, nil
	}
	t := ev.Time()
	if d.foreignSince.IsZero() || t.Before(d.foreignSince) {
		d.foreignSince = t
	}
	if t.Sub(d.foreignSince) < d.plan.Interval+iv/2 {
		return false, nil // published for another session's interval
	}
	d.adopted = iv
	return true, d.warn(ev, WarnIntervalChanged, fmt.Sprintf("the runtime publishes the EventCounters every %v, not every %v as asked; values are reported every %v (a .NET Core 3.x runtime keeps one interval for all sessions: the shortest one asked for, and 1s for the first session of a process)", iv, d.plan.Interval, iv), fn)
}

// counterPayload finds the Payload object: nested in the unnamed top-level
// object as EventSource writes it, or at the top level.
func counterPayload(o nettrace.Object) (nettrace.Object, bool) {
	if v, ok := o.Get("Payload"); ok {
		p, ok := v.(nettrace.Object)
		return p, ok
	}
	for _, f := range o {
		if inner, ok := f.Value.(nettrace.Object); ok {
			if v, ok := inner.Get("Payload"); ok {
				p, ok := v.(nettrace.Object)
				return p, ok
			}
		}
	}
	return nil, false
}

// metrics decodes the events of MetricsEventSource.
func (d *Decoder) metrics(ev *nettrace.Event, fn func(Update) error) error {
	id := ev.Metadata.EventID
	switch id {
	case evMessage, evInitialEnumeration, evInstrumentPublished:
		return nil
	}
	if d.plan.SessionID == "" {
		return nil // no Meter asked for
	}
	o, err := ev.Fields()
	if err != nil {
		return d.badEvent(ev, err, fn)
	}
	switch id {
	case evMultipleSessions:
		running, _ := str(o, "runningSessionId")
		if running == d.plan.SessionID {
			return nil
		}
		if d.plan.SessionID == SharedSessionID {
			// .NET 8 and later: the running session is a private one
			// (a tool that does not ask for the shared session).
			return d.warn(ev, WarnMultipleSessions, fmt.Sprintf("another tool holds a private Metrics session (%s) in the target: a .NET 8+ runtime shares its Metrics session only among tools that ask for the shared one, so no Meter values will arrive until that tool stops", running), fn)
		}
		return d.warn(ev, WarnMultipleSessions, fmt.Sprintf("another tool's Metrics session (%s) is running in the target and a runtime before .NET 8 allows only one: no Meter values will arrive until it stops", running), fn)
	case evMultipleSessionsSetup:
		client, _ := str(o, "clientId")
		if client != d.plan.ClientID {
			return nil
		}
		// expected* are the running shared session's settings, actual*
		// what this client asked for.
		var diffs []string
		for _, k := range []string{"RefreshInterval", "MaxHistograms", "MaxTimeSeries"} {
			running, _ := str(o, "expected"+k)
			asked, _ := str(o, "actual"+k)
			if running != asked {
				diffs = append(diffs, fmt.Sprintf("%s %s (asked for %s)", k, running, asked))
			}
		}
		msg := "the target's shared Metrics session (one per process on .NET 8+, shared with dotnet-counters, dotnet-monitor and clrdiag monitor) runs with other settings"
		if len(diffs) > 0 {
			msg += ": " + strings.Join(diffs, ", ")
		}
		return d.warn(ev, WarnSharedSessionMismatch, msg+"; it did not take this session's meters, so only the meters it already reads arrive, at its settings. "+
			"Ask for the same settings to share it (dotnet-counters' defaults: a 1 s refresh interval, 10 histograms, 1000 time series)", fn)
	}
	if sid, ok := str(o, "sessionId"); !ok || sid != d.plan.SessionID {
		return nil // another session's event
	}
	d.payloads++
	switch id {
	case evCollectionStart:
		d.collection(ev, o)
		return nil
	case evCollectionStop:
		return nil
	case evError:
		msg, _ := str(o, "errorMessage")
		return d.warn(ev, WarnError, "the target's MetricsEventSource reported an error: "+firstLine(msg), fn)
	case evTimeSeriesLimit:
		return d.warn(ev, WarnTimeSeriesLimit, "the time-series limit (MaxTimeSeries) was reached: new tag combinations are not shown", fn)
	case evHistogramLimit:
		return d.warn(ev, WarnHistogramLimit, "the histogram limit (MaxHistograms) was reached: new histogram series are not shown", fn)
	case evCallbackError:
		msg, _ := str(o, "errorMessage")
		return d.warn(ev, WarnCallbackError, "an observable instrument's callback failed: "+firstLine(msg), fn)
	case evEndInstrument:
		meter, _ := str(o, "meterName")
		name, _ := str(o, "instrumentName")
		for _, k := range d.instrumentKeys(o, meter, name) {
			delete(d.instruments, k)
		}
		return nil
	case evBeginInstrument, evCounterRate, evGauge, evHistogram, evUpDownCounterRate:
	default:
		return nil
	}
	meter, _ := str(o, "meterName")
	sp := d.plan.spec(meter)
	if sp == nil || sp.EventCountersOnly {
		return nil
	}
	d.meters[strings.ToLower(meter)] = true
	name, _ := str(o, "instrumentName")
	if id == evBeginInstrument {
		d.beginInstrument(o, meter, name)
		return nil
	}
	if name == "" {
		return d.badEvent(ev, fmt.Errorf("no instrumentName"), fn)
	}
	if !sp.Wants(name) {
		return nil
	}
	s := &Sample{Time: ev.Time(), Provider: meter, Name: name, Interval: d.plan.MetricsInterval, Meter: true}
	if !d.collectTime.IsZero() {
		// The samples of one collection share its time, so that series
		// of one instrument (its tags) can be added up.
		s.Time, s.Elapsed = d.collectTime, d.collectElapsed
		if d.collectPeriod > 0 {
			s.Interval = d.collectPeriod
		}
	}
	var typ string
	for _, k := range d.instrumentKeys(o, meter, name) {
		if it, ok := d.instruments[k]; ok {
			s.MeterTags, s.InstrumentTags, typ = it.meter, it.instrument, it.typ
			break
		}
	}
	s.Unit, _ = str(o, "unit")
	tags, _ := str(o, "tags")
	s.Tags = ParseTags(tags)
	if id == evCounterRate && upDown(meter, name, typ) {
		id = evUpDownCounterRate // a level the runtime publishes as a counter
	}
	switch id {
	case evCounterRate:
		s.Kind = KindRate
		s.Value, s.NoValue, err = metricValue(o, "rate")
		if _, ok := o.Get("value"); ok && err == nil {
			// The first collection of an observable counter has a total
			// but no rate yet.
			var none bool
			if s.Total, none, err = metricValue(o, "value"); err == nil && !none {
				s.HasTotal = true
			}
		}
	case evUpDownCounterRate:
		s.Kind = KindUpDown
		if s.Rate, s.NoValue, err = metricValue(o, "rate"); err == nil {
			if _, ok := o.Get("value"); ok {
				s.Value, s.NoValue, err = metricValue(o, "value")
			}
		}
	case evGauge:
		s.Kind = KindGauge
		s.Value, s.NoValue, err = metricValue(o, "lastValue")
	case evHistogram:
		s.Kind = KindHistogram
		q, _ := str(o, "quantiles")
		s.Quantiles = ParseQuantiles(q)
		if c, ok := num(o, "count"); ok {
			if c < 0 || c != math.Trunc(c) {
				err = fmt.Errorf("histogram count %v", c)
			}
			s.Count = int64(c)
		}
		s.Sum, _ = num(o, "sum")
		s.NoValue = len(s.Quantiles) == 0
	}
	if err != nil {
		return d.badEvent(ev, fmt.Errorf("instrument %s/%s: %w", meter, name, err), fn)
	}
	return fn(Update{Sample: s})
}

// beginInstrument remembers the type and tags of an instrument that
// starts reporting (BeginInstrumentReporting; v0 carries no tags).
func (d *Decoder) beginInstrument(o nettrace.Object, meter, name string) {
	mt, _ := str(o, "meterTags")
	it, _ := str(o, "instrumentTags")
	typ, _ := str(o, "instrumentType")
	tags := instrumentInfo{meter: ParseTags(mt), instrument: ParseTags(it), typ: typ}
	for _, k := range d.instrumentKeys(o, meter, name) {
		if _, known := d.instruments[k]; known || len(d.instruments) < maxInstruments {
			d.instruments[k] = tags
		}
	}
}

// instrumentKeys are the keys an instrument's tags are kept under: its id
// (version 2 events, ids start at 1) first, then its names.
func (d *Decoder) instrumentKeys(o nettrace.Object, meter, name string) []instrumentKey {
	keys := make([]instrumentKey, 0, 2)
	if id, ok := num(o, "instrumentId"); ok && id > 0 && id == math.Trunc(id) && id < 1<<53 {
		keys = append(keys, instrumentKey{id: int64(id)})
	}
	return append(keys, instrumentKey{meter: meter, name: name})
}

// maxElapsed bounds the time a sample may cover; a longer one is damage.
const maxElapsed = 24 * time.Hour

// collection records a CollectionStart of the session: the samples that
// follow are of this collection, and their increases cover the time since
// the previous one. The runtime's own interval (intervalEndTime -
// intervalStartTime) is its schedule, not what passed: a process stopped
// for 6 s reports a 1 s interval for a collection that covers 7 s (and 7 s
// for the next one, which covers 1 s), so the time between the events is
// used once there are two.
func (d *Decoder) collection(ev *nettrace.Event, o nettrace.Object) {
	t := ev.Time()
	var period time.Duration
	start, ok1 := o.Get("intervalStartTime")
	end, ok2 := o.Get("intervalEndTime")
	if st, ok := start.(time.Time); ok1 && ok2 && ok {
		if et, ok := end.(time.Time); ok && et.After(st) && et.Sub(st) < maxElapsed {
			period = et.Sub(st)
		}
	}
	elapsed := period
	if !d.collectTime.IsZero() && t.After(d.collectTime) && t.Sub(d.collectTime) < maxElapsed {
		elapsed = t.Sub(d.collectTime)
	}
	d.collectTime, d.collectElapsed, d.collectPeriod = t, elapsed, period
}

// upDown tells whether an instrument published as a counter is a level:
// an up-down counter by its type (as BeginInstrumentReporting gives it),
// or one of the instruments of the runtime's System.Runtime Meter that
// the OpenTelemetry semantic conventions define as UpDownCounters but
// .NET 9 and 10 create as ObservableCounters (levels that go down, which a
// rate would misrepresent).
func upDown(meter, name, typ string) bool {
	if strings.Contains(typ, "UpDownCounter") {
		return true
	}
	if meter != DefaultProvider {
		return false
	}
	switch name {
	case "dotnet.thread_pool.thread.count", "dotnet.thread_pool.queue.length":
		return true
	}
	return false
}

// metricValue parses a value MetricsEventSource sends as invariant-culture
// text; empty means no measurement.
func metricValue(o nettrace.Object, field string) (v float64, none bool, err error) {
	text, ok := str(o, field)
	if !ok {
		if x, ok := num(o, field); ok {
			return x, false, nil
		}
		return 0, true, fmt.Errorf("no %s field", field)
	}
	if text == "" {
		return 0, true, nil
	}
	v, err = parseInvariant(text)
	return v, false, err
}

func parseInvariant(s string) (float64, error) {
	switch s {
	case "∞", "Infinity":
		return math.Inf(1), nil
	case "-∞", "-Infinity":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", s)
	}
	return v, nil
}

func str(o nettrace.Object, name string) (string, bool) {
	v, ok := o.Get(name)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func num(o nettrace.Object, name string) (float64, bool) {
	v, ok := o.Get(name)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint8:
		return float64(x), true
	case int16:
		return float64(x), true
	case uint16:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case string:
		f, err := parseInvariant(x)
		return f, err == nil
	}
	return 0, false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " ..."
	}
	return s
}
