//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/syncbuf"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/spf13/cobra"
)

// The test binary doubles as a fake .NET 8 child: with
// CLRDIAG_TEST_FAKE_CHILD set it connects to the DOTNET_DiagnosticPorts
// address like a runtime, waits for ResumeRuntime if the port suspends,
// prints a line and exits with CLRDIAG_TEST_FAKE_CHILD_EXIT.
func init() {
	if os.Getenv("CLRDIAG_TEST_FAKE_CHILD") != "" {
		os.Exit(fakeChild())
	}
}

func fakeChild() int {
	addr, tags, _ := strings.Cut(os.Getenv("DOTNET_DiagnosticPorts"), ",")
	if addr == "" || !strings.Contains(tags, "connect") {
		fmt.Fprintln(os.Stderr, "fake child: no connect-mode DOTNET_DiagnosticPorts")
		return 90
	}
	cfg := ipctest.Config{PID: os.Getpid(), Suspended: !strings.Contains(tags, "nosuspend")}
	if os.Getenv("CLRDIAG_TEST_FAKE_CHILD_TRACE") != "" {
		// Sessions get a stream of Hello events, as a traced app would send.
		cfg.Tracing = func(ctx context.Context, s *ipctest.TracingSession) error {
			w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: os.Getpid()})
			if err != nil {
				return err
			}
			if err := w.AddMetadata(fakeHelloMeta); err != nil {
				return err
			}
			for i := 0; i < 12; i++ {
				p, _ := nettrace.AppendPayload(nil, fakeHelloMeta.Fields, nettrace.Object{{Name: "index", Value: int32(i)}, {Name: "message", Value: fmt.Sprintf("hello %d", i)}})
				if err := w.WriteEvent(&nettrace.Event{Metadata: fakeHelloMeta, ThreadID: 1, CaptureThreadID: 1, SequenceNumber: uint32(i + 1), Timestamp: int64(i), Payload: p}); err != nil {
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			<-s.Stopped
			return w.Close()
		}
	}
	srv, err := ipctest.NewServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake child:", err)
		return 91
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.ConnectTo(ctx, addr)
	for srv.Suspended() {
		if ctx.Err() != nil {
			return 92
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("CHILD RUNNING")
	time.Sleep(200 * time.Millisecond) // let the ResumeRuntime reply go out
	code, _ := strconv.Atoi(os.Getenv("CLRDIAG_TEST_FAKE_CHILD_EXIT"))
	return code
}

// launchResult is what the test command saw.
type launchResult struct {
	pid, infoPID int
	socket       string
	stdout       string
	stderr       string
	exited       bool
}

// runLaunch runs a command that resolves with launch support, asks the
// child's ProcessInfo, calls Started, waits up to wait for the child to exit
// and returns its exit code as the command's.
func runLaunch(t *testing.T, timeout, wait time.Duration, args ...string) (launchResult, error) {
	t.Helper()
	tf := &targetFlags{}
	var res launchResult
	cmd := &cobra.Command{
		Use:           "launchtest",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			tg, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer tg.close()
			res.pid, res.socket = tg.PID, tg.Endpoint.Address
			info, err := tg.Client.ProcessInfo(ctx)
			if err != nil {
				return err
			}
			res.infoPID = int(info.PID)
			if err := tg.started(ctx); err != nil {
				return err
			}
			select {
			case <-tg.Exited:
				res.exited = true
				return &ExitError{Code: tg.ExitCode()}
			case <-time.After(wait):
			}
			tg.close()
			return &ExitError{Code: tg.ExitCode()}
		},
	}
	tf.register(cmd)
	tf.registerLaunch(cmd)
	tf.launch.timeout = timeout
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	res.stdout, res.stderr = out.String(), errb.String()
	return res, err
}

func exitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return -1
}

func TestLaunchFakeChild(t *testing.T) {
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD", "1")
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD_EXIT", "7")
	res, err := runLaunch(t, 20*time.Second, 20*time.Second, "--", os.Args[0], "-test.run=^$")
	if exitCode(err) != 7 || !res.exited {
		t.Fatalf("exit: %v (exited %v), want the child's status 7; stderr %s", err, res.exited, res.stderr)
	}
	if res.pid == 0 || res.infoPID != res.pid {
		t.Fatalf("target pid %d, ProcessInfo pid %d", res.pid, res.infoPID)
	}
	if strings.Contains(res.stdout, "CHILD RUNNING") {
		t.Fatalf("child output shown without --show-child-io: %q", res.stdout)
	}
	if !strings.HasPrefix(res.socket, os.TempDir()) || !strings.Contains(res.socket, fmt.Sprintf("clrdiag-%d-", os.Getpid())) || !strings.HasSuffix(res.socket, ".socket") {
		t.Fatalf("socket %q not named $TMPDIR/clrdiag-<pid>-<time>.socket", res.socket)
	}
	if _, err := os.Lstat(res.socket); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket not removed: %v", err)
	}
}

func TestLaunchTraceCollect(t *testing.T) {
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD", "1")
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD_EXIT", "5")
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD_TRACE", "1")
	out := t.TempDir() + "/child.nettrace"
	code, _, errOut := run(t, "trace", "collect", "--providers", "Fake-Source", "-o", out, "--", os.Args[0], "-test.run=^$")
	if code != 5 {
		t.Fatalf("exit %d, want the child's 5:\n%s", code, errOut)
	}
	if n := countHello(t, out); n != 12 {
		t.Fatalf("%d events in the child's trace, want 12", n)
	}
}

