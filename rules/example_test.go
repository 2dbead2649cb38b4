package rules_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/rules"
)

// Load checks a whole configuration and names every wrong key.
func ExampleLoad() {
	_, err := rules.Load([]rules.Source{{Name: "rules.yaml", Data: []byte(`
CollectionRules:
  HighCpu:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThen: 80}
    Actions: [{Type: CollectTrace, Settings: {Profile: Cpu, Duration: 30}}]
`)}}, rules.LoadOptions{})
	var ce *rules.ConfigError
	if errors.As(err, &ce) {
		for _, fe := range ce.Errors {
			fmt.Println(fe)
		}
	}
	// Output:
	// CollectionRules.HighCpu.Trigger.Settings.GreaterThan: give GreaterThan or LessThan (or both, for a range)
	// CollectionRules.HighCpu.Trigger.Settings.GreaterThen: unknown setting: did you mean GreaterThan?
	// CollectionRules.HighCpu.Actions[0].Settings.Duration: "30": give a unit (e.g. 30s) or TimeSpan text (00:00:30)
}

// An Engine fed counter samples fires a rule when its threshold holds for
// the sliding window; Status says so.
func ExampleEngine() {
	cfg, err := rules.Load([]rules.Source{{Data: []byte(`
CollectionRules:
  Exceptions:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: exception-count, GreaterThan: 100, SlidingWindowDuration: 3s}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
`)}}, rules.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := rules.New(cfg, rules.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	e.Add(rules.ProcessInfo{PID: 42, Name: "shop"}, nil) // a *diag.Client in real use
	t0 := time.Now()
	for i, v := range []float64{500, 20, 300, 400, 250} { // per second
		e.Sample(42, &counters.Sample{Time: t0.Add(time.Duration(i) * time.Second), Provider: "System.Runtime",
			Name: "exception-count", Kind: counters.KindRate, Value: v, Interval: time.Second})
	}
	for e.Status()[0].State != rules.StateFinished { // the action runs on its own goroutine
		time.Sleep(time.Millisecond)
	}
	s := e.Status()[0]
	fmt.Println(s.Rule, s.State, s.Executions, s.LastTriggerWhat)
	// Output: Exceptions Finished 1 System.Runtime/exception-count = 250 for 00:00:03
}

func ExampleConfig_WriteListing() {
	cfg, _ := rules.Load([]rules.Source{{Data: []byte(`
CollectionRules:
  Errors:
    Filters: [{Key: ProcessName, Value: shop}]
    Trigger: {Type: AspNetResponseStatus, Settings: {StatusCodes: ["500-599"], ResponseCount: 10}}
    Actions: [{Type: CollectDump}]
`)}}, rules.LoadOptions{})
	cfg.WriteListing(os.Stdout)
	// Output:
	// 1 collection rule:
	//   Errors: AspNetResponseStatus 10 responses 500-599 within 00:01:00 -> CollectDump; processes ProcessName=shop; at most 5
}
