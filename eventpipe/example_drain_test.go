//go:build unix

package eventpipe_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
)

// A session collected for a while, stopped, and drained with its rundown
// into a buffer (a file in real use). The fake runtime writes one event,
// then another after the stop.
func ExampleSession_Drain() {
	srv, err := ipctest.NewServer(ipctest.Config{Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		w, _ := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		md := &nettrace.Metadata{ID: 1, ProviderName: "MyEventSource", EventID: 1, EventName: "Tick"}
		_ = w.AddMetadata(md)
		_ = w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: 1})
		_ = w.Flush()
		<-s.Stopped
		_ = w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: 2}) // the "rundown"
		return w.Close()
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	plan, err := eventpipe.Compose(eventpipe.Request{Providers: "MyEventSource"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	sess, err := eventpipe.Start(ctx, diag.NewClient(srv, nil), plan.Config())
	if err != nil {
		panic(err)
	}
	var trace bytes.Buffer
	res, err := sess.Drain(ctx, &trace, eventpipe.DrainConfig{Duration: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	rd, err := nettrace.NewReader(&trace)
	if err != nil {
		panic(err)
	}
	for _, err := range rd.All() {
		if err != nil {
			panic(err)
		}
	}
	fmt.Printf("%s, rundown %s, %d events\n", res.Reason, res.Rundown, rd.Stats().Events)
	// Output: duration reached, rundown completed, 2 events
}
