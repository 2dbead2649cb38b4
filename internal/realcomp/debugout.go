package realcomp

import (
	"regexp"
	"strconv"
	"strings"
)

// DebugOutput is what the collector's debug exporter printed (verbosity
// detailed), parsed back into records.
type DebugOutput struct {
	Metrics  []DebugMetric
	Logs     []DebugLog
	Profiles []DebugProfile
}

// DebugMetric is one metric of one resource and scope.
type DebugMetric struct {
	Resource map[string]string // attribute -> printed value, e.g. Str(app), Int(12)
	Scope    string
	Name     string
	Unit     string
	DataType string // Gauge, Sum, Summary, Histogram
	// Monotonic and Temporality are a Sum's.
	Monotonic   bool
	Temporality string
	Points      []DebugPoint
}

// DebugPoint is one data point.
type DebugPoint struct {
	Attrs       map[string]string
	Start, Time string // as printed
	Value       float64
	Count       uint64
	Sum         float64
	Quantiles   map[float64]float64
}

// DebugLog is one log record.
type DebugLog struct {
	Resource       map[string]string
	Scope          string
	SeverityText   string
	SeverityNumber string // e.g. Warn(13)
	EventName      string
	Body           string // as printed, e.g. Str(text)
	Attrs          map[string]string
	Time           string
}

// DebugProfile is one profile (the debug exporter does not print its
// sample type): its samples' values and attributes.
type DebugProfile struct {
	Resource map[string]string
	Scope    string
	Samples  []DebugSample
}

// DebugSample is one sample of a profile.
type DebugSample struct {
	Values []int64
	Attrs  map[string]string
}

var (
	logPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[^\t]*\t\w+\t`)
	arrow     = regexp.MustCompile(`^\s*-> ([^:]+): (.*)$`)
	quantile  = regexp.MustCompile(`^QuantileValue #\d+: Quantile ([-+.eE0-9]+), Value ([-+.eE0-9a-zA-Z]+)$`)
)

