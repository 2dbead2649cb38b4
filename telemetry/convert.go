package telemetry

import (
	"math"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"go.opentelemetry.io/otel/attribute"
)

// Converter turns counter samples into Metrics. It adds up what the
// runtime sends per interval (an EventCounter's incrementing counter, a
// Metrics counter before .NET 8, a histogram's count and sum) into
// cumulative sums that start at the series' first sample. It is not safe
// for concurrent use: give each goroutine (or each process) its own.
//
// Names and units:
//
//   - A System.Diagnostics.Metrics instrument keeps its name and UCUM unit
//     (the runtime's System.Runtime Meter and ASP.NET Core's already follow
//     the semantic conventions); its Meter is the scope.
//   - The legacy System.Runtime EventCounters that measure what a semantic
//     metric measures take its name, unit and attributes (semanticRuntime
//     below): cpu-usage -> process.cpu.utilization (ratio), working-set ->
//     dotnet.process.memory.working_set (bytes), gen-N-gc-count ->
//     dotnet.gc.collections{gc.heap.generation=genN} (added up),
//     gen-N-size, loh-size, poh-size -> dotnet.gc.last_collection.heap.size
//     {gc.heap.generation}, alloc-rate -> dotnet.gc.heap.total_allocated
//     (added up), gc-committed ->
//     dotnet.gc.last_collection.memory.committed_size, exception-count ->
//     dotnet.exceptions (added up), monitor-lock-contention-count ->
//     dotnet.monitor.lock_contentions (added up), threadpool-* ->
//     dotnet.thread_pool.*, active-timer-count -> dotnet.timer.count,
//     assembly-count -> dotnet.assembly.count, il-bytes-jitted ->
//     dotnet.jit.compiled_il.size, methods-jitted-count ->
//     dotnet.jit.compiled_methods, time-in-jit -> dotnet.jit.compilation.time
//     (added up, seconds).
//   - Any other EventCounter is named PROVIDER.COUNTER with the provider's
//     dots removed, lower-cased, and dashes as underscores
//     (systemruntime.gc_heap_size), in base units: MB, KB and B as bytes
//     ("By"; the runtime's MB are 10^6 bytes), % as a ratio ("1"), ms, us
//     and ns as seconds.
//
// Sample tags are the series' attributes; samples without a value (NoValue,
// NaN, infinities) give no Metric. On .NET 9 and later the runtime
// publishes both the legacy EventCounters and the System.Runtime Meter:
// collect one of the two, or the mapped names arrive twice.
type Converter struct {
	series map[string]*seriesState
}

type seriesState struct {
	start time.Time
	total float64
	count uint64
	sum   float64
}

// NewConverter returns a Converter with no series yet.
func NewConverter() *Converter { return &Converter{series: map[string]*seriesState{}} }

// semantic says how a legacy EventCounter maps to a semantic metric.
type semantic struct {
	name, unit string
	kind       MetricKind
	monotonic  bool
	// from says how the value is read: rate (an increment per interval,
	// added up), level (the value itself).
	rate  bool
	scale float64 // value*scale
	attrs []attribute.KeyValue
}

func gen(g string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("gc.heap.generation", g)}
}

