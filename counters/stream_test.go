package counters

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Test streams are built the way the runtime writes them: MetricsEventSource
// events are manifest-based EventSource events whose parameters (nearly all
// strings) become the metadata fields; EventCounters are self-described
// events holding one unnamed object with a Payload object inside.

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func sf(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeString} }

var (
	valueHead   = []nettrace.Field{sf("sessionId"), sf("meterName"), sf("meterVersion"), sf("instrumentName"), sf("unit"), sf("tags")}
	idField     = nettrace.Field{Name: "instrumentId", Type: nettrace.TypeInt32}
	beginFields = []nettrace.Field{sf("sessionId"), sf("meterName"), sf("meterVersion"), sf("instrumentName"), sf("instrumentType"), sf("unit"), sf("description")}
	beginV1     = cat(beginFields, sf("instrumentTags"), sf("meterTags"), sf("meterScopeHash"))
	dateRange   = []nettrace.Field{sf("sessionId"), {Name: "intervalStartTime", Type: nettrace.TypeDateTime}, {Name: "intervalEndTime", Type: nettrace.TypeDateTime}}
	histV1      = cat(valueHead, sf("quantiles"), nettrace.Field{Name: "count", Type: nettrace.TypeInt32}, nettrace.Field{Name: "sum", Type: nettrace.TypeDouble})
)

func cat(a []nettrace.Field, more ...nettrace.Field) []nettrace.Field {
	return append(append([]nettrace.Field(nil), a...), more...)
}

// metricsSig is the payload layout of MetricsEventSource event id at a
// version (nettrace-format.md §9).
type metricsSig struct {
	id, version uint32
	name        string
	fields      []nettrace.Field
}

var metricsSigs = []metricsSig{
	{1, 0, "Message", []nettrace.Field{sf("Message")}},
	{2, 0, "CollectionStart", dateRange},
	{3, 0, "CollectionStop", dateRange},
	{4, 0, "CounterRateValuePublished", cat(valueHead, sf("rate"))},
	{4, 1, "CounterRateValuePublished", cat(valueHead, sf("rate"), sf("value"))},
	{4, 2, "CounterRateValuePublished", cat(valueHead, sf("rate"), sf("value"), idField)},
	{5, 0, "GaugeValuePublished", cat(valueHead, sf("lastValue"))},
	{5, 2, "GaugeValuePublished", cat(valueHead, sf("lastValue"), idField)},
	{6, 0, "HistogramValuePublished", cat(valueHead, sf("quantiles"))},
	{6, 1, "HistogramValuePublished", histV1},
	{6, 2, "HistogramValuePublished", cat(histV1, idField)},
	{7, 0, "BeginInstrumentReporting", beginFields},
	{7, 1, "BeginInstrumentReporting", beginV1},
	{7, 2, "BeginInstrumentReporting", cat(beginV1, idField, sf("telemetrySchemaUrl"))},
	{8, 0, "EndInstrumentReporting", beginFields},
	{8, 1, "EndInstrumentReporting", beginV1},
	{8, 2, "EndInstrumentReporting", cat(beginV1, idField)},
	{9, 0, "Error", []nettrace.Field{sf("sessionId"), sf("errorMessage")}},
	{10, 0, "InitialInstrumentEnumerationComplete", []nettrace.Field{sf("sessionId")}},
	{11, 0, "InstrumentPublished", beginFields},
	{12, 0, "TimeSeriesLimitReached", []nettrace.Field{sf("sessionId")}},
	{13, 0, "HistogramLimitReached", []nettrace.Field{sf("sessionId")}},
	{14, 0, "ObservableInstrumentCallbackError", []nettrace.Field{sf("sessionId"), sf("errorMessage")}},
	{15, 0, "MultipleSessionsNotSupportedError", []nettrace.Field{sf("runningSessionId")}},
	{16, 1, "UpDownCounterRateValuePublished", cat(valueHead, sf("rate"), sf("value"))},
	{16, 2, "UpDownCounterRateValuePublished", cat(valueHead, sf("rate"), sf("value"), idField)},
	{17, 0, "MultipleSessionsConfiguredIncorrectlyError", []nettrace.Field{sf("clientId"),
		sf("expectedMaxHistograms"), sf("actualMaxHistograms"), sf("expectedMaxTimeSeries"), sf("actualMaxTimeSeries"),
		sf("expectedRefreshInterval"), sf("actualRefreshInterval")}},
}