// ParseDebugOutput parses the collector's log.
func ParseDebugOutput(log string) DebugOutput {
	var out DebugOutput
	var (
		resource map[string]string
		scope    string
		section  string // which "->" list the arrow lines belong to
		metric   *DebugMetric
		point    *DebugPoint
		rec      *DebugLog
		prof     *DebugProfile
		signal   string
	)
	flushPoint := func() {
		if metric != nil && point != nil {
			metric.Points = append(metric.Points, *point)
		}
		point = nil
	}
	flushMetric := func() {
		flushPoint()
		if metric != nil {
			out.Metrics = append(out.Metrics, *metric)
		}
		metric = nil
	}
	flushLog := func() {
		if rec != nil {
			out.Logs = append(out.Logs, *rec)
		}
		rec = nil
	}
	flushProfile := func() {
		if prof != nil {
			out.Profiles = append(out.Profiles, *prof)
		}
		prof = nil
	}
	flushAll := func() { flushMetric(); flushLog(); flushProfile() }
	for _, line := range strings.Split(log, "\n") {
		line = logPrefix.ReplaceAllString(line, "")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "{") || trimmed == "" {
			continue // the log entry's own fields
		}
		switch {
		case strings.HasPrefix(trimmed, "ResourceMetrics #"):
			flushAll()
			resource, signal, section = map[string]string{}, "metrics", ""
			continue
		case strings.HasPrefix(trimmed, "ResourceLog #"):
			flushAll()
			resource, signal, section = map[string]string{}, "logs", ""
			continue
		case strings.HasPrefix(trimmed, "ResourceProfiles #"):
			flushAll()
			resource, signal, section = map[string]string{}, "profiles", ""
			continue
		case trimmed == "Resource attributes:":
			section = "resource"
			continue
		case strings.HasPrefix(trimmed, "InstrumentationScope"):
			flushAll()
			f := strings.Fields(trimmed)
			scope = ""
			if len(f) > 1 {
				scope = f[1]
			}
			continue
		}
		if m := arrow.FindStringSubmatch(line); m != nil {
			k, v := m[1], m[2]
			switch section {
			case "resource":
				if resource != nil {
					resource[k] = v
				}
			case "descriptor":
				if metric != nil {
					switch k {
					case "Name":
						metric.Name = v
					case "Unit":
						metric.Unit = v
					case "DataType":
						metric.DataType = v
					case "IsMonotonic":
						metric.Monotonic = v == "true"
					case "AggregationTemporality":
						metric.Temporality = v
					}
				}
			case "point":
				if point != nil {
					point.Attrs[k] = v
				}
			case "log":
				if rec != nil {
					rec.Attrs[k] = v
				}
			case "sample":
				if prof != nil && len(prof.Samples) > 0 {
					prof.Samples[len(prof.Samples)-1].Attrs[k] = v
				}
			}
			continue
		}
		if signal == "profiles" {
			switch {
			case strings.HasPrefix(trimmed, "Profile #"):
				flushProfile()
				prof = &DebugProfile{Resource: resource, Scope: scope}
				section = ""
			case prof != nil && strings.HasPrefix(trimmed, "Sample #"):
				prof.Samples = append(prof.Samples, DebugSample{Attrs: map[string]string{}})
				section = "sample"
			case prof != nil && len(prof.Samples) > 0 && strings.HasPrefix(trimmed, "Values: ["):
				for _, f := range strings.Fields(strings.Trim(strings.TrimPrefix(trimmed, "Values: "), "[]")) {
					v, _ := strconv.ParseInt(f, 10, 64)
					last := &prof.Samples[len(prof.Samples)-1]
					last.Values = append(last.Values, v)
				}
			}
			continue
		}
		key, val, _ := strings.Cut(trimmed, ": ")
		switch {
		case strings.HasPrefix(trimmed, "Metric #"):
			flushMetric()
			metric = &DebugMetric{Resource: resource, Scope: scope}
		case trimmed == "Descriptor:":
			section = "descriptor"
		case strings.HasPrefix(trimmed, "NumberDataPoints #"), strings.HasPrefix(trimmed, "SummaryDataPoints #"), strings.HasPrefix(trimmed, "HistogramDataPoints #"):
			flushPoint()
			point = &DebugPoint{Attrs: map[string]string{}}
			section = ""
		case trimmed == "Data point attributes:":
			section = "point"
		case strings.HasPrefix(trimmed, "LogRecord #"):
			flushLog()
			rec = &DebugLog{Resource: resource, Scope: scope, Attrs: map[string]string{}}
			section = ""
		case trimmed == "Attributes:" && rec != nil:
			section = "log"
		case point != nil && key == "StartTimestamp":
			point.Start = val
		case point != nil && key == "Timestamp":
			point.Time = val
		case point != nil && key == "Value":
			point.Value, _ = strconv.ParseFloat(val, 64)
		case point != nil && key == "Count":
			point.Count, _ = strconv.ParseUint(val, 10, 64)
		case point != nil && key == "Sum":
			point.Sum, _ = strconv.ParseFloat(val, 64)
		case point != nil && strings.HasPrefix(trimmed, "QuantileValue #"):
			if m := quantile.FindStringSubmatch(trimmed); m != nil {
				q, _ := strconv.ParseFloat(m[1], 64)
				v, _ := strconv.ParseFloat(m[2], 64)
				if point.Quantiles == nil {
					point.Quantiles = map[float64]float64{}
				}
				point.Quantiles[q] = v
			}
		case rec != nil && key == "Timestamp":
			rec.Time = val
		case rec != nil && key == "SeverityText":
			rec.SeverityText = val
		case rec != nil && key == "SeverityNumber":
			rec.SeverityNumber = val
		case rec != nil && key == "EventName":
			rec.EventName = val
		case rec != nil && key == "Body":
			rec.Body = val
		}
	}
	flushAll()
	return out
}

// Metric returns the metrics named name.
func (d DebugOutput) Metric(name string) []DebugMetric {
	var out []DebugMetric
	for _, m := range d.Metrics {
		if m.Name == name {
			out = append(out, m)
		}
	}
	return out
}

// PointCount is the number of data points of every metric.
func (d DebugOutput) PointCount() int {
	n := 0
	for _, m := range d.Metrics {
		n += len(m.Points)
	}
	return n
}