// semanticRuntime maps System.Runtime's EventCounters (.NET Core 3.0 to
// .NET 8, still published later) to the semantic metrics of .NET 9's
// System.Runtime Meter that measure the same thing.
var semanticRuntime = map[string]semantic{
	"cpu-usage":                        {name: "process.cpu.utilization", unit: "1", kind: Gauge, scale: 0.01},
	"working-set":                      {name: "dotnet.process.memory.working_set", unit: "By", kind: Sum, scale: 1e6},
	"gen-0-gc-count":                   {name: "dotnet.gc.collections", unit: "{collection}", kind: Sum, monotonic: true, rate: true, scale: 1, attrs: gen("gen0")},
	"gen-1-gc-count":                   {name: "dotnet.gc.collections", unit: "{collection}", kind: Sum, monotonic: true, rate: true, scale: 1, attrs: gen("gen1")},
	"gen-2-gc-count":                   {name: "dotnet.gc.collections", unit: "{collection}", kind: Sum, monotonic: true, rate: true, scale: 1, attrs: gen("gen2")},
	"gen-0-size":                       {name: "dotnet.gc.last_collection.heap.size", unit: "By", kind: Sum, scale: 1, attrs: gen("gen0")},
	"gen-1-size":                       {name: "dotnet.gc.last_collection.heap.size", unit: "By", kind: Sum, scale: 1, attrs: gen("gen1")},
	"gen-2-size":                       {name: "dotnet.gc.last_collection.heap.size", unit: "By", kind: Sum, scale: 1, attrs: gen("gen2")},
	"loh-size":                         {name: "dotnet.gc.last_collection.heap.size", unit: "By", kind: Sum, scale: 1, attrs: gen("loh")},
	"poh-size":                         {name: "dotnet.gc.last_collection.heap.size", unit: "By", kind: Sum, scale: 1, attrs: gen("poh")},
	"alloc-rate":                       {name: "dotnet.gc.heap.total_allocated", unit: "By", kind: Sum, monotonic: true, rate: true, scale: 1},
	"gc-committed":                     {name: "dotnet.gc.last_collection.memory.committed_size", unit: "By", kind: Sum, scale: 1e6},
	"exception-count":                  {name: "dotnet.exceptions", unit: "{exception}", kind: Sum, monotonic: true, rate: true, scale: 1},
	"monitor-lock-contention-count":    {name: "dotnet.monitor.lock_contentions", unit: "{contention}", kind: Sum, monotonic: true, rate: true, scale: 1},
	"threadpool-thread-count":          {name: "dotnet.thread_pool.thread.count", unit: "{thread}", kind: Sum, scale: 1},
	"threadpool-queue-length":          {name: "dotnet.thread_pool.queue.length", unit: "{work_item}", kind: Sum, scale: 1},
	"threadpool-completed-items-count": {name: "dotnet.thread_pool.work_item.count", unit: "{work_item}", kind: Sum, monotonic: true, rate: true, scale: 1},
	"active-timer-count":               {name: "dotnet.timer.count", unit: "{timer}", kind: Sum, scale: 1},
	"assembly-count":                   {name: "dotnet.assembly.count", unit: "{assembly}", kind: Sum, scale: 1},
	"il-bytes-jitted":                  {name: "dotnet.jit.compiled_il.size", unit: "By", kind: Sum, monotonic: true, scale: 1},
	"methods-jitted-count":             {name: "dotnet.jit.compiled_methods", unit: "{method}", kind: Sum, monotonic: true, scale: 1},
	"time-in-jit":                      {name: "dotnet.jit.compilation.time", unit: "s", kind: Sum, monotonic: true, rate: true, scale: 1e-3},
}

