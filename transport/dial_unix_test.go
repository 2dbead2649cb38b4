//go:build unix

package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDialRetriesUntilListenerAppears(t *testing.T) {
	path := filepath.Join(shortDir(t), "dotnet-diagnostic-1-1-socket")
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		l, err := net.Listen("unix", path)
		if err != nil {
			done <- err
			return
		}
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		_, err = c.Write([]byte("hi"))
		c.Close()
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	conn, err := Endpoint{Network: NetworkUnix, Address: path}.Dial(ctx)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("Dial returned after %v, before the listener existed", el)
	}
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "hi" {
		t.Errorf("read %q, %v; want \"hi\"", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDialStaleSocketIsRefused(t *testing.T) {
	path := filepath.Join(shortDir(t), "dotnet-diagnostic-2-1-socket")
	staleSocket(t, path, time.Time{})
	start := time.Now()
	_, err := Dialer{Endpoint: Endpoint{Network: NetworkUnix, Address: path}, RetryFor: 100 * time.Millisecond}.Dial(context.Background())
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want ECONNREFUSED", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Addr != path {
		t.Fatalf("err = %#v, want *OpError for %s", err, path)
	}
	if !strings.Contains(err.Error(), "stale socket") || !op.Temporary() {
		t.Errorf("error text lacks the stale-socket hint or is not temporary: %v", err)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 2*time.Second {
		t.Errorf("gave up after %v, want about RetryFor=100ms", el)
	}
}

func TestDialNoRetry(t *testing.T) {
	path := filepath.Join(shortDir(t), "missing")
	start := time.Now()
	_, err := Dialer{Endpoint: Endpoint{Network: NetworkUnix, Address: path}, RetryFor: -1}.Dial(context.Background())
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "clrdiag ps") {
		t.Fatalf("err = %v, want ENOENT with a hint", err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Errorf("RetryFor<0 still retried for %v", el)
	}
}

func TestDialHonoursContextDeadline(t *testing.T) {
	path := filepath.Join(shortDir(t), "never")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Dialer{Endpoint: Endpoint{Network: NetworkUnix, Address: path}, RetryFor: time.Minute}.Dial(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("err = %v: not a net.Error timeout", err)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v: lost the last attempt's cause", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Dial took %v despite a 150ms deadline", el)
	}
	// An already-cancelled context does not dial at all.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := (Endpoint{Network: NetworkUnix, Address: path}).Dial(ctx2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

func TestDialRejectsBadAddresses(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 120)
	_, err := Dialer{Endpoint: Endpoint{Network: NetworkUnix, Address: long}}.Dial(context.Background())
	if !errors.Is(err, errPathTooLong) || !strings.Contains(err.Error(), "shorter TMPDIR") {
		t.Errorf("long path: err = %v", err)
	}
	_, err = Endpoint{Network: NetworkPipe, Address: `\\.\pipe\x`}.Dial(context.Background())
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("pipe on unix: err = %v, want ErrNotSupported", err)
	}
	_, err = Endpoint{Network: "tcp", Address: "x"}.Dial(context.Background())
	if err == nil || !strings.Contains(err.Error(), `unknown network "tcp"`) {
		t.Errorf("tcp: err = %v", err)
	}
}

func TestOpErrorPermissionHint(t *testing.T) {
	err := &OpError{Op: "dial unix", Addr: "/tmp/s", Err: &os.SyscallError{Syscall: "connect", Err: syscall.EACCES}}
	if !strings.Contains(err.Error(), "0600") || !strings.Contains(err.Error(), "root") {
		t.Errorf("EACCES text lacks the 0600 hint: %v", err)
	}
	if !errors.Is(err, syscall.EACCES) || err.Temporary() || err.Timeout() {
		t.Errorf("EACCES classification wrong: %v", err)
	}
}
