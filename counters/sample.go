package counters

import (
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of a counter value.
type Kind uint8

// The kinds of samples.
const (
	// KindMean is an EventCounter or PollingCounter, or a gauge: the value
	// is a level (a mean over the interval, or the last observation).
	KindMean Kind = iota
	// KindRate is an incrementing counter or a Metrics counter: the value
	// is the increase during the interval (Elapsed); PerSecond turns it
	// into a rate.
	KindRate
	// KindUpDown is a Metrics UpDownCounter: the value is its current total
	// and Rate the change during the interval. Instruments that the
	// OpenTelemetry semantic conventions define as up-down counters but a
	// runtime publishes as counters (System.Runtime's
	// dotnet.thread_pool.thread.count and queue.length on .NET 9 and 10)
	// are of this kind too.
	KindUpDown
	// KindGauge is a Metrics gauge (ObservableGauge or Gauge).
	KindGauge
	// KindHistogram is a Metrics histogram: Quantiles, Count and Sum.
	KindHistogram
)

var kindNames = [...]string{"Metric", "Rate", "UpDownCounter", "Gauge", "Histogram"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Quantile is one percentile of a histogram sample.
type Quantile struct {
	Quantile float64 // 0.5, 0.95, 0.99
	Value    float64
}

// Tag is one dimension of a Metrics time series.
type Tag struct{ Key, Value string }

// Sample is one value of one counter at one time.
type Sample struct {
	Time        time.Time
	Provider    string // EventSource or Meter name
	Name        string // counter or instrument name
	DisplayName string
	Unit        string
	Kind        Kind
	Value       float64 // mean, increment, gauge value or up-down total
	Rate        float64 // up-down counters: change in the interval (not per second)
	// Total is the cumulative value of a Metrics counter (KindRate) since
	// the instrument was created, when the runtime sends it (.NET 8 and
	// later: HasTotal); Value is then still the increase in the interval.
	Total    float64
	HasTotal bool
	// Meter marks a System.Diagnostics.Metrics instrument (published by
	// MetricsEventSource); false for an EventCounter.
	Meter     bool
	Quantiles []Quantile
	// Count is the number of measurements in the interval (histograms and
	// EventCounters of kind Mean).
	Count int64
	Sum   float64 // histograms: sum of the measurements
	// Min and Max are the smallest and largest measurement of an
	// EventCounter of kind Mean in the interval (meaningless when Count
	// is 0).
	Min, Max float64
	Tags     []Tag
	// MeterTags and InstrumentTags are the tags given to the Meter and to
	// the instrument when they were created (.NET 8+), as announced by
	// MetricsEventSource's BeginInstrumentReporting event (version 1 and
	// later); nil for EventCounters and older runtimes.
	MeterTags      []Tag
	InstrumentTags []Tag
	// Interval is how often the runtime publishes the counter: the
	// EventCounters payload's Series (Interval=ms), which may be another
	// session's on .NET Core 3.x, or the Metrics session's collection
	// period.
	Interval time.Duration
	// Elapsed is the real time the sample covers, measured by the
	// runtime: the EventCounters payload's IntervalSec, or for Metrics the
	// time between the session's two latest collections (their
	// CollectionStart events; the first one's own interval before there
	// are two). A rate's Value is the increase over Elapsed, which differs
	// from Interval when the process is loaded or was stopped. 0 when
	// unknown (then Interval stands for it).
	Elapsed time.Duration
	// NoValue marks an instrument that reported no measurement (a gauge
	// whose value string was empty, e.g. an ended instrument).
	NoValue bool
}

// TagString renders the tags as "k=v,k=v".
func (s *Sample) TagString() string { return FormatTags(s.Tags) }

// FormatTags renders tags as "k=v,k=v", the text ParseTags reads.
func FormatTags(tags []Tag) string {
	var b strings.Builder
	for i, t := range tags {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.Key)
		b.WriteByte('=')
		b.WriteString(t.Value)
	}
	return b.String()
}

// Span is the time the sample's increase covers: Elapsed, else Interval,
// else one second.
func (s *Sample) Span() time.Duration {
	switch {
	case s.Elapsed > 0:
		return s.Elapsed
	case s.Interval > 0:
		return s.Interval
	}
	return time.Second
}

// PerSecond is a rate's increase per second of real time (Value divided by
// Span); ok is false for other kinds and samples without a value.
func (s *Sample) PerSecond() (rate float64, ok bool) {
	if s.Kind != KindRate || s.NoValue {
		return 0, false
	}
	return s.Value / s.Span().Seconds(), true
}

// Shown is the value a person reads next to Label: a rate per second
// (PerSecond), or the value itself.
func (s *Sample) Shown() float64 {
	if r, ok := s.PerSecond(); ok {
		return r
	}
	return s.Value
}

// Label is the name a person reads: the display name (or the name) with
// the unit in parentheses, as dotnet-counters prints it. A rate is per
// second whatever the refresh interval ("Exception Count (Count / 1
// sec)"): its value (Shown) is the increase divided by the real time it
// covers, so label and value agree at every interval, and the value does
// not change when another session changes the runtime's interval.
func (s *Sample) Label() string {
	n := s.DisplayName
	if n == "" {
		n = s.Name
	}
	unit := s.Unit
	if s.Kind == KindRate {
		if unit == "" {
			unit = "Count"
		}
		if !strings.Contains(unit, "/") {
			unit += " / 1 sec"
		}
	}
	if unit != "" {
		n += " (" + unit + ")"
	}
	return n
}

// ParseTags parses the "k=v,k=v" tag text of Metrics events.
func ParseTags(s string) []Tag {
	if s == "" {
		return nil
	}
	var tags []Tag
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		tags = append(tags, Tag{Key: k, Value: v})
	}
	return tags
}

// ParseQuantiles parses "0.5=1.2;0.95=3;0.99=4.5".
func ParseQuantiles(s string) []Quantile {
	var qs []Quantile
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		q, err1 := strconv.ParseFloat(strings.TrimSpace(k), 64)
		x, err2 := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err1 == nil && err2 == nil {
			qs = append(qs, Quantile{Quantile: q, Value: x})
		}
	}
	return qs
}

// EachRow calls emit for each row the sample gives in a table or a file:
// none for a sample without a value, one for a plain counter (a rate per
// second for a rate, see Shown), one per quantile for a histogram, with a
// tag Percentile=50 etc. added, as dotnet-counters shows them. It stops at
// emit's first error.
func (s *Sample) EachRow(emit func(tags []Tag, value float64) error) error {
	if s.Kind != KindHistogram {
		if s.NoValue {
			return nil
		}
		return emit(s.Tags, s.Shown())
	}
	for _, q := range s.Quantiles {
		tags := append(s.Tags[:len(s.Tags):len(s.Tags)], Tag{Key: "Percentile", Value: strconv.FormatFloat(q.Quantile*100, 'f', -1, 64)})
		if err := emit(tags, q.Value); err != nil {
			return err
		}
	}
	return nil
}
