package counters_test

import (
	"context"
	"fmt"
	"time"

	"github.com/clrdiag/clrdiag/counters"
)

// The providers a session enables for a --counters value: each EventSource
// with EventCounterIntervalSec, and the Meters through the
// System.Diagnostics.Metrics provider.
func ExampleNewPlan() {
	specs, err := counters.ParseSpecs(`System.Runtime[cpu-usage],EventCounters\Microsoft.AspNetCore.Hosting`)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := counters.NewPlan(counters.Config{Specs: specs, RefreshInterval: 2 * time.Second,
		RuntimeMajor: 8, ClientID: "c1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range plan.Providers {
		fmt.Println(p)
	}
	// Output:
	// System.Runtime:0x0:4:EventCounterIntervalSec=2
	// Microsoft.AspNetCore.Hosting:0x0:4:EventCounterIntervalSec=2
	// System.Diagnostics.Metrics:0x2:4:SessionId=SHARED;Metrics=System.Runtime;RefreshInterval=2;MaxTimeSeries=1000;MaxHistograms=10;ClientId=c1
}

// A live session: Start it with a *diag.Client and Run it until the
// context ends.
func ExampleStart() {
	run := func(ctx context.Context, target counters.Target) error {
		s, err := counters.Start(ctx, target, counters.Config{}) // System.Runtime every second
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Run(ctx, func(u counters.Update) error {
			if u.Warning != nil {
				fmt.Println("warning:", u.Warning)
				return nil
			}
			fmt.Println(u.Sample.Provider, u.Sample.Label(), u.Sample.Value)
			return nil
		})
	}
	_ = run
}
