//go:build unix

package monitor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/clrdiag/clrdiag/egress"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/realcomp"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/transport"
)

// s3Bucket starts the real S3 server with a bucket, and returns a client
// to read objects back with.
func s3Bucket(t *testing.T, bucket string) (*realcomp.S3Server, *egress.S3) {
	t.Helper()
	realcomp.IsolateAWS(t)
	srv := realcomp.StartS3(t)
	p, err := egress.NewS3(context.Background(), egress.S3Config{Bucket: bucket, Region: srv.Region, Endpoint: srv.Endpoint,
		UsePathStyle: true, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, DisableInstanceMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	return srv, p
}

// getS3 reads an s3://bucket/key object back.
func getS3(t *testing.T, p *egress.S3, location string) []byte {
	t.Helper()
	bucket, key, ok := strings.Cut(strings.TrimPrefix(location, "s3://"), "/")
	if !ok || !strings.HasPrefix(location, "s3://") {
		t.Fatalf("egress location %q is not s3://bucket/key", location)
	}
	out, err := p.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", location, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countEvents decodes a whole nettrace stream and counts its events by
// provider/event id.
func countEvents(t *testing.T, b []byte) map[string]int {
	t.Helper()
	nr, err := nettrace.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a nettrace stream: %v", err)
	}
	counts := map[string]int{}
	var ev nettrace.Event
	for {
		err := nr.ReadEvent(&ev)
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("the trace does not decode: %v", err)
		}
		counts[ev.Metadata.ProviderName+"/"+strconv.Itoa(int(ev.Metadata.EventID))]++
	}
}

// targetProcess is the monitor's Process for a started target.
func targetProcess(tg *dotnettest.Target, name string) monitor.Process {
	return monitor.Process{PID: tg.PID, Name: name, CommandLine: "dotnet " + name + ".dll",
		Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
}

// TestRealRulesShipTracesToS3: the README's rule, run by the monitor on
// real processes of .NET Core 3.1, .NET 8 and .NET 11 (whose System.Runtime
// Meter the collector reads besides: the triggers still see the
// EventCounters). An exception rate above the
// line (the Workloads target throwing in a loop) and CPU above the line
// (the Hot target burning a core), read from the /metrics collector's own
// counters sessions, each collect a trace that is shipped to a real S3
// server (versitygw, SigV4); the test reads the objects back and decodes
// them, and checks /collectionrules, /operations, /metrics and the log.
func TestRealRulesShipTracesToS3(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		srv, store := s3Bucket(t, "artifacts")
		thrower := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
		hot := rt.Start(t, rt.Build(t, "Hot"), nil, nil)
		cfgPath := filepath.Join(t.TempDir(), "monitor.yaml")
		artifacts := t.TempDir()
		os.WriteFile(cfgPath, []byte(fmt.Sprintf(`CollectionRules:
  Exceptions:
    Filters: [{Key: ProcessId, Value: "%d"}]
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: exception-count, GreaterThan: 50, SlidingWindowDuration: "00:00:02"}
    Actions:
      - Name: Trace
        Type: CollectTrace
        Settings:
          Providers: [{Name: Microsoft-Windows-DotNETRuntime, Keywords: "0x8000", EventLevel: Informational}]
          Duration: "00:00:03"
          Egress: s3
    Limits: {ActionCount: 1}
  HighCpu:
    Filters: [{Key: ProcessId, Value: "%d"}]
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: cpu-usage, GreaterThan: 2, SlidingWindowDuration: "00:00:02"}
    Actions:
      - {Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:03", Egress: s3}}
    Limits: {ActionCount: 1}
Egress:
  S3Storage:
    s3: {BucketName: artifacts, Prefix: clrdiag/%s, Endpoint: "%s", RegionName: "%s", AccessKeyId: "%s", SecretAccessKey: "%s", ForcePathStyle: true, DisableInstanceMetadata: true}
`, thrower.PID, hot.PID, rt.String(), srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)), 0o600)
		fc, err := monitor.LoadFleetConfig(cfgPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The CPU rule's line is low (2% of the machine) because the Hot
		// target gets what the machine's load leaves it: 50% unloaded on
		// two cores, a few percent at a load of 16, where a line of 20
		// never fired. Its filter holds it to the spinning process; rules'
		// TestRealTriggerShortcuts checks that a line the process does not
		// cross (CPUUsage < 1) never fires.
		var logBuf syncbuf.Buffer
		_, hs := serveUI(t, monitor.Config{Fleet: fc, ArtifactDir: artifacts, MetricsWindow: time.Second, DiscoveryInterval: time.Second,
			Logger: slog.New(slog.NewJSONHandler(&logBuf, nil)),
			Source: monitor.StaticSource{targetProcess(thrower, "Workloads"), targetProcess(hot, "Hot")}})

		// Nothing fires before the exceptions start.
		thrower.Send(t, "throw-loop")
		thrower.Expect(t, "LOOPING", 10*time.Second)

		deadline := time.Now().Add(3 * time.Minute)
		var ops []map[string]any
		for {
			code, body := do(t, hs, "GET", "/operations")
			if code != 200 || json.Unmarshal(body, &ops) != nil {
				t.Fatalf("GET /operations: %d %s", code, body)
			}
			done := 0
			for _, op := range ops {
				if op["status"] != "Running" {
					done++
				}
			}
			if len(ops) == 2 && done == 2 {
				break
			}
			if time.Now().After(deadline) {
				code, rules := do(t, hs, "GET", "/collectionrules")
				t.Fatalf("the rules did not both ship a trace within 3 minutes: operations %v\nrules %d %s\nlog:\n%s", ops, code, rules, logBuf.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		byRule := map[string]map[string]any{}
		for _, op := range ops {
			byRule[op["rule"].(string)] = op
			if op["status"] != "Succeeded" || op["egressProviderName"] != "s3" || !strings.HasPrefix(op["egressPath"].(string), "s3://artifacts/clrdiag/"+rt.String()+"/") {
				t.Fatalf("operation %v\nlog:\n%s", op, logBuf.String())
			}
			// Shipped: the local copy is gone.
			if _, err := os.Stat(op["artifactPath"].(string)); !os.IsNotExist(err) {
				t.Errorf("the local artifact %s is still there after its upload (%v)", op["artifactPath"], err)
			}
			// GET /operations/{id} answers the same.
			code, body := do(t, hs, "GET", "/operations/"+op["operationId"].(string))
			if code != 200 || !strings.Contains(string(body), op["egressPath"].(string)) {
				t.Errorf("GET /operations/{id}: %d %s", code, body)
			}
		}
		// The objects are the traces: they decode, with the runtime's
		// ExceptionThrown_V1 (80) events, and SampleProfiler samples with
		// the rundown's method names.
		exc := countEvents(t, getS3(t, store, byRule["Exceptions"]["egressPath"].(string)))
		if n := exc["Microsoft-Windows-DotNETRuntime/80"]; n < 20 {
			t.Errorf("%d ExceptionThrown events in the exception rule's trace: %v", n, exc)
		}
		cpu := countEvents(t, getS3(t, store, byRule["HighCpu"]["egressPath"].(string)))
		if cpu["Microsoft-DotNETCore-SampleProfiler/0"] < 100 || cpu["Microsoft-Windows-DotNETRuntimeRundown/144"] == 0 {
			t.Errorf("the CPU rule's trace: %v", cpu)
		}

		// /collectionrules: both finished (ActionCount 1), with what fired.
		code, body := do(t, hs, "GET", "/collectionrules")
		var rules []map[string]any
		if code != 200 || json.Unmarshal(body, &rules) != nil || len(rules) != 2 {
			t.Fatalf("GET /collectionrules: %d %s", code, body)
		}
		for _, r := range rules {
			what, _ := r["lastTriggerWhat"].(string)
			if r["state"] != "Finished" || r["executions"] != 1.0 || !strings.Contains(what, "System.Runtime/") {
				t.Errorf("rule state %v", r)
			}
		}
		if code, body := do(t, hs, "GET", fmt.Sprintf("/collectionrules/Exceptions?pid=%d", thrower.PID)); code != 200 || !strings.Contains(string(body), "exception-count") {
			t.Errorf("GET /collectionrules/Exceptions: %d %s", code, body)
		}
		// /metrics counts the triggers and actions.
		_, metrics := do(t, hs, "GET", "/metrics")
		for _, want := range []string{`clrdiag_rule_triggers_total{rule="Exceptions",trigger="EventCounter"} 1`,
			`clrdiag_rule_actions_total{result="succeeded",rule="HighCpu",type="CollectTrace"} 1`,
			`clrdiag_rule_processes{rule="Exceptions",state="Finished"} 1`} {
			if !strings.Contains(string(metrics), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		// Every trigger and action is in the (JSON) log.
		log := logBuf.String()
		for _, want := range []string{`"msg":"collection rule triggered","rule":"Exceptions"`, `"msg":"collection rule triggered","rule":"HighCpu"`,
			`"msg":"collection rule action succeeded"`, `"msg":"monitor: artifact shipped","provider":"s3"`} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %s:\n%s", want, log)
			}
		}
	})
}

// streamLines GETs a streaming route and sends each line of its body
// until the body ends or the test's context is cancelled.
func streamLines(t *testing.T, ctx context.Context, url string, hdr map[string]string) (status int, lines <-chan string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return resp.StatusCode, ch
}

// TestRealLogsThroughMonitor: ILogger messages of live processes, through
// the monitor's routes, as they are logged. On .NET Core 3.1 the Logging
// target's EventSource of Microsoft.Extensions.Logging's name and event
// shape stands in for the library (the 3.1 runtime package has none); on
// .NET 8 it is an ASP.NET Core app's real Microsoft.Extensions.Logging,
// read through dotnet-monitor's spelling, GET /logs?pid=, as text.
func TestRealLogsThroughMonitor(t *testing.T) {
	t.Run("net3", func(t *testing.T) {
		rt := dotnettest.Find(t)
		tg := rt.Start(t, rt.Build(t, "Logging"), nil, nil)
		hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{targetProcess(tg, "Logging")}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		status, lines := streamLines(t, ctx, fmt.Sprintf("%s/processes/%d/logs?level=Warning&duration=2m", hs.URL, tg.PID), nil)
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		tg.Send(t, "wait-enabled")
		tg.Expect(t, "ENABLED", 30*time.Second)
		tg.Send(t, "demo")
		tg.Expect(t, "DEMO done", 30*time.Second)
		// The process exits: its session ends, and the stream with it.
		tg.Send(t, "exit 0")
		var got []map[string]any
		for l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not a JSON line: %q", l)
			}
			got = append(got, m)
		}
		if len(got) != 3 || got[0]["LogLevel"] != "Warning" || got[1]["Message"] != "Order 7 failed" || got[1]["Category"] != "App.Orders" ||
			got[2]["LogLevel"] != "Critical" {
			t.Fatalf("entries %v", got)
		}
		if ex, _ := got[1]["Exception"].(string); !strings.Contains(ex, "System.InvalidOperationException: out of stock") {
			t.Errorf("exception %v", got[1])
		}
	})
	t.Run("net8", func(t *testing.T) {
		rt := dotnettest.FindVersion(t, 8)
		tg := rt.Start(t, rt.BuildWith(t, "Web", dotnettest.BuildOptions{Web: true}), nil, nil)
		f := strings.Fields(tg.ReadyLine)
		if len(f) < 3 {
			t.Fatalf("ready line %q", tg.ReadyLine)
		}
		base := f[2]
		hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{targetProcess(tg, "Web")}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		status, lines := streamLines(t, ctx, fmt.Sprintf("%s/logs?pid=%d&level=Error&filter=Clrdiag.Web*:Debug&durationSeconds=120", hs.URL, tg.PID),
			map[string]string{"Accept": "text/plain"})
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		// The runtime enables the logger asynchronously: ask until the
		// message arrives.
		var text []string
		hc := &http.Client{Timeout: 10 * time.Second}
		for done := false; !done; {
			resp, err := hc.Get(base + "/log")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			timeout := time.After(time.Second)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the stream ended: %q", text)
					}
					text = append(text, l)
					if strings.Contains(l, "Slow request /log took 123 ms") {
						done = true
						break read
					}
				case <-timeout:
					break read
				case <-ctx.Done():
					t.Fatalf("no message within 2 minutes: %q", text)
				}
			}
		}
		all := strings.Join(text, "\n")
		for _, want := range []string{"warn: Clrdiag.Web.Requests[42]", "=> ", "RequestPath:/log", "      Slow request /log took 123 ms"} {
			if !strings.Contains(all, want) {
				t.Errorf("text lacks %q:\n%s", want, all)
			}
		}
	})
}
