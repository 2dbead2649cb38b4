//go:build unix

package logs_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/transport"
)

// collectDemo runs Collect against a real .NET Core 3.1 process whose
// stand-in Microsoft-Extensions-Logging EventSource (testdata/targets/Logging.cs:
// the 3.1 runtime package has no Microsoft.Extensions.Logging) writes the
// demo sequence, and returns what Collect delivered.
func collectDemo(t *testing.T, cfg logs.Config) []*logs.Entry {
	t.Helper()
	rt := dotnettest.Find(t)
	tg := rt.Start(t, rt.Build(t, "Logging"), nil, nil)
	client := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var got []*logs.Entry
	done := make(chan error, 1)
	go func() {
		done <- logs.Collect(ctx, client, cfg, logs.CollectConfig{}, func(e *logs.Entry) error {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
			return nil
		})
	}()
	tg.Send(t, "wait-enabled")
	if l := tg.Expect(t, "", 30*time.Second); l != "ENABLED" {
		select {
		case err := <-done:
			t.Fatalf("target: %s; Collect: %v", l, err)
		default:
		}
		t.Fatalf("target: %s; stderr %s", l, tg.Stderr())
	}
	tg.Send(t, "demo")
	tg.Expect(t, "DEMO done", 30*time.Second)
	// The process exits: its session ends and Collect returns with
	// everything the stream held.
	tg.Send(t, "exit 0")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Collect: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Collect did not return after the process exited")
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

func TestCollectRealRuntime(t *testing.T) {
	got := collectDemo(t, logs.Config{DefaultLevel: logs.Information})
	type want struct {
		level    logs.Level
		category string
		id       int
		name     string
		message  string
		scopes   string
		exc      string
	}
	wants := []want{
		{logs.Information, "App.Startup", 1, "", "Started in 12 ms", "", ""},
		{logs.Warning, "App.Requests", 10, "", "Slow request /orders took 1500 ms", "RequestId:42", ""},
		{logs.Error, "App.Orders", 20, "OrderFailed", "Order 7 failed", "RequestId:42 => Order 7", "System.InvalidOperationException: out of stock"},
		{logs.Critical, "Microsoft.Hosting.Lifetime", 0, "", "Stopping", "", ""},
	}
	if len(got) != len(wants) {
		for _, e := range got {
			t.Logf("%+v", e)
		}
		t.Fatalf("%d entries, want %d (the Debug one filtered)", len(got), len(wants))
	}
	for i, w := range wants {
		e := got[i]
		var scopes []string
		for _, s := range e.Scopes {
			scopes = append(scopes, s.Message())
		}
		exc := ""
		if e.Exception != nil {
			exc = e.Exception.Type + ": " + e.Exception.Message
			if !strings.Contains(e.Exception.Details, "at Program.Demo") || e.Exception.HResult != -2146233079 {
				t.Errorf("exception %+v", e.Exception)
			}
		}
		if e.Level != w.level || e.Category != w.category || e.EventID != w.id || e.EventName != w.name || e.Message != w.message ||
			strings.Join(scopes, " => ") != w.scopes || exc != w.exc {
			t.Errorf("entry %d: %v %s[%d] %q %q scopes %q exc %q\nwant %+v", i, e.Level, e.Category, e.EventID, e.EventName, e.Message, scopes, exc, w)
		}
		if e.Time.IsZero() || time.Since(e.Time) > time.Hour {
			t.Errorf("entry %d time %v", i, e.Time)
		}
	}
	// Level 3 is Warning, by ILogger's numbers.
	if got[1].Level != 3 || got[1].Level.String() != "Warning" {
		t.Errorf("level %d %s", got[1].Level, got[1].Level)
	}
	if st := got[0].State; len(st) != 2 || st[0] != (logs.KV{Key: "Elapsed", Value: "12"}) || st[1] != (logs.KV{Key: "{OriginalFormat}", Value: "Started in {Elapsed} ms"}) {
		t.Errorf("state %+v", st)
	}
}

// The filters reach the process (FilterSpecs): a category set to Critical
// sends nothing below it, and a lower default level lets Debug through.
func TestCollectRealRuntimeFilters(t *testing.T) {
	got := collectDemo(t, logs.Config{DefaultLevel: logs.Debug, Filters: []logs.Filter{{Category: "App.Orders", Level: logs.Critical}, {Category: "Microsoft*", Level: logs.None}}})
	var cats []string
	for _, e := range got {
		cats = append(cats, e.Level.String()+" "+e.Category)
	}
	if strings.Join(cats, ", ") != "Information App.Startup, Debug App.Startup, Warning App.Requests" {
		t.Fatalf("entries: %s", strings.Join(cats, ", "))
	}
}

// webURL is the URL the Web target prints on its ready line.
func webURL(t *testing.T, tg *dotnettest.Target) string {
	t.Helper()
	f := strings.Fields(tg.ReadyLine)
	if len(f) < 3 || !strings.HasPrefix(f[2], "http://") {
		t.Fatalf("ready line %q carries no URL", tg.ReadyLine)
	}
	return f[2]
}

// The real Microsoft.Extensions.Logging of an ASP.NET Core app on .NET 8
// and later (testdata/targets/Web.cs): its LoggingEventSource has the
// newer event layout (the message and the Activity ids in MessageJson),
// and the hosting layer opens a scope per request.
func TestCollectRealAspNetCore(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
		base := webURL(t, tg)
		client := diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := logs.Config{DefaultLevel: logs.Error, Filters: []logs.Filter{{Category: "Clrdiag.Web*", Level: logs.Debug}}}
		var mu sync.Mutex
		var got []*logs.Entry
		done := make(chan error, 1)
		go func() {
			done <- logs.Collect(ctx, client, cfg, logs.CollectConfig{}, func(e *logs.Entry) error {
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
				return nil
			})
		}()
		// The session enables the logger asynchronously: ask until a
		// message arrives.
		hc := &http.Client{Timeout: 10 * time.Second}
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := hc.Get(base + "/log")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no log entry within 30s")
			}
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("Collect: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		e := got[0]
		if e.Level != logs.Warning || e.Category != "Clrdiag.Web.Requests" || e.EventID != 42 || e.EventName != "SlowRequest" || e.Message != "Slow request /log took 123 ms" {
			t.Fatalf("%+v", e)
		}
		if len(e.State) != 3 || e.State[0] != (logs.KV{Key: "Route", Value: "/log"}) || e.State[2].Key != "{OriginalFormat}" {
			t.Errorf("state %+v", e.State)
		}
		var scopes []string
		for _, s := range e.Scopes {
			scopes = append(scopes, s.Message())
		}
		if !strings.Contains(strings.Join(scopes, " => "), "RequestPath:/log") {
			t.Errorf("scopes %q", scopes)
		}
		for _, x := range got {
			if !strings.HasPrefix(x.Category, "Clrdiag.Web") && x.Level < logs.Error {
				t.Errorf("an entry the filters exclude: %+v", x)
			}
		}
	})
}
