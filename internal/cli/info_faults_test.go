//go:build linux

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// A 65,515-byte all-zero ProcessInfo3 reply used to print "Process ID: 0"
// and exit 0. It is a protocol error now (exit 4), and nothing is printed
// as if it were the process.
func TestInfoImpossibleReply(t *testing.T) {
	port := hostileRuntime(t, zeroProcessInfo)
	code, out, errOut := run(t, "info", "--diagnostic-port", port)
	checkClass(t, code, exitRuntime, errOut)
	if out != "" {
		t.Errorf("printed as a reply:\n%s", out)
	}
	if !strings.Contains(errOut, "ProcessInfo3") || !strings.Contains(errOut, "left over") {
		t.Errorf("the message does not say what is wrong:\n%s", errOut)
	}
	// Right length, impossible values.
	port = hostileRuntime(t, func(ipc.Header) []byte {
		p, _ := (&ipc.ProcessInfo{Version: 3, PayloadVersion: 1, PID: 0, CommandLine: "x", OS: "Linux", Arch: "x64"}).MarshalBinary()
		m, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdOK, p)
		return m
	})
	code, _, errOut = run(t, "info", "--diagnostic-port", port)
	checkClass(t, code, exitRuntime, errOut)
	if !strings.Contains(errOut, "process id 0") {
		t.Errorf("pid 0 not named:\n%s", errOut)
	}
}

// A runtime that answers every command slowly: info falls back from
// ProcessInfo3 to 2 to 1, each answered after a delay (UNKNOWN_COMMAND on
// .NET 5). It used to take the sum of the delays (70 s against a runtime
// answering in ~24 s); --timeout is now one deadline for all of them.
// -short scales the delay and the timeout down by 3 (each answer still
// within --timeout, the three together beyond it).
func TestInfoOverallTimeout(t *testing.T) {
	delay, timeout := 1500*time.Millisecond, "2s"
	if testing.Short() {
		delay, timeout = 500*time.Millisecond, "700ms"
	}
	_, port := fakeRuntime(t, ipctest.Config{Runtime: ipctest.NET5, Delay: delay, Fault: faultAll(ipctest.FaultDelay)})
	begin := time.Now()
	code, _, errOut := run(t, "info", "--diagnostic-port", port, "--timeout", timeout)
	d := time.Since(begin)
	checkClass(t, code, exitRuntime, errOut)
	if d > 10*time.Second {
		t.Errorf("took %v with --timeout %s", d, timeout)
	}
	if !strings.Contains(errOut, "--timeout") {
		t.Errorf("the message does not name the flag to raise:\n%s", errOut)
	}
	// Within a deadline long enough for the three, the fallbacks answer.
	code, out, errOut := run(t, "info", "--diagnostic-port", port, "--timeout", "30s")
	if code != 0 || !strings.Contains(out, "ProcessInfo") {
		t.Errorf("slow but within --timeout: exit %d\n%s%s", code, out, errOut)
	}
}
