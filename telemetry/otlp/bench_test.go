package otlp_test

import (
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
	colmetricspb "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// BenchmarkConvertAndMarshal is the exporter's cost per interval of one
// process: 24 System.Runtime EventCounter samples converted and marshalled
// into one OTLP request (what a batch of one process costs).
func BenchmarkConvertAndMarshal(b *testing.B) {
	res := telemetry.ProcessResource(telemetry.Process{PID: 1, Name: "app"}, func(string) string { return "" })
	var samples []counters.Sample
	for _, k := range counters.KnownCounters() {
		if k.Meter {
			continue
		}
		kind := counters.KindMean
		if k.Name == "alloc-rate" || k.Name == "exception-count" || k.Name[:3] == "gen" && k.Name[len(k.Name)-5:] == "count" {
			kind = counters.KindRate
		}
		samples = append(samples, counters.Sample{Provider: "System.Runtime", Name: k.Name, Unit: k.Unit, Kind: kind, Value: 42, Interval: time.Second})
	}
	conv := telemetry.NewConverter()
	ms := make([]telemetry.Metric, 0, len(samples))
	t0 := time.Now()
	b.ReportAllocs()
	var size int
	for i := 0; b.Loop(); i++ {
		ms = ms[:0]
		for j := range samples {
			samples[j].Time = t0.Add(time.Duration(i) * time.Second)
			if m, ok := conv.Convert(&samples[j], res); ok {
				ms = append(ms, m)
			}
		}
		body, err := proto.Marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: otlp.MetricsProto(ms)})
		if err != nil {
			b.Fatal(err)
		}
		size = len(body)
	}
	b.ReportMetric(float64(size), "bytes/request")
	b.ReportMetric(float64(len(samples)), "samples/op")
}
