package monitor

import (
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/prometheus/client_golang/prometheus"
)

func TestFamilyNames(t *testing.T) {
	tests := []struct {
		s    counters.Sample
		name string
		kind prometheus.ValueType
		help string // a part of the HELP text
	}{
		{counters.Sample{Provider: "System.Runtime", Name: "cpu-usage", DisplayName: "CPU Usage", Unit: "%"},
			"systemruntime_cpu_usage_ratio", prometheus.GaugeValue, "CPU Usage (EventCounter System.Runtime/cpu-usage, mean over the interval; unit %, exposed in a ratio"},
		{counters.Sample{Provider: "System.Runtime", Name: "working-set", Unit: "MB"},
			"systemruntime_working_set_bytes", prometheus.GaugeValue, "unit MB, exposed in bytes"},
		{counters.Sample{Provider: "System.Runtime", Name: "alloc-rate", Unit: "B", Kind: counters.KindRate},
			"systemruntime_alloc_rate_bytes_total", prometheus.CounterValue, "incrementing counter"},
		{counters.Sample{Provider: "System.Runtime", Name: "gen-0-gc-count", Kind: counters.KindRate},
			"systemruntime_gen_0_gc_count_total", prometheus.CounterValue, ""},
		{counters.Sample{Provider: "System.Runtime", Name: "threadpool-thread-count"}, "systemruntime_threadpool_threads", prometheus.GaugeValue, ""},
		{counters.Sample{Provider: "System.Runtime", Name: "assembly-count"}, "systemruntime_assemblies", prometheus.GaugeValue, ""},
		{counters.Sample{Provider: "System.Runtime", Name: "methods-jitted-count"}, "systemruntime_methods_jitted", prometheus.GaugeValue, ""},
		{counters.Sample{Provider: "Microsoft.AspNetCore.Hosting", Name: "requests-per-second", Kind: counters.KindRate},
			"microsoftaspnetcorehosting_requests_per_second_total", prometheus.CounterValue, ""},
		{counters.Sample{Provider: "My-Source", Name: "request-time", Unit: "ms"}, "my_source_request_time_seconds", prometheus.GaugeValue, "unit ms, exposed in seconds"},
		{counters.Sample{Meter: true, Provider: "System.Runtime", Name: "dotnet.gc.collections", Unit: "{collection}", Kind: counters.KindRate},
			"dotnet_gc_collections_total", prometheus.CounterValue, "instrument dotnet.gc.collections of the Meter in otel_scope_name, counter"},
		{counters.Sample{Meter: true, Provider: "System.Runtime", Name: "dotnet.assembly.count", Unit: "{assembly}", Kind: counters.KindUpDown},
			"dotnet_assembly_count", prometheus.GaugeValue, "up-down counter"},
		{counters.Sample{Meter: true, Provider: "System.Runtime", Name: "dotnet.process.cpu.count", Unit: "{cpu}", Kind: counters.KindUpDown},
			"dotnet_process_cpu_count", prometheus.GaugeValue, ""},
		{counters.Sample{Meter: true, Provider: "System.Runtime", Name: "dotnet.timer.count", Unit: "{timer}", Kind: counters.KindUpDown},
			"dotnet_timer_count", prometheus.GaugeValue, ""},
		{counters.Sample{Meter: true, Provider: "System.Runtime", Name: "dotnet.thread_pool.queue.length", Unit: "{work_item}", Kind: counters.KindUpDown},
			"dotnet_thread_pool_queue_length", prometheus.GaugeValue, "up-down counter"},
		{counters.Sample{Meter: true, Provider: "Shop", Name: "MyApp.QueueBox.count", Kind: counters.KindGauge},
			"my_app_queue_box_count", prometheus.GaugeValue, ""},
		{counters.Sample{Meter: true, Provider: "Shop", Name: "memory.total", Kind: counters.KindGauge}, "memory", prometheus.GaugeValue, ""},
		{counters.Sample{Meter: true, Provider: "Shop", Name: "latency", Unit: "ms", Kind: counters.KindHistogram},
			"latency_seconds", summaryKind, "histogram"},
		{counters.Sample{Meter: true, Provider: "Shop", Name: "temp", Unit: "Cel", Kind: counters.KindGauge}, "temp_celsius", prometheus.GaugeValue, "unit Cel)"},
		{counters.Sample{Meter: true, Provider: "Shop", Name: "9lives", Kind: counters.KindGauge}, "_9lives", prometheus.GaugeValue, ""},
	}
	for _, tt := range tests {
		f := familyOf(&tt.s)
		if f.name != tt.name || f.kind != tt.kind || !strings.Contains(f.help, tt.help) {
			t.Errorf("%s/%s: %s %v %q; want %s %v and help with %q", tt.s.Provider, tt.s.Name, f.name, f.kind, f.help, tt.name, tt.kind, tt.help)
		}
	}
}

func TestBaseUnits(t *testing.T) {
	for _, tt := range []struct {
		unit string
		v    float64
		otel string
		want float64
	}{
		{"MB", 29, "By", 29e6}, {"KB", 2, "By", 2000}, {"GB", 1.5, "By", 1.5e9}, {"B", 7, "By", 7}, {"By", 7, "By", 7},
		{"MiBy", 1, "By", 1 << 20}, {"%", 7, "1", 0.07}, {"%", 12.5, "1", 0.125}, {"ms", 250, "s", 0.25},
		{"us", 5, "s", 5e-6}, {"ns", 1, "s", 1e-9}, {"s", 3, "s", 3}, {"min", 2, "s", 120}, {"", 4, "", 4},
		{"count", 4, "", 4}, {"{item}", 4, "{item}", 4}, {"Cel", 20, "Cel", 20},
	} {
		u := baseUnit(tt.unit)
		if got := u.apply(tt.v); u.otel != tt.otel || got != tt.want {
			t.Errorf("%v %s = %v %s, want %v %s", tt.v, tt.unit, got, u.otel, tt.want, tt.otel)
		}
	}
}

func TestSeriesAccumulates(t *testing.T) {
	var s metricSeries
	for _, v := range []float64{2, 3, 0} {
		s.add(counters.Sample{Kind: counters.KindRate, Value: v})
	}
	if s.total != 5 {
		t.Errorf("EventCounter increments total %v, want 5", s.total)
	}
	f := familyOf(&counters.Sample{Provider: "P", Name: "n", Kind: counters.KindRate})
	m, err := seriesMetric(f, &s, Process{PID: 1, Name: "x"})
	if err != nil || m == nil {
		t.Fatal(err)
	}
	// A Metrics counter with the runtime's total: the total, not a sum.
	var mt metricSeries
	mt.add(counters.Sample{Meter: true, Kind: counters.KindRate, Value: 1, Total: 41, HasTotal: true})
	mt.add(counters.Sample{Meter: true, Kind: counters.KindRate, Value: 1, Total: 42, HasTotal: true})
	if mt.total != 0 || mt.last.Total != 42 {
		t.Errorf("total %v last %v", mt.total, mt.last.Total)
	}
	var h metricSeries
	h.add(counters.Sample{Kind: counters.KindHistogram, Count: 3, Sum: 1.5})
	h.add(counters.Sample{Kind: counters.KindHistogram, Count: 2, Sum: 0.5})
	if h.count != 5 || h.sum != 2 {
		t.Errorf("histogram count %d sum %v", h.count, h.sum)
	}
}
