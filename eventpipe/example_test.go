package eventpipe_test

import (
	"fmt"

	"github.com/clrdiag/clrdiag/eventpipe"
)

func ExampleCompose() {
	plan, err := eventpipe.Compose(eventpipe.Request{
		Providers: "MyEventSource:0x3:verbose:EventCounterIntervalSec=1",
		ClrEvents: "gc+exception",
	})
	if err != nil {
		panic(err)
	}
	for _, p := range plan.Providers {
		fmt.Printf("%s keywords=%#x level=%v args=%q (%s)\n", p.Name, p.Keywords, p.Level, p.ArgString(), p.EnabledBy)
	}
	fmt.Printf("rundown=%#x\n", plan.RundownKeyword)
	// Output:
	// MyEventSource keywords=0x3 level=Verbose args="EventCounterIntervalSec=1" (--providers)
	// Microsoft-Windows-DotNETRuntime keywords=0x8001 level=Informational args="" (--clrevents)
	// rundown=0x80020139
}
