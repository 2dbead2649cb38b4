package otlp_test

import (
	"context"
	"log"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
)

// Counter samples of one process are converted to OpenTelemetry metrics
// and exported to a collector's OTLP/HTTP receiver.
func Example() {
	e, err := otlp.New(otlp.Config{Endpoint: "http://localhost:4318", Headers: map[string]string{"Authorization": "Bearer TOKEN"}})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx) // batches, retries; sends what is left when ctx ends

	res := telemetry.ProcessResource(telemetry.Process{PID: 4242, Name: "Shop.Api"}, nil)
	conv := telemetry.NewConverter()
	sample := counters.Sample{Time: time.Now(), Interval: time.Second, Provider: "System.Runtime",
		Name: "alloc-rate", Unit: "B", Kind: counters.KindRate, Value: 65536}
	if m, ok := conv.Convert(&sample, res); ok {
		e.ExportMetrics(m) // dotnet.gc.heap.total_allocated, a cumulative sum in bytes
	}
	sev, text := telemetry.SeverityOfLogLevel(3)
	e.ExportLogs(telemetry.LogRecord{Resource: res, Scope: "Shop.Api.Orders", Time: time.Now(),
		Severity: sev, SeverityText: text, Body: "payment provider slow"})
}
