//go:build linux

package counters

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/transport"
)

// webTarget starts the ASP.NET Core target and returns it, a client of its
// diagnostic socket and its URL.
func webTarget(t *testing.T, rt *dotnettest.Runtime) (*dotnettest.Target, *diag.Client, string) {
	t.Helper()
	tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
	f := strings.Fields(tg.ReadyLine)
	if len(f) < 3 {
		t.Fatalf("the Web target's ready line %q carries no URL", tg.ReadyLine)
	}
	return tg, diag.NewClient(transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}, nil), f[2]
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// latest is the last sample of each tag combination of an instrument.
func (r *recorder) latest(provider, name string) map[string]Sample {
	out := map[string]Sample{}
	for _, s := range r.of(provider, name) {
		out[s.TagString()] = s
	}
	return out
}

// TestRealMeterCounts reads an ASP.NET Core process on .NET 8, 10 and 11
// while the test sends it requests: every count equals what was sent,
// through the app's Meter (its counter's increments and total, its
// histogram's counts), ASP.NET Core's request histogram and exceptions
// (the System.Runtime Meter on 10 and 11, its EventCounter on 8). Rates
// cover the real time between collections, levels are levels.
func TestRealMeterCounts(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		_, client, url := webTarget(t, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		specs, err := ParseSpecs("System.Runtime,Microsoft.AspNetCore.Hosting,Clrdiag.Web")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Start(ctx, client, Config{Specs: specs})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.RuntimeMajor != rt.Major || s.Plan.SessionID != SharedSessionID {
			t.Errorf("runtime %d (%q), session %q: want %d and the shared session", s.RuntimeMajor, s.RuntimeVersion, s.Plan.SessionID, rt.Major)
		}
		rec := &recorder{}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(runCtx, rec.add) }()
		waitFor(t, "the first values", 30*time.Second, func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.samples) > 0 })
		const home, throws = 24, 6
		for range home {
			get(t, url+"/")
		}
		for range throws {
			get(t, url+"/throw")
		}
		counted := func(name string) (incr, count float64) {
			for _, sm := range rec.of("Clrdiag.Web", name) {
				incr += sm.Value
				count += float64(sm.Count)
			}
			return incr, count
		}
		// ASP.NET Core's histogram comes in its own events, which can
		// trail the app's in the same collection: wait for both.
		hostingCount := func() (n float64) {
			for _, sm := range rec.of("Microsoft.AspNetCore.Hosting", "http.server.request.duration") {
				n += float64(sm.Count)
			}
			return n
		}
		waitFor(t, "every request counted", 60*time.Second, func() bool {
			incr, _ := counted("clrdiag.web.requests")
			_, n := counted("clrdiag.web.duration")
			return incr == home+throws && n == home+throws && hostingCount() >= home+throws
		})
		if hosting := hostingCount(); hosting != home+throws {
			t.Errorf("http.server.request.duration counted %v requests, the test sent %d", hosting, home+throws)
		}
		for tags, sm := range rec.latest("Clrdiag.Web", "clrdiag.web.requests") {
			want := map[string]float64{"route=/": home, "route=/throw": throws}[tags]
			if !sm.HasTotal || sm.Total != want || sm.Kind != KindRate {
				t.Errorf("clrdiag.web.requests{%s}: total %v (%v), kind %v; want %v", tags, sm.Total, sm.HasTotal, sm.Kind, want)
			}
		}
		for _, sm := range rec.of("Clrdiag.Web", "clrdiag.web.requests") {
			if r, ok := sm.PerSecond(); !ok || sm.Elapsed <= 0 || sm.Elapsed > 10*time.Second || math.IsNaN(r) {
				t.Errorf("a rate over %v: %v %v", sm.Elapsed, r, ok)
				break
			}
		}
		for _, sm := range rec.latest("Clrdiag.Web", "clrdiag.web.inflight") {
			if sm.Kind != KindUpDown || sm.Value != 0 {
				t.Errorf("clrdiag.web.inflight: %v %v, want an up-down counter at 0", sm.Kind, sm.Value)
			}
		}
		var exceptions float64
		if rt.Major >= 9 {
			waitFor(t, "the exceptions", 30*time.Second, func() bool {
				exceptions = 0
				for _, sm := range rec.of("System.Runtime", "dotnet.exceptions") {
					exceptions += sm.Value
				}
				return exceptions >= throws
			})
			for _, name := range []string{"dotnet.thread_pool.thread.count", "dotnet.thread_pool.queue.length", "dotnet.assembly.count"} {
				for tags, sm := range rec.latest("System.Runtime", name) {
					if sm.Kind != KindUpDown || !strings.HasPrefix(sm.Label(), name+" ({") || strings.Contains(sm.Label(), "/ 1 sec") {
						t.Errorf("%s{%s}: %v labelled %q, want a level", name, tags, sm.Kind, sm.Label())
					}
				}
			}
			if len(rec.of("System.Runtime", "cpu-usage")) > 0 && len(rec.of("System.Runtime", "dotnet.process.cpu.time")) > 0 {
				// Before the Meter's first values the EventCounters may
				// come; after them never.
				last := rec.of("System.Runtime", "cpu-usage")
				first := rec.of("System.Runtime", "dotnet.process.cpu.time")
				if last[len(last)-1].Time.After(first[0].Time) {
					t.Errorf("EventCounters after the Meter published")
				}
			}
		} else {
			waitFor(t, "the exceptions", 30*time.Second, func() bool {
				exceptions = sumValues(rec.of("System.Runtime", "exception-count"))
				return exceptions >= throws
			})
		}
		if exceptions != throws {
			t.Errorf("%v exceptions counted, the target threw %d", exceptions, throws)
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		if len(rec.warns) > 0 {
			t.Errorf("warnings: %v", rec.warns)
		}
	})
}

