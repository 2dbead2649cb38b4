//go:build linux

package exceptions_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/exceptions"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/transport"
)

// Collect on real runtimes: the Workloads target's "throw" command throws
// 7 InvalidOperationException ("invalid 0".."invalid 6") from
// Workloads.Thrower.Invalid and 3 ArgumentException ("argument 0"..
// "argument 2") from Workloads.Thrower.Argument, both called by
// Thrower.Throw, and prints THROWN 7 3: the ground truth the result is
// checked against, exception by exception, in order.
func TestCollectReal(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
		c := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}, nil)
		started := make(chan struct{})
		type out struct {
			res *exceptions.Result
			err error
		}
		done := make(chan out, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		go func() {
			res, err := exceptions.Collect(ctx, c, exceptions.Config{}, exceptions.CollectConfig{Duration: 4 * time.Second, Started: func() { close(started) }})
			done <- out{res, err}
		}()
		select {
		case <-started:
		case o := <-done:
			t.Fatalf("the session did not start: %v", o.err)
		}
		// On .NET Core 3.1 the runtime starts sending a new session's
		// ExceptionThrown events a moment after it has answered the
		// command (a first "throw" right away is sometimes missed, whole
		// or in part): the target throws its batch every 100 ms while the
		// session runs, and what arrives must follow the batch exactly,
		// exception by exception, from wherever it starts.
		batches := 0
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); batches++ {
			tg.Send(t, "throw")
			if got := tg.Expect(t, "THROWN", 30*time.Second); got != "THROWN 7 3" {
				t.Fatalf("target says %q", got)
			}
			time.Sleep(100 * time.Millisecond)
		}
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		res := o.res
		if len(res.Warnings) > 0 || res.Dropped != 0 || res.Undecoded != 0 || res.Filtered != 0 {
			t.Errorf("warnings %q, dropped %d, undecoded %d, filtered %d", res.Warnings, res.Dropped, res.Undecoded, res.Filtered)
		}
		var batch []string
		for i := range 7 {
			batch = append(batch, fmt.Sprintf("System.InvalidOperationException: invalid %d at Workloads.Thrower.Invalid < Workloads.Thrower.Throw", i))
		}
		for i := range 3 {
			batch = append(batch, fmt.Sprintf("System.ArgumentException: argument %d at Workloads.Thrower.Argument < Workloads.Thrower.Throw", i))
		}
		if len(res.Exceptions) < len(batch) || len(res.Exceptions) > batches*len(batch) {
			t.Fatalf("%d exceptions from %d batches of %d", len(res.Exceptions), batches, len(batch))
		}
		var got []string
		for _, e := range res.Exceptions {
			var names []string
			for _, f := range e.Stack.Frames {
				names = append(names, f.Name())
			}
			line := e.TypeName + ": " + e.Message
			if len(names) >= 2 {
				line += " at " + names[0] + " < " + names[1]
			} else {
				line += " at " + strings.Join(names, " < ")
			}
			got = append(got, line)
			if e.Stack.ThreadID != res.Exceptions[0].Stack.ThreadID || len(e.Stack.Frames) == 0 || e.Stack.Frames[0].ModuleName != "Workloads" ||
				e.HResult == 0 || e.Timestamp.IsZero() || time.Since(e.Timestamp) > time.Minute {
				t.Errorf("%+v", e)
			}
		}
		first := slices.Index(batch, got[0])
		if first < 0 {
			t.Fatalf("first exception %q is not one the target threw", got[0])
		}
		for i, g := range got {
			if want := batch[(first+i)%len(batch)]; g != want {
				t.Fatalf("exception %d: %q, want %q (the batch from %d)\n%s", i+1, g, want, first, strings.Join(got, "\n"))
			}
		}
		t.Logf("%s: %d exceptions from %d batches (the first from exception %d of its batch), %d unresolved frames; first stack: %+v",
			rt, len(res.Exceptions), batches, first+1, res.UnresolvedFrames, res.Exceptions[0].Stack.Frames)
	})
}
