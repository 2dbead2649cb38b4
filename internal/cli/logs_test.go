//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/ipctest"
)

func TestLogsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"logs", "-p", "1", "--level", "Loud"},
		{"logs", "-p", "1", "--filter", "NoLevel"},
		{"logs", "-p", "1", "--filter", "A:Loud"},
		{"logs", "-p", "1", "--format", "xml"},
		{"logs", "-p", "1", "--duration", "-1s"},
	} {
		if code, _, stderr := run(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
	cfg, err := logsConfig("warn", []string{"Microsoft.AspNetCore*:Error", "App:1"}, true)
	if err != nil || cfg.FilterSpecs() != "UseAppFilters;Microsoft.AspNetCore*:Error;App:Debug" {
		t.Fatalf("%q %v", cfg.FilterSpecs(), err)
	}
}

// clrdiag logs against a real .NET Core 3.1 process whose stand-in
// Microsoft-Extensions-Logging EventSource (testdata/targets/Logging.cs)
// logs the demo sequence; the command ends when the process exits.
func TestLogsRealRuntime(t *testing.T) {
	rt := dotnettest.Find(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			tg := rt.Start(t, rt.Build(t, "Logging"), nil, nil)
			r := startCLI("logs", "-p", fmt.Sprint(tg.PID), "--level", "Warning", "--filter", "App.Startup:Debug", "--format", format)
			tg.Send(t, "wait-enabled")
			if l := tg.Expect(t, "", 30*time.Second); l != "ENABLED" {
				t.Fatalf("target: %s; clrdiag: %s", l, r.stderr.String())
			}
			tg.Send(t, "demo")
			tg.Expect(t, "DEMO done", 30*time.Second)
			tg.Send(t, "exit 0")
			r.wait(t, 30*time.Second)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr.String())
			}
			out := r.stdout.String()
			if format == "text" {
				for _, want := range []string{
					" info: App.Startup[1]\n      Started in 12 ms\n",
					" dbug: App.Startup[2]\n      Config loaded\n",
					" warn: App.Requests[10]\n      => RequestId:42\n      Slow request /orders took 1500 ms\n",
					" fail: App.Orders[20]\n      => RequestId:42 => Order 7\n      Order 7 failed\n      System.InvalidOperationException: out of stock\n         at Program.Demo()",
					" crit: Microsoft.Hosting.Lifetime[0]\n      Stopping\n",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 5 {
				t.Fatalf("%d lines:\n%s", len(lines), out)
			}
			var e struct {
				LogLevel, EventId, EventName, Category, Message, Exception string
				State, Scopes                                              map[string]string
			}
			if err := json.Unmarshal([]byte(lines[3]), &e); err != nil {
				t.Fatal(err)
			}
			if e.LogLevel != "Error" || e.EventId != "20" || e.EventName != "OrderFailed" || e.Category != "App.Orders" || e.Message != "Order 7 failed" ||
				!strings.HasPrefix(e.Exception, "System.InvalidOperationException: out of stock") || e.State["OrderId"] != "7" || e.Scopes["RequestId"] != "42" || e.Scopes["OrderId"] != "7" {
				t.Fatalf("%+v", e)
			}
		})
	}
}

// clrdiag logs records and replays like every command that talks to a
// runtime (a fake one here: the replay needs no process).
func TestLogsRecordReplay(t *testing.T) {
	recordReplay(t, recordReplayCase{name: "logs", cfg: ipctest.Config{Runtime: ipctest.NET8, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		wellBehaved(t, s)
		return nil
	}}, args: []string{"logs", "--duration", "300ms"}})
}
