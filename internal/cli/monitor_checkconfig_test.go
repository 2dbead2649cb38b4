package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clrdiag monitor --check-config validates the rules only: 0 and a
// listing when they are good, 2 naming every bad field otherwise.
func TestMonitorCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "rules.yaml")
	os.WriteFile(good, []byte(`CollectionRules:
  HighCpu:
    Filters: [{Key: ProcessName, Value: myapp}]
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 80, SlidingWindowDuration: "00:00:10"}
    Actions: [{Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:30"}}]
  Errors:
    Trigger: {Type: AspNetResponseStatus, Settings: {StatusCodes: ["500-599"], ResponseCount: 10}}
    Actions: [{Type: CollectDump}]
`), 0o600)
	code, stdout, stderr := run(t, "monitor", "--check-config", good)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"2 collection rules:", "HighCpu: EventCounter System.Runtime/cpu-usage > 80 for 00:00:10 -> CollectTrace; processes ProcessName=myapp",
		"Errors: AspNetResponseStatus 10 responses 500-599 within 00:01:00 -> CollectDump"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("listing lacks %q:\n%s", want, stdout)
		}
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"CollectionRules": {"HighCpu": {
	  "Trigger": {"Type": "EventCounter", "Settings": {"ProviderName": "System.Runtime", "CounterName": "cpu-usage", "GreaterThan": "eighty"}},
	  "Actions": [{"Type": "CollectDump", "Settings": {"Typ": "Full"}}]}}}`), 0o600)
	code, stdout, stderr = run(t, "monitor", "--check-config", bad)
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{`CollectionRules.HighCpu.Trigger.Settings.GreaterThan: "eighty" is not a number`,
		"CollectionRules.HighCpu.Actions[0].Settings.Typ: unknown setting: did you mean Type?"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// An environment variable overrides the file, as at start.
	t.Setenv("DotnetMonitor_CollectionRules__HighCpu__Trigger__Settings__GreaterThan", "90")
	t.Setenv("DotnetMonitor_CollectionRules__HighCpu__Actions__0__Settings__Typ", "")
	os.WriteFile(bad, []byte(strings.Replace(mustRead(t, bad), `"Typ"`, `"Type"`, 1)), 0o600)
	if code, stdout, stderr = run(t, "monitor", "--check-config", bad); code != 2 || !strings.Contains(stderr, "Settings.Typ: unknown setting") {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}
	os.Unsetenv("DotnetMonitor_CollectionRules__HighCpu__Actions__0__Settings__Typ")
	if code, stdout, stderr = run(t, "monitor", "--check-config", bad); code != 0 || !strings.Contains(stdout, "cpu-usage > 90") {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}

	if code, _, stderr = run(t, "monitor", "--check-config", filepath.Join(dir, "none.yaml")); code != 6 || !strings.Contains(stderr, "no such file") {
		t.Fatalf("missing file: exit %d %s", code, stderr)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The trigger shortcuts are listed as the counter triggers they stand for,
// and a wrong setting of one exits 2 naming it.
func TestMonitorCheckConfigShortcuts(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "rules.yaml")
	os.WriteFile(good, []byte(`CollectionRules:
  Cpu:
    Trigger: {Type: CPUUsage, Settings: {GreaterThan: 80, SlidingWindowDuration: "00:00:10"}}
    Actions: [{Type: CollectExceptions, Settings: {Duration: "00:00:20", Format: NewlineDelimitedJson}}]
  Queue:
    Trigger: {Type: ThreadpoolQueueLength}
    Actions: [{Type: CollectStacks}]
`), 0o600)
	code, stdout, stderr := run(t, "monitor", "--check-config", good)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Cpu: CPUUsage System.Runtime/cpu-usage > 80 for 00:00:10 -> CollectExceptions",
		"Queue: ThreadpoolQueueLength System.Runtime/threadpool-queue-length > 200 for 00:01:00 -> CollectStacks"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("listing lacks %q:\n%s", want, stdout)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`CollectionRules:
  Heap:
    Trigger: {Type: GCHeapSize, Settings: {CounterName: gc-heap-size, LessThan: -1}}
    Actions: [{Type: CollectExceptions, Settings: {Format: Xml, Filters: {Include: [{ExceptionTyp: X}]}}}]
`), 0o600)
	code, stdout, stderr = run(t, "monitor", "--check-config", bad)
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	for _, want := range []string{"CollectionRules.Heap.Trigger.Settings.CounterName: unknown setting",
		"CollectionRules.Heap.Trigger.Settings.LessThan: -1 is below 0",
		`CollectionRules.Heap.Actions[0].Settings.Format: "Xml" is not one of`,
		"CollectionRules.Heap.Actions[0].Settings.Filters.Include[0].ExceptionTyp: unknown setting: did you mean ExceptionType?"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
