//go:build unix

package gcdump

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// Canceling once the walk ended abandons the session at once, whether the
// StopTracing is pending or the rundown arriving, and names the step.
func TestCollectCanceledAfterWalk(t *testing.T) {
	never := func(set, id uint8) ipctest.Fault {
		if set == ipc.SetEventPipe && id == ipc.CmdStopTracing {
			return ipctest.FaultNeverAnswer
		}
		return ipctest.FaultNone
	}
	for _, tc := range []struct {
		name  string
		phase eventpipe.DrainPhase
		opt   gcdumptest.Options
		fault func(set, id uint8) ipctest.Fault
		op    string
	}{
		{"stopping", eventpipe.PhaseStopping, gcdumptest.Options{}, never, "stop the heap session"},
		{"rundown", eventpipe.PhaseRundown, gcdumptest.Options{RundownHangs: true}, nil, "wait for the rundown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(gcdumptest.Leaky(5), tc.opt), Fault: tc.fault})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var canceledAt time.Time
			var walked bool
			_, err = Collect(ctx, diag.NewClient(srv, nil), CollectConfig{
				NoFlush: true, Timeout: time.Hour, StopTimeout: time.Hour, RundownTimeout: time.Hour,
				Notify: func(n Note) { walked = walked || n.Kind == NoteWalked },
				onDrain: func(p eventpipe.DrainProgress) {
					if p.Phase == tc.phase && canceledAt.IsZero() {
						canceledAt = time.Now()
						cancel()
					}
				},
			})
			var ce *CollectError
			if !errors.As(err, &ce) || ce.Op != tc.op || !errors.Is(err, context.Canceled) {
				t.Fatalf("%v", err)
			}
			if d := time.Since(canceledAt); d > 10*time.Second {
				t.Errorf("the abandon took %v", d)
			}
			if !walked {
				t.Errorf("no NoteWalked before the stop")
			}
		})
	}
}
