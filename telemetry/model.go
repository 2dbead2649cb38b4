package telemetry

import (
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Resource is what a record is about: one process on one host.
type Resource struct {
	Attrs []attribute.KeyValue
}

// Get returns the value of the attribute key, and whether it is there.
func (r *Resource) Get(key string) (attribute.Value, bool) {
	if r == nil {
		return attribute.Value{}, false
	}
	for _, kv := range r.Attrs {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// String returns the attribute key as a string, "" when absent.
func (r *Resource) String(key string) string {
	v, ok := r.Get(key)
	if !ok {
		return ""
	}
	return v.String()
}

// Process describes a process for ProcessResource.
type Process struct {
	PID            int
	Name           string // the executable's name, e.g. "MyService"
	CommandLine    string
	RuntimeVersion string // e.g. "8.0.11"
}

// ProcessResource makes the resource of a process with the OpenTelemetry
// semantic attributes: service.name (OTEL_SERVICE_NAME, else the
// process's name), process.pid, process.executable.name,
// process.command_line, process.runtime.name (".NET"),
// process.runtime.version, host.name, then the attributes of
// OTEL_RESOURCE_ATTRIBUTES (k=v,k=v, values percent-decoded), and, when
// those do not set them, k8s.pod.name, k8s.namespace.name and k8s.node.name
// from POD_NAME, POD_NAMESPACE and NODE_NAME (the names a Kubernetes
// manifest usually gives the downward API's fields). getenv is os.Getenv
// when nil.
func ProcessResource(p Process, getenv func(string) string) *Resource {
	if getenv == nil {
		getenv = os.Getenv
	}
	set := map[string]int{}
	var attrs []attribute.KeyValue
	put := func(kv attribute.KeyValue) {
		if i, ok := set[string(kv.Key)]; ok {
			attrs[i] = kv
			return
		}
		set[string(kv.Key)] = len(attrs)
		attrs = append(attrs, kv)
	}
	service := getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = p.Name
	}
	if service == "" {
		service = "unknown_service:dotnet"
	}
	put(attribute.String("service.name", service))
	if p.PID > 0 {
		put(attribute.Int("process.pid", p.PID))
	}
	if p.Name != "" {
		put(attribute.String("process.executable.name", p.Name))
	}
	if p.CommandLine != "" {
		put(attribute.String("process.command_line", p.CommandLine))
	}
	put(attribute.String("process.runtime.name", ".NET"))
	if p.RuntimeVersion != "" {
		put(attribute.String("process.runtime.version", p.RuntimeVersion))
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		put(attribute.String("host.name", h))
	}
	for _, kv := range ParseResourceAttributes(getenv("OTEL_RESOURCE_ATTRIBUTES")) {
		if string(kv.Key) == "service.name" && getenv("OTEL_SERVICE_NAME") != "" {
			continue // OTEL_SERVICE_NAME wins, as the specification says
		}
		put(kv)
	}
	for _, kv := range [...][2]string{{"k8s.pod.name", "POD_NAME"}, {"k8s.namespace.name", "POD_NAMESPACE"}, {"k8s.node.name", "NODE_NAME"}} {
		if _, ok := set[kv[0]]; !ok {
			if v := getenv(kv[1]); v != "" {
				put(attribute.String(kv[0], v))
			}
		}
	}
	return &Resource{Attrs: attrs}
}

// ParseResourceAttributes parses OTEL_RESOURCE_ATTRIBUTES: comma-separated
// key=value pairs, values percent-decoded; malformed pairs are left out.
func ParseResourceAttributes(s string) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		out = append(out, attribute.String(k, dv))
	}
	return out
}

// MetricKind is the shape of a metric's data point.
type MetricKind uint8

// The kinds of metrics.
const (
	// Gauge is a value at a time.
	Gauge MetricKind = iota
	// Sum is a cumulative sum from Start (Monotonic: a counter; otherwise
	// an up-down counter, whose Value is its current total).
	Sum
	// Summary is Count and Sum (cumulative from Start) with Quantiles (of
	// the last interval).
	Summary
)

func (k MetricKind) String() string {
	switch k {
	case Gauge:
		return "gauge"
	case Sum:
		return "sum"
	case Summary:
		return "summary"
	}
	return "MetricKind(" + strconv.Itoa(int(k)) + ")"
}

// Quantile is one quantile of a summary.
type Quantile struct {
	Quantile float64 // in [0, 1]
	Value    float64
}

// Metric is one data point of one series.
type Metric struct {
	Resource *Resource
	// Scope is the instrumentation scope: the Meter or EventSource name.
	Scope string
	// Name follows the OpenTelemetry conventions (dotted, lower case).
	Name        string
	Description string
	// Unit is a UCUM unit: "By", "s", "1", "{collection}".
	Unit      string
	Kind      MetricKind
	Monotonic bool // Sum: a counter
	// Attrs identify the series within the metric.
	Attrs []attribute.KeyValue
	// Start is when a cumulative Sum or Summary started counting.
	Start time.Time
	Time  time.Time
	Value float64 // Gauge, Sum
	// Count, SumValue and Quantiles are a Summary's.
	Count     uint64
	SumValue  float64
	Quantiles []Quantile
}

// Severity is an OpenTelemetry log severity number (1-24).
type Severity int32

// The first severity number of each OpenTelemetry range.
const (
	SeverityTrace Severity = 1
	SeverityDebug Severity = 5
	SeverityInfo  Severity = 9
	SeverityWarn  Severity = 13
	SeverityError Severity = 17
	SeverityFatal Severity = 21
)

// SeverityOfLogLevel maps a Microsoft.Extensions.Logging LogLevel (0 Trace,
// 1 Debug, 2 Information, 3 Warning, 4 Error, 5 Critical) to a severity
// number and its text; other values are 0 and "".
func SeverityOfLogLevel(level int) (Severity, string) {
	switch level {
	case 0:
		return SeverityTrace, "Trace"
	case 1:
		return SeverityDebug, "Debug"
	case 2:
		return SeverityInfo, "Information"
	case 3:
		return SeverityWarn, "Warning"
	case 4:
		return SeverityError, "Error"
	case 5:
		return SeverityFatal, "Critical"
	}
	return 0, ""
}

// LogRecord is one log record.
type LogRecord struct {
	Resource *Resource
	// Scope is the instrumentation scope: for .NET logs the logger's
	// category, as the OpenTelemetry .NET SDK sets it.
	Scope        string
	Time         time.Time
	ObservedTime time.Time
	Severity     Severity
	SeverityText string
	Body         string
	// EventName names the event (an EventId's name), "" when none.
	EventName string
	Attrs     []attribute.KeyValue
}