func TestLaunchCountersNeedsArgsAfterDash(t *testing.T) {
	code, _, errOut := run(t, "counters", "collect", "stray")
	if code != exitUsage || !strings.Contains(errOut, "after --") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestLaunchShowChildIO(t *testing.T) {
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD", "1")
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD_EXIT", "0")
	res, err := runLaunch(t, 20*time.Second, 20*time.Second, "--show-child-io", "--", os.Args[0], "-test.run=^$")
	if exitCode(err) != 0 || !strings.Contains(res.stdout, "CHILD RUNNING") {
		t.Fatalf("exit %v, stdout %q, stderr %q", err, res.stdout, res.stderr)
	}
}

func TestLaunchNoResume(t *testing.T) {
	t.Setenv("CLRDIAG_TEST_FAKE_CHILD", "1")
	res, err := runLaunch(t, 20*time.Second, 500*time.Millisecond, "--resume-runtime=false", "--", os.Args[0], "-test.run=^$")
	if res.exited {
		t.Fatal("child ran although --resume-runtime=false")
	}
	// Close killed the child still paused at startup.
	if exitCode(err) != 128+9 {
		t.Fatalf("exit %v, want 137 (killed)", err)
	}
}

func TestLaunchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stray", "--", "/bin/true"}, "goes after --"},
		{[]string{"stray"}, "goes after --"},
		{[]string{"-p", "1", "--", "/bin/true"}, "either a command to launch"},
		{[]string{"--", "/nonexistent/program"}, "launch /nonexistent/program"},
		{[]string{"--", "/bin/sh", "-c", "exit 3"}, "exited with status 3 before its runtime connected"},
		{[]string{"--", "/bin/sleep", "600"}, "did not connect within 300ms: launching under tracing needs .NET 5 or later"},
	} {
		start := time.Now()
		_, err := runLaunch(t, 300*time.Millisecond, time.Second, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
		// The launch gives up after its 300ms timeout instead of waiting
		// for the child (sleep 600 would take ten minutes). The bound is far
		// from both, so that a loaded machine cannot fail it (one case took
		// 27s at a load average of 19).
		if time.Since(start) > 2*time.Minute {
			t.Errorf("%q took %v", tc.args, time.Since(start))
		}
	}
}

// A real .NET Core 3.1 runtime does not know DOTNET_DiagnosticPorts: the
// launch times out with an explanation, and the child is killed.
func TestLaunchRealRuntime31TimesOut(t *testing.T) {
	rt := dotnettest.Find(t)
	dll := rt.Build(t, "Basic")
	t.Setenv("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
	// Basic exits when its stdin closes: give it one that stays open.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	tf := &targetFlags{}
	var errb bytes.Buffer
	cmd := &cobra.Command{Use: "x", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		tg, err := tf.resolve(cmd.Context())
		if err == nil {
			tg.close()
			return errors.New("3.1 runtime connected")
		}
		return err
	}}
	tf.register(cmd)
	tf.registerLaunch(cmd)
	tf.launch.timeout = 3 * time.Second
	cmd.SetIn(r)
	cmd.SetErr(&errb)
	cmd.SetOut(&errb)
	cmd.SetArgs([]string{"--show-child-io", "--", rt.Host, dll})
	start := time.Now()
	err = cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not connect within 3s") || !strings.Contains(err.Error(), "3.1") {
		t.Fatalf("launching a 3.1 app: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "READY") {
		t.Fatalf("the 3.1 child did not start (output %q)", errb.String())
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// TestLaunchRealRuntime traces a .NET 8+ program from its first
// instruction: 'trace collect -- dotnet app.dll' starts it paused at a
// private diagnostic port, opens the session, resumes it, and ends with
// the program, with its exit status. The trace holds the loading of the
// program's own assembly (before Main: the session was there first) and
// the exception it threw, and names the child's process id.
func TestLaunchRealRuntime(t *testing.T) {
	dotnettest.ForEachSmoke(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		dll := rt.Build(t, "Basic")
		t.Setenv("DOTNET_ROOT", rt.DotnetRoot)
		t.Setenv("DOTNET_ROLL_FORWARD", "")
		out := filepath.Join(t.TempDir(), "launch.nettrace")
		// The child writes to them too (through exec's copying goroutines).
		var stdout, stderr syncbuf.Buffer
		code := Main([]string{"trace", "collect", "--show-child-io", "-o", out, "--", rt.Host, dll},
			strings.NewReader("throw\nexit 7\n"), &stdout, &stderr)
		if code != 7 {
			t.Fatalf("exit %d, want the child's 7:\n%s\n%s", code, stdout.String(), stderr.String())
		}
		// The child's own output, shown with --show-child-io.
		var pid int
		if _, err := fmt.Sscanf(stdout.String(), "READY %d\nTHROWN\n", &pid); err != nil || !strings.Contains(stdout.String(), "THROWN\n") {
			t.Fatalf("child output %q: %v", stdout.String(), err)
		}
		for _, want := range []string{fmt.Sprintf("Process        : %d\n", pid), "Trace written to " + out} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rd, err := nettrace.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := rd.Header().ProcessID; got != pid {
			t.Errorf("the trace names process %d, want the child %d", got, pid)
		}
		var basicLoaded, thrown bool
		var ev nettrace.Event
		for {
			err := rd.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if ev.Metadata.ProviderName != "Microsoft-Windows-DotNETRuntime" {
				continue
			}
			switch ev.Metadata.EventID {
			case 152, 154: // ModuleLoad, AssemblyLoad
				basicLoaded = basicLoaded || bytes.Contains(ev.Payload, utf16le("Basic"))
			case 80: // ExceptionThrown_V1
				thrown = thrown || bytes.Contains(ev.Payload, utf16le("test exception"))
			}
		}
		if !basicLoaded || !thrown {
			t.Errorf("the trace lacks the load of Basic (%v) or its exception (%v)", basicLoaded, thrown)
		}
	})
}

// utf16le is s in UTF-16LE, as event payloads carry strings.
func utf16le(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}