// counterFields is the EventCounters payload layout of an EventCounter
// (Mean) and of an IncrementingEventCounter (Sum), in reflection order.
var (
	meanFields = []nettrace.Field{sf("Name"), sf("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble},
		{Name: "StandardDeviation", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
		{Name: "Min", Type: nettrace.TypeDouble}, {Name: "Max", Type: nettrace.TypeDouble},
		{Name: "IntervalSec", Type: nettrace.TypeSingle}, sf("Series"), sf("CounterType"), sf("Metadata"), sf("DisplayUnits")}
	sumFields = []nettrace.Field{sf("Name"), sf("DisplayName"), sf("DisplayRateTimeScale"),
		{Name: "Increment", Type: nettrace.TypeDouble}, {Name: "IntervalSec", Type: nettrace.TypeSingle},
		sf("Metadata"), sf("Series"), sf("CounterType"), sf("DisplayUnits")}
)

// stream builds a nettrace stream event by event.
type stream struct {
	t      testing.TB
	buf    bytes.Buffer
	w      *nettrace.Writer
	mds    map[string]*nettrace.Metadata
	ticks  int64
	seq    uint32
	nextID uint32
}

func newStream(t testing.TB) *stream {
	s := &stream{t: t, mds: map[string]*nettrace.Metadata{}}
	w, err := nettrace.NewWriter(&s.buf, nettrace.WriterConfig{ProcessID: 77, ProcessorCount: 2, SyncTimeUTC: t0})
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	return s
}

func (s *stream) metadata(provider string, id, version uint32, name string, fields []nettrace.Field) *nettrace.Metadata {
	key := fmt.Sprint(provider, name, id, version, fields)
	md := s.mds[key]
	if md == nil {
		s.nextID++
		md = &nettrace.Metadata{ID: s.nextID, ProviderName: provider, EventID: id, EventName: name, Version: version, Level: 4, Fields: fields}
		if err := s.w.AddMetadata(md); err != nil {
			s.t.Fatal(err)
		}
		s.mds[key] = md
	}
	return md
}

// event writes one event 100 ms after the previous one.
func (s *stream) event(md *nettrace.Metadata, values nettrace.Object) {
	s.t.Helper()
	payload, err := nettrace.AppendPayload(nil, md.Fields, values)
	if err != nil {
		s.t.Fatalf("payload of %s: %v", md.EventName, err)
	}
	s.ticks += int64(100 * time.Millisecond)
	s.seq++
	if err := s.w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: s.seq, ThreadID: 9, CaptureThreadID: 9, Timestamp: s.ticks, Payload: payload}); err != nil {
		s.t.Fatal(err)
	}
}

// metric writes MetricsEventSource event id at version with the values of
// its fields in order.
func (s *stream) metric(id, version uint32, values ...any) {
	s.t.Helper()
	for _, sig := range metricsSigs {
		if sig.id != id || sig.version != version {
			continue
		}
		if len(values) != len(sig.fields) {
			s.t.Fatalf("event %d v%d takes %d values, got %d", id, version, len(sig.fields), len(values))
		}
		obj := make(nettrace.Object, len(values))
		for i, v := range values {
			obj[i] = nettrace.NamedValue{Name: sig.fields[i].Name, Value: v}
		}
		s.event(s.metadata(MetricsProvider, id, version, sig.name, sig.fields), obj)
		return
	}
	s.t.Fatalf("no signature for event %d v%d", id, version)
}

// counter writes an EventCounters event of provider.
func (s *stream) counter(provider string, fields []nettrace.Field, values ...any) {
	s.t.Helper()
	inner := make(nettrace.Object, len(values))
	for i, v := range values {
		inner[i] = nettrace.NamedValue{Name: fields[i].Name, Value: v}
	}
	top := []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: fields}}}}
	md := s.metadata(provider, 2, 0, "EventCounters", top)
	s.event(md, nettrace.Object{{Value: nettrace.Object{{Name: "Payload", Value: inner}}}})
}

// mean writes an EventCounter (or PollingCounter) value.
func (s *stream) mean(provider, name, display, units string, intervalMS int, mean float64, count int32, lo, hi float64) {
	s.t.Helper()
	s.counter(provider, meanFields, name, display, mean, 0.0, count, lo, hi, float32(intervalMS)/1000,
		"Interval="+itoa(intervalMS), "Mean", "", units)
}

// sum writes an IncrementingEventCounter value measured over the
// interval.
func (s *stream) sum(provider, name, display, scale string, intervalMS int, inc float64) {
	s.t.Helper()
	s.sumAt(provider, name, display, scale, intervalMS, float32(intervalMS)/1000, inc)
}

// sumAt writes an IncrementingEventCounter value of a session at
// intervalMS, measured over intervalSec (IntervalSec).
func (s *stream) sumAt(provider, name, display, scale string, intervalMS int, intervalSec float32, inc float64) {
	s.t.Helper()
	s.counter(provider, sumFields, name, display, scale, inc, intervalSec, "", "Interval="+itoa(intervalMS), "Sum", "")
}

func itoa(n int) string { return strconv.Itoa(n) }

// flush writes the pending events and returns the stream's length.
func (s *stream) flush() int {
	s.t.Helper()
	if err := s.w.Flush(); err != nil {
		s.t.Fatal(err)
	}
	return s.buf.Len()
}

// bytes ends the stream and returns it.
func (s *stream) bytes() []byte {
	s.t.Helper()
	if err := s.w.Close(); err != nil {
		s.t.Fatal(err)
	}
	return s.buf.Bytes()
}
