package stackstest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// The session's events, written into a buffer by a session that is already
// stopped. In a test, call WriteSession from ipctest.Config.Tracing instead.
func Example() {
	var buf bytes.Buffer
	stopped := make(chan struct{})
	close(stopped)
	if err := stackstest.WriteSession(context.Background(), &ipctest.TracingSession{Stream: &buf, Stopped: stopped}, stackstest.Config{}); err != nil {
		fmt.Println(err)
		return
	}
	r, err := nettrace.NewReader(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	var ev nettrace.Event
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("thread %#x: %s event %d\n", ev.ThreadID, ev.Metadata.ProviderName, ev.Metadata.EventID)
	}
	// Output:
	// thread 0x101: Microsoft-DotNETCore-SampleProfiler event 0
	// thread 0x202: Microsoft-DotNETCore-SampleProfiler event 0
	// thread 0x101: Microsoft-DotNETCore-SampleProfiler event 0
	// thread 0x202: Microsoft-DotNETCore-SampleProfiler event 0
	// thread 0x303: Microsoft-Windows-DotNETRuntimeRundown event 154
	// thread 0x303: Microsoft-Windows-DotNETRuntimeRundown event 144
	// thread 0x303: Microsoft-Windows-DotNETRuntimeRundown event 144
	// thread 0x303: Microsoft-Windows-DotNETRuntimeRundown event 144
}
