//go:build linux

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The test binary runs clrdiag's Main when CLRDIAG_TEST_MAIN_ARGS holds
// its arguments (JSON), so a test can send it real signals.
func init() {
	if a := os.Getenv("CLRDIAG_TEST_MAIN_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
		os.Exit(Main(args, os.Stdin, os.Stdout, os.Stderr))
	}
}

// pipeBuffered returns the bytes waiting in the pipe of w (FIONREAD).
func pipeBuffered(w *os.File) (int, error) {
	var n int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, w.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// TestFileCommandsStopOnSIGINT: 'trace stats -' and 'trace report -' read
// standard input that never ends; Ctrl-C stops them with exit 130.
func TestFileCommandsStopOnSIGINT(t *testing.T) {
	for _, args := range [][]string{{"trace", "stats", "-"}, {"trace", "report", "-"}, {"trace", "events", "-"}} {
		t.Run(args[1], func(t *testing.T) {
			// Part of a header, then nothing: the reader blocks in Read.
			interruptReading(t, args, []byte("Nettrace"), syscall.SIGINT)
		})
	}
}

// interruptReading runs clrdiag with args in a child process whose
// standard input gets start and then never ends (the write end stays
// open), sends sig once the child has read start (it is then in the
// command and handles signals), and checks that it exits 130 saying it
// was interrupted.
func interruptReading(t *testing.T, args []string, start []byte, sig syscall.Signal) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CLRDIAG_TEST_MAIN_ARGS="+string(a))
	pr, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd.Stdin = pr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pr.Close()
	if _, err := stdin.Write(start); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := pipeBuffered(stdin)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("clrdiag never read its standard input")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
			t.Fatalf("after %v: %v, stderr %q; want exit %d", sig, err, stderr.String(), exitInterrupted)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 30s after %v; stderr %q", sig, stderr.String())
	}
}
