//go:build unix

package monitor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/rules"
)

// The monitor's configuration file adds providers to /metrics as
// dotnet-monitor's does (Metrics:Providers, Metrics:Meters), besides the
// --metrics-counters flag (issue 31: "flag and config").
func TestMetricsFromConfigFile(t *testing.T) {
	fc := fleetConfig(t, `Metrics:
  Providers:
    - {ProviderName: My-Source, CounterNames: [requests, latency]}
    - {ProviderName: Other-Source}
  Meters:
    - {MeterName: MyApp.Orders, InstrumentNames: [orders.placed]}
`)
	if want := "My-Source[requests,latency],Other-Source,MyApp.Orders[orders.placed]"; fc.MetricsCounters != want {
		t.Fatalf("MetricsCounters %q, want %q", fc.MetricsCounters, want)
	}
	env, err := monitor.LoadFleetConfig("", []string{"Metrics__Meters__0__MeterName=Env.Meter", "Metrics__Meters__0__InstrumentNames__0=hits"})
	if err != nil || env.MetricsCounters != "Env.Meter[hits]" {
		t.Errorf("from the environment: %v %+v", err, env)
	}
	var listing strings.Builder
	if err := fc.WriteListing(&listing); err != nil || !strings.Contains(listing.String(), "/metrics also reads My-Source[requests,latency]") {
		t.Errorf("listing (%v):\n%s", err, listing.String())
	}

	for yaml, want := range map[string]string{
		"Metrics:\n  Providers:\n    - {CounterNames: [a]}\n":               "Metrics.Providers[0].ProviderName: required",
		"Metrics:\n  UpdateIntervalSeconds: 5\n":                            "UpdateIntervalSeconds",
		"Metrics:\n  Meters:\n    - {MeterName: 'Bad[Name'}\n":              "Metrics.Meters[0].MeterName: \"Bad[Name\" with InstrumentNames",
		"Metrics:\n  Providers:\n    - {ProviderName: X, CounterName: a}\n": "CounterName",
	} {
		_, err := loadFleetConfig(t, yaml)
		if !errors.Is(err, rules.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want a configuration error naming %s", yaml, err, want)
		}
	}

	// The collector asks the runtime for the configured EventSource.
	srv := fake(t, ipctest.Config{Runtime: ipctest.NET8, PID: 91})
	hs := serve(t, monitor.Config{Fleet: fc, MetricsWindow: time.Second, DiscoveryInterval: 50 * time.Millisecond,
		Source: monitor.StaticSource{{PID: 91, Name: "app", Dialer: srv}}})
	deadline := time.Now().Add(30 * time.Second)
	for !asked(srv, "My-Source", "Other-Source", "System.Runtime") {
		if time.Now().After(deadline) {
			t.Fatalf("no counters session asked for My-Source and Other-Source: %+v", srv.Requests())
		}
		do(t, hs, "GET", "/metrics")
		time.Sleep(50 * time.Millisecond)
	}
}

// asked reports whether one CollectTracing request named every provider.
func asked(srv *ipctest.Server, names ...string) bool {
	for _, r := range srv.Requests() {
		req, ok := r.Request.(*ipc.CollectTracingRequest)
		if !ok {
			continue
		}
		n := 0
		for _, want := range names {
			for _, p := range req.Providers {
				if p.Name == want {
					n++
					break
				}
			}
		}
		if n == len(names) {
			return true
		}
	}
	return false
}

// loadFleetConfig writes yaml to a file and loads it, returning the error.
func loadFleetConfig(t *testing.T, yaml string) (*monitor.FleetConfig, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "monitor.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return monitor.LoadFleetConfig(p, nil)
}
