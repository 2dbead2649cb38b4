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
	// is the increase during the interval.
	KindRate
	// KindUpDown is a Metrics UpDownCounter: the value is its current total
	// and Rate the change during the interval.
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
	Rate        float64 // up-down counters: change in the interval
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
	Interval       time.Duration
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

// Label is the name a person reads: the display name (or the name) with
// the unit in parentheses, as dotnet-counters prints it.
func (s *Sample) Label() string {
	n := s.DisplayName
	if n == "" {
		n = s.Name
	}
	unit := s.Unit
	if s.Kind == KindRate && unit == "" {
		unit = "Count / " + formatInterval(s.Interval)
	} else if s.Kind == KindRate && !strings.Contains(unit, "/") && s.Interval > 0 {
		unit += " / " + formatInterval(s.Interval)
	}
	if unit != "" {
		n += " (" + unit + ")"
	}
	return n
}

func formatInterval(d time.Duration) string {
	if d <= 0 {
		d = time.Second
	}
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " sec"
	}
	return d.String()
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
