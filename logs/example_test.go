package logs_test

import (
	"fmt"
	"os"
	"time"

	"github.com/clrdiag/clrdiag/logs"
)

// The providers of a configuration carry its filters to the process.
func ExampleConfig_FilterSpecs() {
	cfg := logs.Config{DefaultLevel: logs.Warning, Filters: []logs.Filter{{Category: "App.Orders", Level: logs.Debug}}}
	fmt.Println(cfg.FilterSpecs())
	fmt.Println(cfg.Allows("App.Orders", logs.Debug), cfg.Allows("App.Web", logs.Information))
	for _, p := range cfg.Providers() {
		fmt.Printf("%s 0x%x\n", p.Name, p.Keywords)
	}
	// Output:
	// App.Orders:Debug;*:Warning
	// true false
	// Microsoft-Extensions-Logging 0xc
	// System.Threading.Tasks.TplEventSource 0x80
}

func ExampleNewTextWriter() {
	w := logs.NewTextWriter(os.Stdout)
	w.Write(&logs.Entry{Time: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Level: logs.Warning, Category: "App.Web", EventID: 3,
		Message: "Slow request /orders", Scopes: []logs.Scope{{Values: []logs.KV{{Key: "RequestId", Value: "42"}}}}})
	// Output:
	// 2026-05-01 10:00:00Z warn: App.Web[3]
	//       => RequestId:42
	//       Slow request /orders
}
