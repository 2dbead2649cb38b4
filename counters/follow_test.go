package counters

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// A fake .NET Core 3.1 runtime whose first session publishes a few values
// and then nothing (as when another session ends on 3.x) while staying
// open; later sessions publish every 50 ms. Follow reports the stall, stops
// the stalled session before it opens the next (stopping after would stop
// the new session's counters on a real 3.x runtime) and values resume.
func TestFollowReopensAStalledSession(t *testing.T) {
	var sessions atomic.Int32
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		n := sessions.Add(1)
		st := newStream(t)
		off := 0
		for i := 0; n > 1 || i < 3; i++ {
			st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 100, float64(n), 1, 1, 1)
			end := st.flush()
			if _, err := s.Stream.Write(st.buf.Bytes()[off:end]); err != nil {
				return nil
			}
			off = end
			select {
			case <-s.Stopped:
				return nil
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
		select { // stalled: open, silent
		case <-s.Stopped:
		case <-ctx.Done():
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var values []float64
	var stalls []error
	var opened []bool
	err = Follow(ctx, diag.NewClient(srv, nil), Config{RefreshInterval: 100 * time.Millisecond, StallTimeout: 400 * time.Millisecond}, FollowConfig{
		Started: func(s *Session, reopened bool) error {
			mu.Lock()
			defer mu.Unlock()
			opened = append(opened, reopened)
			return nil
		},
		Stalled: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			stalls = append(stalls, err)
		},
	}, func(u Update) error {
		mu.Lock()
		defer mu.Unlock()
		if u.Sample != nil {
			values = append(values, u.Sample.Value)
			if u.Sample.Value == 2 && len(values) >= 5 {
				cancel()
			}
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stalls) != 1 || !errors.Is(stalls[0], ErrStalled) || len(opened) != 2 || opened[0] || !opened[1] {
		t.Fatalf("stalls %v, opened %v", stalls, opened)
	}
	if values[0] != 1 || values[len(values)-1] != 2 {
		t.Errorf("values %v: want the first session's, then the second's", values)
	}
	// Start, stop (the stalled one), start, stop (at the end), in order.
	var cmds []string
	for _, r := range srv.Requests() {
		switch r.Request.(type) {
		case *ipc.CollectTracingRequest:
			cmds = append(cmds, "start")
		case *ipc.StopTracingRequest:
			cmds = append(cmds, "stop")
		}
	}
	if len(cmds) != 4 || cmds[0] != "start" || cmds[1] != "stop" || cmds[2] != "start" || cmds[3] != "stop" {
		t.Errorf("commands %v", cmds)
	}
}

// A session that never published anything is not stalled (a counter that
// does not exist, or a runtime yet to publish): Run waits.
func TestRunNoStallBeforeTheFirstValue(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		st := newStream(t)
		st.metric(1, 0, "not a counter value")
		n := st.flush()
		if _, err := s.Stream.Write(st.buf.Bytes()[:n]); err != nil {
			return nil
		}
		<-ctx.Done()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := Start(context.Background(), diag.NewClient(srv, nil), Config{RefreshInterval: 10 * time.Millisecond, StallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx, func(Update) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
}