// TestRealStoppedProcessKeepsSession is issue 31's repro on .NET 8:
// requests keep an ASP.NET Core app busy (/lock) while its Hosting Meter is
// read, and the process is stopped for 6 s (SIGSTOP). The session was
// taken for stalled after 4 s and reopened, which restarted the runtime's
// up-down counter: http.server.active_requests then stayed at -2. Now a
// .NET 8 session is never reopened and the count returns to 0 once the
// requests end.
func TestRealStoppedProcessKeepsSession(t *testing.T) {
	rt := dotnettest.FindVersion(t, 8)
	tg, client, url := webTarget(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := &recorder{}
	var mu sync.Mutex
	starts, stalls := 0, 0
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Follow(runCtx, client, Config{Specs: []Spec{{Provider: "Microsoft.AspNetCore.Hosting"}}}, FollowConfig{
			Started: func(*Session, bool) error { mu.Lock(); starts++; mu.Unlock(); return nil },
			Stalled: func(error) { mu.Lock(); stalls++; mu.Unlock() },
		}, rec.add)
	}()
	active := func() (level float64, n int) {
		for _, sm := range rec.latest("Microsoft.AspNetCore.Hosting", "http.server.active_requests") {
			level += sm.Value
			n++
		}
		return level, n
	}
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for load.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", url+"/lock", nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	waitFor(t, "active requests under load", 30*time.Second, func() bool { _, n := active(); return n > 0 })
	if err := syscall.Kill(tg.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	time.Sleep(6 * time.Second)
	if err := syscall.Kill(tg.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped for %v", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	stopLoad()
	wg.Wait()
	waitFor(t, "no active request once the load ended", 30*time.Second, func() bool { v, n := active(); return n > 0 && v == 0 })
	for _, sm := range rec.of("Microsoft.AspNetCore.Hosting", "http.server.active_requests") {
		if sm.Value < 0 {
			t.Errorf("active requests %v at %v", sm.Value, sm.Time)
			break
		}
	}
	// A collection after the stop covers the time the process was stopped.
	longest := time.Duration(0)
	for _, sm := range rec.of("Microsoft.AspNetCore.Hosting", "http.server.request.duration") {
		longest = max(longest, sm.Elapsed)
	}
	if longest < 5*time.Second {
		t.Errorf("the longest collection covers %v; the process was stopped for 6 s", longest)
	}
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if starts != 1 || stalls != 0 {
		t.Errorf("%d sessions opened, %d stalls: a .NET 8 session must be kept", starts, stalls)
	}
}
