package otlp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/realcomp"
	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/otlp"
	"github.com/clrdiag/clrdiag/weighted"
	pprof "github.com/google/pprof/profile"
)

func wallPprof(t *testing.T) []byte {
	t.Helper()
	f, err := os.Open(testcapture.Path(t, "clrdiag/hot-3.1.2-linux-x64.nettrace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Read(f, profile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	wp, err := p.Weighted(profile.MeasureWall)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := weighted.WritePprof(&b, wp); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCollectorReceivesProfiles converts the wall-time pprof of a real
// capture into OTLP profiles and checks, in what a real collector (with
// its profiles feature gate) printed, one profile per pprof sample type
// whose samples have the pprof's values (totals and counts read from the
// pprof itself with google/pprof) and thread attributes.
func TestCollectorReceivesProfiles(t *testing.T) {
	c := realcomp.StartCollector(t, realcomp.CollectorOptions{Profiles: true})
	e := start(t, otlp.Config{Endpoint: c.Endpoint, Profiles: true})
	res := telemetry.ProcessResource(telemetry.Process{PID: 9, Name: "Hot"}, func(string) string { return "" })
	data := wallPprof(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.ExportProfile(ctx, res, "clrdiag", data); err != nil {
		t.Fatal(err)
	}
	pp, err := pprof.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	n := len(pp.SampleType)
	out := waitFor(t, c, fmt.Sprintf("%d profiles", n), func(o realcomp.DebugOutput) bool { return len(o.Profiles) >= n })
	if len(out.Profiles) != n {
		t.Fatalf("%d profiles, want %d (one per sample type)", len(out.Profiles), n)
	}
	for i, st := range pp.SampleType {
		var wantSum int64
		wantN := 0
		threads := map[string]bool{}
		for _, s := range pp.Sample {
			if s.Value[i] != 0 {
				wantSum += s.Value[i]
				wantN++
				threads[fmt.Sprintf("Int(%d)", s.NumLabel["thread"][0])] = true
			}
		}
		got := out.Profiles[i]
		var sum int64
		for _, s := range got.Samples {
			if len(s.Values) != 1 {
				t.Fatalf("%s: sample values %v", st.Type, s.Values)
			}
			sum += s.Values[0]
			if !threads[s.Attrs["thread"]] {
				t.Errorf("%s: sample of thread %q, not in the pprof", st.Type, s.Attrs["thread"])
			}
		}
		if len(got.Samples) != wantN || sum != wantSum {
			t.Errorf("%s: %d samples totalling %d, the pprof has %d totalling %d", st.Type, len(got.Samples), sum, wantN, wantSum)
		}
		if got.Scope != "clrdiag" || got.Resource["service.name"] != "Str(Hot)" || got.Resource["process.pid"] != "Int(9)" {
			t.Errorf("%s: scope %q resource %v", st.Type, got.Scope, got.Resource)
		}
	}
}

// TestProfilesOff: without Config.Profiles nothing is sent.
func TestProfilesOff(t *testing.T) {
	e, err := otlp.New(otlp.Config{Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportProfile(context.Background(), nil, "clrdiag", nil); !errors.Is(err, otlp.ErrProfilesDisabled) {
		t.Fatalf("err = %v", err)
	}
}
