package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/transport"
)

func TestExitCodeOf(t *testing.T) {
	_, openErr := os.Open("/nonexistent/clrdiag-test")
	for _, tc := range []struct {
		name        string
		err         error
		interrupted bool
		want        int
	}{
		{"nil", nil, false, exitOK},
		{"explicit", &ExitError{Code: 42}, false, 42},
		{"wrapped explicit", fmt.Errorf("x: %w", &ExitError{Code: exitIO}), false, exitIO},
		{"plain", errors.New("boom"), false, exitFailure},
		{"no endpoint", fmt.Errorf("resolve: %w", &transport.NotFoundError{PID: 7}), false, exitNotFound},
		{"dial refused", &transport.OpError{Op: "dial", Addr: "/tmp/x", Err: syscall.ECONNREFUSED}, false, exitNotFound},
		{"HRESULT", fmt.Errorf("dump: %w", &ipc.ServerError{HRESULT: ipc.HRFail}), false, exitRuntime},
		{"unknown command", &ipc.ServerError{HRESULT: ipc.HRUnknownCommand}, false, exitRuntime},
		{"protocol", &ipc.ProtocolError{What: "reply header", Offset: 8, Expected: 20, Got: 8, Err: io.ErrUnexpectedEOF}, false, exitRuntime},
		{"impossible reply", &ipc.ProtocolError{What: "ProcessInfo3 reply", Reason: "process id 0"}, false, exitRuntime},
		{"closed unanswered", &ipc.ProtocolError{What: "reply header", Expected: 20, Err: io.ErrUnexpectedEOF}, false, exitTargetGone},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), false, exitTargetGone},
		{"stream cut", fmt.Errorf("x: %w", counters.ErrStreamCut), false, exitTargetGone},
		{"stack ended early", fmt.Errorf("x: %w", stacks.ErrEndedEarly), false, exitTargetGone},
		{"not nettrace", fmt.Errorf("x: %w", eventpipe.ErrNotNettrace), false, exitDamaged},
		{"stale socket", &transport.OpError{Op: "dial unix", Addr: "/tmp/x", Err: syscall.ECONNREFUSED}, false, exitNotFound},
		{"dial timeout", &transport.OpError{Op: "dial unix", Addr: "/tmp/x", Err: context.DeadlineExceeded}, false, exitRuntime},
		{"stopped", &stoppedError{PID: 7, State: 'T'}, false, exitRuntime},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false, exitRuntime},
		{"no samples", stacks.ErrNoSamples, false, exitRuntime},
		{"stack spool", &stacks.Error{Op: "spool", Local: true, Err: syscall.ENOSPC}, false, exitIO},
		{"damaged", &nettrace.FormatError{Offset: 9, Msg: "bad"}, false, exitDamaged},
		{"unsupported", fmt.Errorf("x: %w", nettrace.ErrUnsupportedFormat), false, exitDamaged},
		{"disk full", fmt.Errorf("write: %w", syscall.ENOSPC), false, exitIO},
		{"open", openErr, false, exitIO},
		{"cancel without a signal", context.Canceled, false, exitFailure},
		{"cancel by a signal", fmt.Errorf("read: %w", context.Canceled), true, exitInterrupted},
	} {
		if got := exitCodeOf(tc.err, tc.interrupted); got != tc.want {
			t.Errorf("%s: exitCodeOf(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestExitCodesAreDistinct(t *testing.T) {
	seen := map[int]bool{}
	for _, c := range exitCodes {
		if seen[c.Code] {
			t.Errorf("exit code %d listed twice", c.Code)
		}
		seen[c.Code] = true
	}
	if len(exitCodes) != 9 {
		t.Errorf("%d exit codes documented, want the 9 of the table", len(exitCodes))
	}
	for _, c := range exitCodes {
		if c.Code > exitFailure && c.Sentence == "" {
			t.Errorf("exit code %d has no sentence", c.Code)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "--version")
	code2, out2, _ := run(t, "version")
	if code != 0 || code2 != 0 || out != out2 || !strings.HasPrefix(out, "clrdiag ") {
		t.Fatalf("--version %d %q, version %d %q: want the same line", code, out, code2, out2)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := formatVersion(bi)
	for _, want := range []string{"v1.2.3", "commit 0123456789ab-modified", "2026-01-02T03:04:05Z", "go1.99"} {
		if !strings.Contains(got, want) {
			t.Errorf("formatVersion = %q, lacks %q", got, want)
		}
	}
	if got := formatVersion(&debug.BuildInfo{}); !strings.HasPrefix(got, "(devel)") {
		t.Errorf("formatVersion of an unstamped build = %q", got)
	}
}
