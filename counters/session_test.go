package counters

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipctest"
)

// metricsArgs returns the arguments the client gave the Metrics provider.
func metricsArgs(s *ipctest.TracingSession) map[string]string {
	args := map[string]string{}
	for _, p := range s.Request.Providers {
		if p.Name != MetricsProvider {
			continue
		}
		for _, kv := range strings.Split(p.Args, ";") {
			k, v, _ := strings.Cut(kv, "=")
			args[k] = v
		}
	}
	return args
}

// TestSessionFakeRuntimes runs sessions against fake .NET 3.1, 6 and 8
// runtimes that publish Meter values for the session id the client chose
// (and for another session), and checks the id choice, the filtering and
// that cancelling the context stops the session.
func TestSessionFakeRuntimes(t *testing.T) {
	for _, tt := range []struct {
		rt      ipctest.Runtime
		version string
		shared  bool
	}{{ipctest.NET3_1, "", false}, {ipctest.NET6, "6.", false}, {ipctest.NET8, "8.", true}} {
		t.Run(tt.rt.String(), func(t *testing.T) {
			var mu sync.Mutex
			var seen map[string]string
			stopped := make(chan struct{})
			srv, err := ipctest.NewServer(ipctest.Config{Runtime: tt.rt, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
				args := metricsArgs(s)
				mu.Lock()
				seen = args
				mu.Unlock()
				st := newStream(t)
				sid := args["SessionId"]
				st.metric(7, 2, sid, "Shop", "", "orders", "Counter`1", "", "", "", "", "", int32(1), "")
				st.metric(4, 2, "someone-else", "Shop", "", "orders", "", "", "100", "100", int32(1))
				st.metric(4, 2, sid, "Shop", "", "orders", "", "", "3", "3", int32(1))
				st.mean("System.Runtime", "cpu-usage", "CPU Usage", "%", 1000, 7, 1, 7, 7)
				n := st.flush() // the stream stays open, as a live session's
				if _, err := s.Stream.Write(st.buf.Bytes()[:n]); err != nil {
					return err
				}
				select {
				case <-s.Stopped:
					close(stopped)
				case <-ctx.Done():
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sess, err := Start(ctx, diag.NewClient(srv, nil), Config{Specs: []Spec{{Provider: "System.Runtime"}, {Provider: "Shop"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if !strings.HasPrefix(sess.RuntimeVersion, tt.version) || (tt.version == "") != (sess.RuntimeVersion == "") {
				t.Errorf("runtime version %q", sess.RuntimeVersion)
			}
			runCtx, stop := context.WithCancel(ctx)
			var got []string
			err = sess.Run(runCtx, func(u Update) error {
				if u.Warning != nil {
					t.Errorf("warning %v", u.Warning)
					return nil
				}
				got = append(got, u.Sample.Provider+"/"+u.Sample.Name+"="+formatValue(u.Sample.Value))
				if len(got) == 2 {
					stop()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			if strings.Join(got, " ") != "Shop/orders=3 System.Runtime/cpu-usage=7" {
				t.Errorf("samples %q", got)
			}
			select {
			case <-stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("cancelling Run did not send StopTracing")
			}
			mu.Lock()
			defer mu.Unlock()
			if (seen["SessionId"] == SharedSessionID) != tt.shared || seen["Metrics"] != "System.Runtime,Shop" || seen["ClientId"] == "" {
				t.Errorf("Metrics arguments %v", seen)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Start(ctx, diag.NewClient(srv, nil), Config{RefreshInterval: time.Nanosecond}); !errors.Is(err, ErrConfig) {
		t.Fatalf("bad interval: %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("a bad configuration talked to the process")
	}
	srv.Close()
	if _, err := Start(ctx, diag.NewClient(srv, nil), Config{}); err == nil {
		t.Fatal("Start on a closed server succeeded")
	}
}
