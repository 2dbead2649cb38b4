package otlp

import (
	"time"

	"github.com/clrdiag/clrdiag/telemetry"
	"go.opentelemetry.io/otel/attribute"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
)

// MetricsProto groups metrics by resource, scope and metric into OTLP
// ResourceMetrics, keeping their first-seen order.
func MetricsProto(ms []telemetry.Metric) []*metricspb.ResourceMetrics {
	var out []*metricspb.ResourceMetrics
	type scopeKey struct {
		res   *telemetry.Resource
		scope string
	}
	type metricKey struct {
		scopeKey
		name, unit string
		kind       telemetry.MetricKind
		monotonic  bool
	}
	resources := map[*telemetry.Resource]*metricspb.ResourceMetrics{}
	scopes := map[scopeKey]*metricspb.ScopeMetrics{}
	metrics := map[metricKey]*metricspb.Metric{}
	for i := range ms {
		m := &ms[i]
		rm := resources[m.Resource]
		if rm == nil {
			rm = &metricspb.ResourceMetrics{Resource: resourceProto(m.Resource)}
			resources[m.Resource] = rm
			out = append(out, rm)
		}
		sk := scopeKey{m.Resource, m.Scope}
		sm := scopes[sk]
		if sm == nil {
			sm = &metricspb.ScopeMetrics{Scope: &commonpb.InstrumentationScope{Name: m.Scope}}
			scopes[sk] = sm
			rm.ScopeMetrics = append(rm.ScopeMetrics, sm)
		}
		mk := metricKey{sk, m.Name, m.Unit, m.Kind, m.Monotonic}
		pm := metrics[mk]
		if pm == nil {
			pm = &metricspb.Metric{Name: m.Name, Unit: m.Unit, Description: m.Description}
			switch m.Kind {
			case telemetry.Sum:
				pm.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{
					AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
					IsMonotonic:            m.Monotonic,
				}}
			case telemetry.Summary:
				pm.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{}}
			default:
				pm.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}
			}
			metrics[mk] = pm
			sm.Metrics = append(sm.Metrics, pm)
		}
		switch d := pm.Data.(type) {
		case *metricspb.Metric_Sum:
			d.Sum.DataPoints = append(d.Sum.DataPoints, numberPoint(m))
		case *metricspb.Metric_Gauge:
			d.Gauge.DataPoints = append(d.Gauge.DataPoints, numberPoint(m))
		case *metricspb.Metric_Summary:
			p := &metricspb.SummaryDataPoint{
				Attributes:        attrsProto(m.Attrs),
				StartTimeUnixNano: unixNano(m.Start),
				TimeUnixNano:      unixNano(m.Time),
				Count:             m.Count,
				Sum:               m.SumValue,
			}
			for _, q := range m.Quantiles {
				p.QuantileValues = append(p.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile, Value: q.Value})
			}
			d.Summary.DataPoints = append(d.Summary.DataPoints, p)
		}
	}
	return out
}

func numberPoint(m *telemetry.Metric) *metricspb.NumberDataPoint {
	return &metricspb.NumberDataPoint{
		Attributes:        attrsProto(m.Attrs),
		StartTimeUnixNano: unixNano(m.Start),
		TimeUnixNano:      unixNano(m.Time),
		Value:             &metricspb.NumberDataPoint_AsDouble{AsDouble: m.Value},
	}
}

// LogsProto groups log records by resource and scope into OTLP
// ResourceLogs.
func LogsProto(ls []telemetry.LogRecord) []*logspb.ResourceLogs {
	var out []*logspb.ResourceLogs
	type scopeKey struct {
		res   *telemetry.Resource
		scope string
	}
	resources := map[*telemetry.Resource]*logspb.ResourceLogs{}
	scopes := map[scopeKey]*logspb.ScopeLogs{}
	for i := range ls {
		l := &ls[i]
		rl := resources[l.Resource]
		if rl == nil {
			rl = &logspb.ResourceLogs{Resource: resourceProto(l.Resource)}
			resources[l.Resource] = rl
			out = append(out, rl)
		}
		sk := scopeKey{l.Resource, l.Scope}
		sl := scopes[sk]
		if sl == nil {
			sl = &logspb.ScopeLogs{Scope: &commonpb.InstrumentationScope{Name: l.Scope}}
			scopes[sk] = sl
			rl.ScopeLogs = append(rl.ScopeLogs, sl)
		}
		r := &logspb.LogRecord{
			TimeUnixNano:         unixNano(l.Time),
			ObservedTimeUnixNano: unixNano(l.ObservedTime),
			SeverityNumber:       logspb.SeverityNumber(l.Severity),
			SeverityText:         l.SeverityText,
			Attributes:           attrsProto(l.Attrs),
			EventName:            l.EventName,
		}
		if r.ObservedTimeUnixNano == 0 {
			r.ObservedTimeUnixNano = r.TimeUnixNano
		}
		if l.Body != "" {
			r.Body = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: l.Body}}
		}
		sl.LogRecords = append(sl.LogRecords, r)
	}
	return out
}

func resourceProto(r *telemetry.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: attrsProto(r.Attrs)}
}

func attrsProto(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.STRINGSLICE:
		var vals []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}
