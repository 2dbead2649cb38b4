//go:build unix

package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// recordReplayCase is one command recorded against a fake runtime, then
// replayed from the recording with the runtime gone.
type recordReplayCase struct {
	name string
	cfg  ipctest.Config
	// args of the command; PORT is replaced by the fake's port when
	// recording and the target flags are dropped when replaying. OUT is an
	// output file: OUT.live and OUT.replay.
	args []string
	// files compares the two output files instead of stdout.
	files bool
}

var (
	pidRE    = regexp.MustCompile(`process \d+`)
	socketRE = regexp.MustCompile(`(?m)^\s*"socket": .*\n`)
)

// TestRecordReplayEveryCommand: every command that talks to a runtime can
// be recorded with --record-ipc and replayed with --replay-ipc, with the
// same result, sessions (split over two connections) and random ids
// included.
func TestRecordReplayEveryCommand(t *testing.T) {
	stackSession := func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}
	traceSession := func(ctx context.Context, s *ipctest.TracingSession) error {
		wellBehaved(t, s)
		return nil
	}
	cases := []recordReplayCase{
		{name: "info", cfg: ipctest.Config{Runtime: ipctest.NET8, PID: 4242}, args: []string{"info", "--json"}},
		{name: "env", cfg: ipctest.Config{Runtime: ipctest.NET8, Environment: []string{"A=1", "B=2"}}, args: []string{"env"}},
		{name: "env set", cfg: ipctest.Config{Runtime: ipctest.NET8}, args: []string{"env", "set", "C=3"}},
		{name: "resume", cfg: ipctest.Config{Runtime: ipctest.NET8, Suspended: true}, args: []string{"resume"}},
		{name: "dump", cfg: ipctest.Config{Runtime: ipctest.NET8}, args: []string{"dump", "--type", "mini", "--path-in-target", "-o", "DIR/core"}},
		{name: "dump collect", cfg: ipctest.Config{Runtime: ipctest.NET6}, args: []string{"dump", "collect", "--path-in-target", "-o", "DIR/core2"}},
		{name: "attach", cfg: ipctest.Config{Runtime: ipctest.NET8}, args: []string{"attach", "--profiler", "/opt/prof/libprof.so", "--clsid", "8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C"}},
		{name: "startup-profiler", cfg: ipctest.Config{Runtime: ipctest.NET8, Suspended: true}, args: []string{"startup-profiler", "--profiler", "/opt/prof/libprof.so", "--clsid", "8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C"}},
		{name: "startup-hook", cfg: ipctest.Config{Runtime: ipctest.NET8, Suspended: true}, args: []string{"startup-hook", "/opt/hooks/Hook.dll"}},
		{name: "perfmap enable", cfg: ipctest.Config{Runtime: ipctest.NET8}, args: []string{"perfmap", "enable", "--type", "jitdump"}},
		{name: "perfmap disable", cfg: ipctest.Config{Runtime: ipctest.NET8}, args: []string{"perfmap", "disable"}},
		{name: "stack", cfg: ipctest.Config{Runtime: ipctest.NET3_1, Tracing: stackSession}, args: []string{"stack"}},
		{name: "stack report", cfg: ipctest.Config{Runtime: ipctest.NET3_1, Tracing: stackSession}, args: []string{"stack", "report", "--json"}},
		{name: "trace collect", cfg: ipctest.Config{Runtime: ipctest.NET8, Tracing: traceSession},
			args: []string{"trace", "collect", "--providers", "Fake-Source", "--duration", "300ms", "-o", "OUT"}, files: true},
		{name: "trace stream", cfg: ipctest.Config{Runtime: ipctest.NET8, Tracing: traceSession},
			args: []string{"trace", "stream", "--providers", "Fake-Source", "--duration", "300ms"}},
		{name: "gcdump collect", cfg: ipctest.Config{Runtime: ipctest.NET3_1, Tracing: gcdumptest.Session(gcdumptest.Leaky(3), gcdumptest.Options{})},
			args: []string{"gcdump", "collect", "-o", "OUT.gcdump"}, files: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { recordReplay(t, tc) })
	}

	// counters: the Metrics session's client id is random; the replay
	// sends the recorded one. The fake sends its samples at once: -short
	// collects for half a second (full mode: a second).
	duration := "1s"
	if testing.Short() {
		duration = "500ms"
	}
	t.Run("counters collect", func(t *testing.T) {
		srv, port, _ := countersRuntimeServer(t)
		recordReplayWith(t, srv, port, recordReplayCase{name: "counters collect", files: true,
			args: []string{"counters", "collect", "--counters", "Shop,System.Runtime[cpu-usage]", "--duration", duration, "-o", "OUT"}})
	})
	t.Run("counters monitor", func(t *testing.T) {
		srv, port, _ := countersRuntimeServer(t)
		recordReplayWith(t, srv, port, recordReplayCase{name: "counters monitor",
			args: []string{"counters", "monitor", "--counters", "Shop", "--duration", duration}})
	})
}

func recordReplay(t *testing.T, tc recordReplayCase) {
	t.Helper()
	srv, port := fakeRuntime(t, tc.cfg)
	recordReplayWith(t, srv, port, tc)
}

// recordReplayWith records tc against the server listening on port, closes
// it, replays, and compares.
func recordReplayWith(t *testing.T, srv *ipctest.Server, port string, tc recordReplayCase) {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	var outFile [2]string // live, replay
	expand := func(suffix string, withTarget bool) []string {
		var out []string
		for _, a := range tc.args {
			a = strings.ReplaceAll(a, "DIR", dir)
			if strings.HasPrefix(a, "OUT") {
				a = filepath.Join(dir, "out."+suffix+strings.TrimPrefix(a, "OUT"))
				if withTarget {
					outFile[0] = a
				} else {
					outFile[1] = a
				}
			}
			out = append(out, a)
		}
		if withTarget {
			out = append(out, "--diagnostic-port", port)
		}
		return out
	}
	code, live, errOut := run(t, append([]string{"--record-ipc", rec}, expand("live", true)...)...)
	if code != 0 {
		t.Fatalf("recorded run: exit %d\n%s", code, errOut)
	}
	srv.Close() // the runtime is gone: only the recording answers
	code, replayed, errOut := run(t, append([]string{"--replay-ipc", rec}, expand("replay", false)...)...)
	if code != 0 {
		t.Fatalf("replayed run: exit %d\n%s", code, errOut)
	}
	norm := func(s string) string {
		s = strings.ReplaceAll(s, ".live", ".OUT")
		s = strings.ReplaceAll(s, ".replay", ".OUT")
		s = socketRE.ReplaceAllString(s, "") // a replay has no socket
		return pidRE.ReplaceAllString(s, "process N")
	}
	if norm(live) != norm(replayed) {
		t.Errorf("stdout differs:\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
	if tc.files {
		a, err1 := os.ReadFile(outFile[0])
		b, err2 := os.ReadFile(outFile[1])
		if err1 != nil || err2 != nil || len(a) == 0 {
			t.Fatalf("outputs: %v %v (%d bytes)", err1, err2, len(a))
		}
		if string(a) != string(b) {
			t.Errorf("the replay wrote %d bytes, the recorded run %d, and they differ", len(b), len(a))
		}
	}
}
