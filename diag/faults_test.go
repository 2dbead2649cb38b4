package diag_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

func faultOn(f ipctest.Fault) func(set, id uint8) ipctest.Fault {
	return func(uint8, uint8) ipctest.Fault { return f }
}

func TestNeverAnswers(t *testing.T) {
	srv, _ := newServer(t, ipctest.Config{Fault: faultOn(ipctest.FaultNeverAnswer)})
	// The context deadline wins over the 30 s default timeout.
	cl := diag.NewClient(srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cl.ProcessInfo(ctx)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("returned after %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ProcessInfo3") || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("err %v", err)
	}
	// Config.Timeout alone also bounds the call.
	cl = diag.NewClient(srv, &diag.Config{Timeout: 100 * time.Millisecond})
	start = time.Now()
	err = cl.ResumeRuntime(context.Background())
	if took := time.Since(start); took > 3*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after %v: %v", took, err)
	}
}

func TestCancelClosesConnection(t *testing.T) {
	srv, cl := newServer(t, ipctest.Config{Fault: faultOn(ipctest.FaultNeverAnswer)})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := cl.Environment(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(srv.Requests()) != 1 {
		t.Fatalf("requests %d", len(srv.Requests()))
	}
}

func TestCloseEarly(t *testing.T) {
	_, cl := newServer(t, ipctest.Config{Fault: faultOn(ipctest.FaultCloseEarly)})
	err := cl.ResumeRuntime(context.Background())
	var pe *ipc.ProtocolError
	if !errors.As(err, &pe) || pe.Expected != ipc.HeaderSize || pe.Got != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v", err)
	}
	if !strings.HasPrefix(err.Error(), "ResumeRuntime: reading the reply: malformed reply header") {
		t.Fatalf("message %v", err)
	}
}

func TestShortReply(t *testing.T) {
	_, cl := newServer(t, ipctest.Config{Fault: faultOn(ipctest.FaultShortReply)})
	_, err := cl.ProcessInfo(context.Background())
	var pe *ipc.ProtocolError
	if !errors.As(err, &pe) || pe.Expected <= pe.Got || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("err %v", err)
	}
}

func TestOversizeReply(t *testing.T) {
	_, cl := newServer(t, ipctest.Config{Fault: faultOn(ipctest.FaultOversizeReply)})
	ctx := context.Background()
	// A 4 GiB environment block is refused before anything is allocated.
	_, err := cl.Environment(ctx)
	if err == nil || !strings.Contains(err.Error(), "4294967280-byte environment block") {
		t.Fatalf("environment: %v", err)
	}
	// A string of 2^31-1 code units is refused.
	_, err = cl.ProcessInfo(ctx)
	var pe *ipc.ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "command line") {
		t.Fatalf("process info: %v", err)
	}
	// A header that claims 65535 bytes but stops short.
	err = cl.DisablePerfMap(ctx)
	if !errors.As(err, &pe) || pe.Expected != ipc.MaxPayloadSize {
		t.Fatalf("perf map: %v", err)
	}
}

func TestBadMagicRaw(t *testing.T) {
	srv, cl := newServer(t, ipctest.Config{})
	msg, _ := ipc.AppendMessage(nil, ipc.SetProcess, ipc.CmdProcessInfo, nil)
	copy(msg, "DOTNET_IPC_V2")
	_, err := cl.DoRaw(context.Background(), msg)
	if !errors.Is(err, ipc.ErrUnknownMagic) {
		t.Fatalf("err %v", err)
	}
	if r := srv.Requests(); len(r) != 1 || !errors.Is(r[0].Err, ipc.ErrUnknownMagic) {
		t.Fatalf("server log %+v", r)
	}
}

func TestDoUnknownAndMalformed(t *testing.T) {
	_, cl := newServer(t, ipctest.Config{Runtime: ipctest.NET10})
	ctx := context.Background()
	free := uint8(0) // an id of the process set that no command has
	for _, ok := ipc.LookupCommand(ipc.SetProcess, free); ok; _, ok = ipc.LookupCommand(ipc.SetProcess, free) {
		free++
	}
	_, err := cl.Do(ctx, ipc.SetProcess, free, nil)
	if !errors.Is(err, ipc.ErrUnknownCommand) || !strings.HasPrefix(err.Error(), fmt.Sprintf("command 0x04%02X: this runtime does not support it", free)) {
		t.Fatalf("unknown: %v", err)
	}
	// A truncated AttachProfiler payload is BAD_ENCODING, as on 3.1.
	_, err = cl.Do(ctx, ipc.SetProfiler, ipc.CmdAttachProfiler, make([]byte, 10))
	if !errors.Is(err, ipc.ErrBadEncoding) || !strings.HasPrefix(err.Error(), "AttachProfiler:") {
		t.Fatalf("malformed: %v", err)
	}
	// Payloads over the u16 limit are refused before dialing.
	_, err = cl.Do(ctx, ipc.SetProcess, ipc.CmdApplyStartupHook, make([]byte, ipc.MaxPayloadSize+1))
	if !errors.Is(err, ipc.ErrPayloadTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	long := strings.Repeat("x", 40000)
	if err := cl.ApplyStartupHook(ctx, long); !errors.Is(err, ipc.ErrPayloadTooLarge) {
		t.Fatalf("long path: %v", err)
	}
}

func TestDialFailure(t *testing.T) {
	srv, err := ipctest.NewServer(ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	cl := diag.NewClient(srv, nil)
	err = cl.ResumeRuntime(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ResumeRuntime: connecting to the diagnostic endpoint") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
}
