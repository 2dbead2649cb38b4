//go:build linux

package rules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/exceptions"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
)

// procCPU is the CPU time (user + system) the kernel has charged to pid,
// in clock ticks: the second source for the cpu-usage counter.
func procCPU(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime 14, stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// The trigger shortcuts on real runtimes (.NET Core 3.1, and .NET 11,
// whose System.Runtime also publishes a Meter): the Hot target burns a
// core, so CPUUsage above 5 % fires within its 2 s window, and the
// kernel agrees the process used the CPU; GCHeapSize above 0 MB and
// ThreadpoolQueueLength below a million fire too (their counters exist
// under the names the shortcuts preset), while CPUUsage below 1 % never
// does.
func TestRealTriggerShortcuts(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		r := startRealOn(t, rt, rt.Build(t, "Hot"), "Hot", `CollectionRules:
  HighCpu:
    Trigger: {Type: CPUUsage, Settings: {GreaterThan: 5, SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Heap:
    Trigger: {Type: GCHeapSize, Settings: {GreaterThan: 0, SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Queue:
    Trigger: {Type: ThreadpoolQueueLength, Settings: {LessThan: 1000000, SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
    Limits: {ActionCount: 1}
  Idle:
    Trigger: {Type: CPUUsage, Settings: {LessThan: 1, SlidingWindowDuration: "00:00:02"}}
    Actions: [{Type: Execute, Settings: {Path: /bin/true}}]
`, nil)
		c0, t0 := procCPU(t, r.tg.PID), time.Now()
		s := r.waitRule(t, "HighCpu", 90*time.Second)
		used := float64(procCPU(t, r.tg.PID)-c0) / 100 / time.Since(t0).Seconds() // USER_HZ is 100 on Linux
		_, v, ok := strings.Cut(s.LastTriggerWhat, "System.Runtime/cpu-usage = ")
		num, _, _ := strings.Cut(v, " ")
		val, err := strconv.ParseFloat(num, 64)
		if s.Executions != 1 || !ok || err != nil || val <= 5 {
			t.Fatalf("%+v", s)
		}
		if used < 0.05 {
			t.Fatalf("the kernel charged the target %.2f CPUs while cpu-usage said %v%%", used, val)
		}
		for _, rule := range []string{"Heap", "Queue"} {
			s := r.waitRule(t, rule, 60*time.Second)
			if s.Executions != 1 {
				t.Fatalf("%+v", s)
			}
		}
		for _, st := range r.e.Status() {
			switch st.Rule {
			case "Heap":
				if !strings.Contains(st.LastTriggerWhat, "System.Runtime/gc-heap-size = ") {
					t.Errorf("%+v", st)
				}
			case "Queue":
				if !strings.Contains(st.LastTriggerWhat, "System.Runtime/threadpool-queue-length = ") {
					t.Errorf("%+v", st)
				}
			case "Idle":
				if st.Executions != 0 {
					t.Errorf("fired on a process burning a core: %+v", st)
				}
			}
		}
		t.Logf("%s: %s (the kernel: %.0f%% of a CPU since the rule was applied)", rt, s.LastTriggerWhat, used*100)
	})
}

// CollectExceptions on real runtimes writes the exceptions the process
// throws while it runs: the Workloads target throws batches of 7
// InvalidOperationException ("invalid 0".."invalid 6", from
// Workloads.Thrower.Invalid) and 3 ArgumentException ("argument 0"..
// "argument 2", from Workloads.Thrower.Argument), the ground truth; the
// action excludes ArgumentException, so its JSON lines, egressed, must
// be the InvalidOperationExceptions in the order thrown, with their
// messages and the stack Invalid < Throw.
func TestRealCollectExceptions(t *testing.T) {
	dotnettest.ForEach(t, []int{3, 8, 11}, func(t *testing.T, rt *dotnettest.Runtime) {
		eg := &dirEgress{dir: t.TempDir()}
		r := startRealOn(t, rt, rt.Build(t, "Workloads"), "Workloads", `CollectionRules:
  Exceptions:
    Trigger: {Type: Startup}
    Actions:
      - Name: Ex
        Type: CollectExceptions
        Settings:
          Format: NewlineDelimitedJson
          Duration: "00:00:04"
          Filters: {Exclude: [{ExceptionType: System.ArgumentException}]}
          Egress: store
`, eg)
		began := time.Now()
		waitFor(t, func() bool { ops := r.e.Operations(); return len(ops) == 1 })
		// The session opens as the action starts, and .NET Core 3.1
		// sends a new session's exceptions only a moment after it opened:
		// batches are thrown until the action ends, and the artifact must
		// follow them from wherever it starts.
		batches := 0
		for r.e.Operations()[0].Status == OperationRunning {
			if time.Since(began) > time.Minute {
				t.Fatalf("the action did not end: %+v", r.e.Operations())
			}
			r.tg.Send(t, "throw")
			if got := r.tg.Expect(t, "THROWN", 30*time.Second); got != "THROWN 7 3" {
				t.Fatalf("target says %q", got)
			}
			batches++
			time.Sleep(100 * time.Millisecond)
		}
		s := r.waitRule(t, "Exceptions", 30*time.Second)
		op := r.e.Operations()[0]
		if s.Executions != 1 || op.Status != OperationSucceeded || op.Type != "CollectExceptions" || op.EgressProvider != "store" ||
			!strings.HasPrefix(op.EgressPath, eg.dir) || !strings.HasSuffix(op.EgressPath, ".json") {
			t.Fatalf("%+v\n%+v\n%s", s, op, r.logBuf.w.String())
		}
		f, err := os.Open(op.EgressPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var got []exceptions.Exception
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e exceptions.Exception
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("line %d: %v: %s", len(got)+1, err, sc.Text())
			}
			got = append(got, e)
		}
		if len(got) < 7 || len(got) > 7*batches {
			t.Fatalf("%d exceptions from %d batches of 7", len(got), batches)
		}
		first := -1
		for i, e := range got {
			if first < 0 {
				n, err := strconv.Atoi(strings.TrimPrefix(e.Message, "invalid "))
				if err != nil {
					t.Fatalf("first exception %+v", e)
				}
				first = n
			}
			want := fmt.Sprintf("invalid %d", (first+i)%7)
			fr := e.Stack.Frames
			if e.ID != i+1 || e.TypeName != "System.InvalidOperationException" || e.Message != want || len(fr) < 2 ||
				fr[0] != (exceptions.Frame{MethodName: "Invalid", TypeName: "Workloads.Thrower", ModuleName: "Workloads", Signature: fr[0].Signature}) ||
				fr[1].Name() != "Workloads.Thrower.Throw" || e.Stack.ThreadID != got[0].Stack.ThreadID ||
				e.Timestamp.Before(began) || e.Timestamp.After(time.Now()) || i > 0 && e.Timestamp.Before(got[i-1].Timestamp) {
				t.Fatalf("exception %d (want %q at Invalid < Throw): %+v", i+1, want, e)
			}
		}
		t.Logf("%s: %d InvalidOperationExceptions of %d batches, the first \"invalid %d\"", rt, len(got), batches, first)
	})
}
