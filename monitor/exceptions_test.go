//go:build unix

package monitor_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/exceptions"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport"
)

// GET /processes/{pid}/exceptions and dotnet-monitor's GET /exceptions on
// real runtimes: the Workloads target's throw-loop throws, on its thread
// "ThrowLoop", rounds of 7 InvalidOperationException ("invalid 0".."invalid
// 6", from Workloads.Thrower.Invalid) then 3 ArgumentException
// ("argument 0".."argument 2", from Thrower.Argument), the ground truth
// every answer must follow, exception by exception, from wherever the
// window cuts a round.
func TestRealExceptionsRoutes(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.Build(t, "Workloads"), nil, nil)
		tg.Send(t, "throw-loop")
		tg.Expect(t, "LOOPING", 10*time.Second)
		p := monitor.Process{PID: tg.PID, Name: "Workloads", Dialer: transport.Endpoint{Network: transport.NetworkUnix, Address: tg.Socket, PID: tg.PID}}
		hs := serve(t, monitor.Config{NoMetrics: true, Source: monitor.StaticSource{p}})

		var round []string
		for i := range 7 {
			round = append(round, fmt.Sprintf("System.InvalidOperationException: invalid %d", i))
		}
		for i := range 3 {
			round = append(round, fmt.Sprintf("System.ArgumentException: argument %d", i))
		}
		follows := func(got, cycle []string) {
			t.Helper()
			if len(got) < len(cycle) {
				t.Fatalf("%d exceptions in 2 s of the loop:\n%s", len(got), strings.Join(got, "\n"))
			}
			first := -1
			for i, c := range cycle {
				if c == got[0] {
					first = i
				}
			}
			for i, g := range got {
				if first < 0 || g != cycle[(first+i)%len(cycle)] {
					t.Fatalf("exception %d is %q, not the loop's next:\n%s", i+1, g, strings.Join(got, "\n"))
				}
			}
		}

		// JSON lines: both types, in the loop's order, on its thread.
		began := time.Now()
		resp, b := request(t, hs.Client(), "GET", fmt.Sprintf("%s/processes/%d/exceptions?duration=2s", hs.URL, tg.PID))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" || len(resp.Header.Values("X-Clrdiag-Warning")) > 0 {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
		}
		var got []string
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		var thread uint64
		for sc.Scan() {
			var e exceptions.Exception
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%v: %s", err, sc.Text())
			}
			got = append(got, e.TypeName+": "+e.Message)
			thrower := "Invalid"
			if e.TypeName == "System.ArgumentException" {
				thrower = "Argument"
			}
			if thread == 0 {
				thread = e.Stack.ThreadID
			}
			if len(e.Stack.Frames) < 3 || e.Stack.Frames[0].Name() != "Workloads.Thrower."+thrower || e.Stack.Frames[1].Name() != "Workloads.Thrower.Throw" ||
				e.Stack.Frames[2].Name() != "Workloads.Thrower.Loop" || e.Stack.ThreadID != thread || e.Timestamp.Before(began) {
				t.Fatalf("%+v", e)
			}
		}
		follows(got, round)
		if n, _ := strconv.Atoi(resp.Header.Get("X-Clrdiag-Exceptions-Thrown")); n != len(got) {
			t.Errorf("thrown %d, listed %d", n, len(got))
		}
		t.Logf("%s: %d exceptions in 2 s", rt, len(got))

		// dotnet-monitor's route and text, ArgumentException left out.
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/exceptions?pid=%d&durationSeconds=2&excludeExceptionType=System.ArgumentException", hs.URL, tg.PID), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept", "text/plain")
		tr, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		text.ReadFrom(tr.Body)
		tr.Body.Close()
		if tr.StatusCode != 200 || !strings.HasPrefix(tr.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%d %v %s", tr.StatusCode, tr.Header, text.String())
		}
		got = got[:0]
		for _, block := range strings.Split(strings.TrimSuffix(text.String(), "\n\n"), "\n\n") {
			lines := strings.Split(block, "\n")
			if len(lines) < 4 || !strings.HasPrefix(lines[0], "First chance exception at ") ||
				lines[2] != "   at Workloads.Thrower.Invalid(int32)" || lines[3] != "   at Workloads.Thrower.Throw()" {
				t.Fatalf("block:\n%s", block)
			}
			if _, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(lines[0], "First chance exception at ")); err != nil {
				t.Fatal(err)
			}
			got = append(got, lines[1])
		}
		follows(got, round[:7])

		for _, bad := range []string{"format=xml", "exceptionTypes=X", "duration=-1s"} {
			if code, b := do(t, hs, "GET", fmt.Sprintf("/processes/%d/exceptions?%s", tg.PID, bad)); code != 400 {
				t.Errorf("%s: %d %s", bad, code, b)
			}
		}
	})
}