// Convert turns one sample of the process res into a Metric; ok is false
// when the sample has no value to send.
func (c *Converter) Convert(s *counters.Sample, res *Resource) (m Metric, ok bool) {
	if s.NoValue {
		return Metric{}, false
	}
	m = Metric{Resource: res, Scope: s.Provider, Time: s.Time, Description: s.DisplayName}
	attrs := make([]attribute.KeyValue, 0, len(s.Tags)+1)
	for _, t := range s.Tags {
		attrs = append(attrs, attribute.String(t.Key, t.Value))
	}
	st := c.state(s)

	if !s.Meter && s.Provider == counters.DefaultProvider {
		if sem, found := semanticRuntime[s.Name]; found && sem.rate == (s.Kind == counters.KindRate) {
			// The display name describes the EventCounter, not the
			// semantic metric: leave the description to the conventions.
			m.Name, m.Unit, m.Kind, m.Monotonic, m.Description = sem.name, sem.unit, sem.kind, sem.monotonic, ""
			m.Attrs = append(attrs, sem.attrs...)
			v := s.Value * sem.scale
			if !finite(v) {
				return Metric{}, false
			}
			if sem.rate {
				if v > 0 {
					st.total += v
				}
				v = st.total
			}
			m.Value = v
			if m.Kind == Sum {
				m.Start = st.start
			}
			return m, true
		}
	}

	scale := unitScale{unit: s.Unit, mul: 1}
	if s.Meter {
		m.Name = s.Name
	} else {
		m.Name = legacyName(s.Provider, s.Name)
		scale = baseUnit(s.Unit)
	}
	m.Unit = scale.unit
	m.Attrs = attrs
	switch s.Kind {
	case counters.KindRate:
		m.Kind, m.Monotonic, m.Start = Sum, true, st.start
		if s.HasTotal {
			m.Value = scale.apply(s.Total)
		} else {
			if v := scale.apply(s.Value); finite(v) && v > 0 {
				st.total += v
			}
			m.Value = st.total
		}
	case counters.KindUpDown:
		m.Kind, m.Value, m.Start = Sum, scale.apply(s.Value), st.start
	case counters.KindHistogram:
		m.Kind, m.Start = Summary, st.start
		if s.Count > 0 {
			st.count += uint64(s.Count)
		}
		if v := scale.apply(s.Sum); finite(v) {
			st.sum += v
		}
		m.Count, m.SumValue = st.count, st.sum
		for _, q := range s.Quantiles {
			if v := scale.apply(q.Value); finite(v) {
				m.Quantiles = append(m.Quantiles, Quantile{Quantile: q.Quantile, Value: v})
			}
		}
		return m, true
	default:
		m.Kind, m.Value = Gauge, scale.apply(s.Value)
	}
	if !finite(m.Value) {
		return Metric{}, false
	}
	return m, true
}

// state finds or starts the running totals of the sample's series; a new
// series starts at the beginning of the sample's interval.
func (c *Converter) state(s *counters.Sample) *seriesState {
	var b strings.Builder
	b.WriteString(s.Provider)
	b.WriteByte(0)
	b.WriteString(s.Name)
	for _, t := range s.Tags {
		b.WriteByte(0)
		b.WriteString(t.Key)
		b.WriteByte('=')
		b.WriteString(t.Value)
	}
	key := b.String()
	st := c.series[key]
	if st == nil {
		st = &seriesState{start: s.Time.Add(-s.Interval)}
		c.series[key] = st
	}
	return st
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// legacyName names an EventCounter that has no semantic equivalent.
func legacyName(provider, name string) string {
	p := strings.ToLower(strings.ReplaceAll(provider, ".", ""))
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	return p + "." + n
}

// unitScale converts a value to a base unit: value*mul/div.
type unitScale struct {
	unit     string
	mul, div float64
}

func (u unitScale) apply(v float64) float64 {
	if u.mul != 0 && u.mul != 1 {
		v *= u.mul
	}
	if u.div != 0 && u.div != 1 {
		v /= u.div
	}
	return v
}

// baseUnit maps an EventCounter's display unit to a UCUM base unit.
func baseUnit(unit string) unitScale {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "", "count", "#":
		return unitScale{"", 1, 1}
	case "b", "byte", "bytes":
		return unitScale{"By", 1, 1}
	case "kb":
		return unitScale{"By", 1e3, 1}
	case "mb":
		return unitScale{"By", 1e6, 1}
	case "gb":
		return unitScale{"By", 1e9, 1}
	case "%":
		return unitScale{"1", 1, 100}
	case "s", "sec", "seconds":
		return unitScale{"s", 1, 1}
	case "ms":
		return unitScale{"s", 1, 1e3}
	case "us", "μs", "µs":
		return unitScale{"s", 1, 1e6}
	case "ns":
		return unitScale{"s", 1, 1e9}
	}
	return unitScale{unit, 1, 1}
}
