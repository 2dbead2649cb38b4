package exceptions_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/exceptions"
	"github.com/clrdiag/clrdiag/transport"
)

// The InvalidOperationExceptions a process throws in 30 seconds, thrown
// anywhere but in its health checks, as dotnet-monitor's text.
func ExampleCollect() {
	client := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: "/tmp/dotnet-diagnostic-4242-1-socket", PID: 4242}, nil)
	cfg := exceptions.Config{Filters: exceptions.Filters{
		Include: []exceptions.Filter{{ExceptionType: "System.InvalidOperationException"}},
		Exclude: []exceptions.Filter{{TypeName: "App.HealthChecks"}},
	}}
	res, err := exceptions.Collect(context.Background(), client, cfg, exceptions.CollectConfig{Duration: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	_ = exceptions.WriteText(os.Stdout, res.Exceptions)
}
