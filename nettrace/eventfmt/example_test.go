package eventfmt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
)

// Print the garbage collections of a trace, one text line each.
func ExamplePrint() {
	trace, err := buildTrace() // or os.Open("app.nettrace")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := nettrace.NewReader(bytes.NewReader(trace))
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := eventfmt.NewFilter([]string{"Microsoft-Windows-DotNETRuntime"}, []string{"GC/Start"})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := eventfmt.Print(context.Background(), os.Stdout, r, f, eventfmt.Options{Limit: 1}, "app.nettrace")
	fmt.Println(n, err)
	// Output:
	// 1970-01-01T00:00:00.0000010Z  Microsoft-Windows-DotNETRuntime  GCStart(1)  thread=9  Count=7  Depth=2  Reason=1  Type=0  ClrInstanceID=3  ClientSequenceNumber=0
	// 1 <nil>
}
