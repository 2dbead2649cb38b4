package realcomp

import (
	"os"
	"reflect"
	"testing"
)

// TestParseDebugOutput parses the debug exporter's output as a collector
// v0.165.0 printed it (testdata/debug-output.log, trimmed), so that the
// parser the integration tests rely on is checked even where the collector
// is not built.
func TestParseDebugOutput(t *testing.T) {
	b, err := os.ReadFile("testdata/debug-output.log")
	if err != nil {
		t.Fatal(err)
	}
	out := ParseDebugOutput(string(b))
	want := DebugOutput{
		Metrics: []DebugMetric{
			{Resource: map[string]string{"service.name": "Str(app)", "process.pid": "Int(1234)"}, Scope: "System.Runtime",
				Name: "dotnet.gc.collections", Unit: "{collection}", DataType: "Sum", Monotonic: true, Temporality: "Cumulative",
				Points: []DebugPoint{{Attrs: map[string]string{"gc.heap.generation": "Str(gen0)"}, Start: "2026-11-28 06:02:36.998651558 +0000 UTC",
					Time: "2026-11-28 06:02:37.998651558 +0000 UTC", Value: 42}}},
			{Resource: map[string]string{"service.name": "Str(app)", "process.pid": "Int(1234)"}, Scope: "x", Name: "h", Unit: "s", DataType: "Summary",
				Points: []DebugPoint{{Attrs: map[string]string{}, Start: "2026-11-28 06:02:36.998651558 +0000 UTC", Time: "2026-11-28 06:02:37.998651558 +0000 UTC",
					Count: 3, Sum: 1.5, Quantiles: map[float64]float64{0.5: 0.4, 0.99: 0.9}}}},
		},
		Logs: []DebugLog{{Resource: map[string]string{"service.name": "Str(app)"}, Scope: "MyApp.Worker", SeverityText: "Warning",
			SeverityNumber: "Warn(13)", EventName: "DiskFull", Body: "Str(disk 91% full)",
			Attrs: map[string]string{"event.id": "Int(7)", "path": "Str(/data)"}, Time: "2026-11-28 06:02:37.998651558 +0000 UTC"}},
		Profiles: []DebugProfile{{Resource: map[string]string{"service.name": "Str(Hot)"}, Scope: "clrdiag",
			Samples: []DebugSample{{Values: []int64{3407}, Attrs: map[string]string{"thread": "Int(24228)"}},
				{Values: []int64{2563}, Attrs: map[string]string{"thread": "Int(24236)"}}}}},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("got  %+v\nwant %+v", out, want)
	}
	if out.PointCount() != 2 || len(out.Metric("h")) != 1 {
		t.Error("PointCount or Metric")
	}
}
