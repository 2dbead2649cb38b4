package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// The trigger shortcuts load as EventCounter triggers on their
// System.Runtime counter, with dotnet-monitor's defaults: GreaterThan
// 50 (%), 10 (MB), 200 (work items) when no threshold is given, none
// when LessThan is, a one-minute window.
func TestLoadTriggerShortcuts(t *testing.T) {
	cfg, err := loadYAML(t, `CollectionRules:
  Cpu:
    Trigger: {Type: CPUUsage}
    Actions: [{Type: CollectDump}]
  CpuLow:
    Trigger: {Type: cpuusage, Settings: {LessThan: 5, SlidingWindowDuration: "00:00:10"}}
    Actions: [{Type: CollectDump}]
  Heap:
    Trigger: {Type: GCHeapSize, Settings: {GreaterThan: 500, LessThan: 900}}
    Actions: [{Type: CollectGCDump}]
  Queue:
    Trigger: {Type: ThreadpoolQueueLength}
    Actions: [{Type: CollectStacks}]
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		typ, counter string
		gt, lt       *float64
		window       time.Duration
		describe     string
	}{
		"Cpu":    {TriggerCPUUsage, "cpu-usage", ptr(50), nil, time.Minute, "CPUUsage System.Runtime/cpu-usage > 50 for 00:01:00"},
		"CpuLow": {TriggerCPUUsage, "cpu-usage", nil, ptr(5), 10 * time.Second, "CPUUsage System.Runtime/cpu-usage < 5 for 00:00:10"},
		"Heap":   {TriggerGCHeapSize, "gc-heap-size", ptr(500), ptr(900), time.Minute, "GCHeapSize System.Runtime/gc-heap-size in (500, 900) for 00:01:00"},
		"Queue":  {TriggerThreadpoolQueueLength, "threadpool-queue-length", ptr(200), nil, time.Minute, "ThreadpoolQueueLength System.Runtime/threadpool-queue-length > 200 for 00:01:00"},
	}
	if len(cfg.Rules) != len(want) {
		t.Fatalf("%v", cfg.Names())
	}
	for _, r := range cfg.Rules {
		w := want[r.Name]
		c := r.Trigger.Counter
		if r.Trigger.Type != w.typ || c == nil || c.Meter || c.Provider != "System.Runtime" || c.Name != w.counter || c.Window != w.window ||
			!sameFloat(c.GreaterThan, w.gt) || !sameFloat(c.LessThan, w.lt) {
			t.Errorf("%s: %s %+v", r.Name, r.Trigger.Type, c)
		}
		if got := r.Trigger.Describe(); got != w.describe {
			t.Errorf("%s: %q, want %q", r.Name, got, w.describe)
		}
	}
	// The /metrics collector reads the counters the shortcuts name, as
	// EventCounters (also on .NET 9+, where System.Runtime has a Meter).
	specs := cfg.CounterSpecs()
	if len(specs) != 1 || specs[0].Provider != "System.Runtime" || !specs[0].EventCountersOnly ||
		strings.Join(specs[0].Counters, ",") != "cpu-usage,gc-heap-size,threadpool-queue-length" {
		t.Fatalf("counter specs %+v", specs)
	}
}

func ptr(v float64) *float64 { return &v }

func sameFloat(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// Every wrong setting of a shortcut is named by its path: unknown keys
// (the provider and counter are preset), thresholds out of the counter's
// range, an empty range, a bad window.
func TestTriggerShortcutErrors(t *testing.T) {
	rule := func(settings string) string {
		return "CollectionRules:\n  R:\n    Trigger: {Type: CPUUsage, Settings: " + settings + "}\n    Actions: [{Type: CollectDump}]\n"
	}
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"preset counter", rule("{CounterName: cpu-usage, GreaterThan: 80}"),
			[]string{"CollectionRules.R.Trigger.Settings.CounterName: unknown setting (known: GreaterThan, LessThan, SlidingWindowDuration)"}},
		{"misspelt", rule("{GreaterThen: 80}"),
			[]string{"CollectionRules.R.Trigger.Settings.GreaterThen: unknown setting: did you mean GreaterThan?"}},
		{"above 100 percent", rule("{GreaterThan: 150}"),
			[]string{"CollectionRules.R.Trigger.Settings.GreaterThan: 150 is above 100: give a threshold in percent from 0 to 100"}},
		{"negative", rule("{LessThan: -1}"),
			[]string{"CollectionRules.R.Trigger.Settings.LessThan: -1 is below 0"}},
		{"not a number", rule("{GreaterThan: high}"),
			[]string{`CollectionRules.R.Trigger.Settings.GreaterThan: "high" is not a number`}},
		{"empty range", rule("{GreaterThan: 60, LessThan: 40}"),
			[]string{"CollectionRules.R.Trigger.Settings.LessThan: 40 is not above GreaterThan 60"}},
		{"window", rule(`{SlidingWindowDuration: "00:00:00.5"}`),
			[]string{"CollectionRules.R.Trigger.Settings.SlidingWindowDuration: 00:00:00.5 is out of range"}},
		{"heap negative", strings.Replace(rule("{GreaterThan: -5}"), "CPUUsage", "GCHeapSize", 1),
			[]string{"CollectionRules.R.Trigger.Settings.GreaterThan: -5 is below 0: give a threshold in MB from 0"}},
		{"queue unknown", strings.Replace(rule("{ProviderName: System.Runtime}"), "CPUUsage", "ThreadpoolQueueLength", 1),
			[]string{"CollectionRules.R.Trigger.Settings.ProviderName: unknown setting"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadYAML(t, c.yaml)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v %v", cfg, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if len(ce.Errors) != len(c.want) {
				t.Errorf("%d errors, want %d:\n%v", len(ce.Errors), len(c.want), err)
			}
		})
	}
}

// A CPUUsage rule fires on cpu-usage samples held above its line for
// its window, as the EventCounter trigger it stands for; a GCHeapSize
// rule reads gc-heap-size and nothing else.
func TestTriggerShortcutFires(t *testing.T) {
	h := newHarness(t, `CollectionRules:
  Cpu:
    Trigger: {Type: CPUUsage, Settings: {GreaterThan: 70, SlidingWindowDuration: "00:00:03"}}
    Actions: [{Type: Record, Settings: {Arg: cpu}}]
  Heap:
    Trigger: {Type: GCHeapSize, Settings: {SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Record, Settings: {Arg: heap}}]
`, Options{})
	h.e.Add(ProcessInfo{PID: 4, Name: "app"}, nil)
	h.cpu(4, 2, 90)
	h.cpu(4, 1, 60) // below the line: the window starts again
	h.cpu(4, 2, 90)
	if s := h.state(4, "Cpu"); s.Executions != 0 {
		t.Fatalf("fired early: %+v", s)
	}
	h.cpu(4, 1, 90)
	h.waitState(4, "Cpu", StateRunning)
	if s := h.state(4, "Cpu"); s.Executions != 1 || !strings.Contains(s.LastTriggerWhat, "System.Runtime/cpu-usage = 90 for 00:00:03") {
		t.Fatalf("%+v", s)
	}
	if s := h.state(4, "Heap"); s.Executions != 0 {
		t.Fatalf("cpu-usage fired the heap rule: %+v", s)
	}
	for range 2 {
		h.clk.Add(time.Second)
		h.e.Sample(4, &counters.Sample{Time: h.clk.Now(), Provider: "System.Runtime", Name: "gc-heap-size", Kind: counters.KindMean, Value: 12, Interval: time.Second})
	}
	h.waitState(4, "Heap", StateRunning)
	if got := strings.Join(h.rec.list(), " "); got != "Cpu/Record#0:cpu Heap/Record#0:heap" {
		t.Fatalf("runs %s", got)
	}
}
