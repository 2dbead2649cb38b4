//go:build unix

package eventpipe_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// A session that stops at the event it waits for: the consumer decodes the
// stream as it arrives and asks for the stop when it sees "Ready"; the
// rundown then arrives as after any stop. The fake runtime writes Tick,
// Ready and Tick, then one more event after the stop.
func ExampleSession_DrainDecode() {
	srv, err := ipctest.NewServer(ipctest.Config{Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		w, _ := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{})
		tick := &nettrace.Metadata{ID: 1, ProviderName: "MyEventSource", EventID: 1, EventName: "Tick"}
		ready := &nettrace.Metadata{ID: 2, ProviderName: "MyEventSource", EventID: 2, EventName: "Ready"}
		_ = w.AddMetadata(tick)
		_ = w.AddMetadata(ready)
		for i, md := range []*nettrace.Metadata{tick, ready, tick} {
			_ = w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: uint32(i + 1)})
		}
		_ = w.Flush()
		<-s.Stopped
		_ = w.WriteEvent(&nettrace.Event{Metadata: tick, SequenceNumber: 4}) // the "rundown"
		return w.Close()
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()
	sess, err := eventpipe.Start(ctx, diag.NewClient(srv, nil), eventpipe.Config{Providers: []eventpipe.Provider{{Name: "MyEventSource"}}})
	if err != nil {
		panic(err)
	}
	var trace bytes.Buffer // a file or a Spool in real use
	events := 0
	res, err := sess.DrainDecode(ctx, &trace, eventpipe.DrainConfig{}, func(r io.Reader, stop func(eventpipe.StopReason)) error {
		rd, err := nettrace.NewReader(r)
		if err != nil {
			return err
		}
		for ev, err := range rd.All() {
			if err != nil {
				return err
			}
			events++
			if ev.Metadata.EventName == "Ready" {
				stop(eventpipe.StopEvent)
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, rundown %s, %d events decoded, %d warnings\n", res.Reason, res.Rundown, events, len(res.Warnings()))
	// Output: stopping event seen, rundown completed, 4 events decoded, 0 warnings
}
