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

	"github.com/clrdiag/clrdiag/ipctest"
)

func TestDialRetriesUntilListenerAppears(t *testing.T) {
	path := filepath.Join(ipctest.ShortDir(t), "dotnet-diagnostic-1-1-socket")
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
	path := filepath.Join(ipctest.ShortDir(t), "dotnet-diagnostic-2-1-socket")
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
	path := filepath.Join(ipctest.ShortDir(t), "missing")
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
	path := filepath.Join(ipctest.ShortDir(t), "never")
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
	// RetryFor is a minute: ending well before it shows the deadline ended
	// the dial. (A deadline error alone shows it too; RetryFor running out
	// returns the bare ENOENT.) The bound leaves room for a loaded machine.
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("Dial took %v despite a 150ms deadline", el)
	}
	// Whether the error also carries ENOENT depends on whether an attempt
	// ran before the deadline, which a loaded machine does not promise:
	// TestDialRetryKeepsLastCause checks that part without a clock.

	// An already-cancelled context does not dial at all.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := (Endpoint{Network: NetworkUnix, Address: path}).Dial(ctx2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

// TestDialRetryKeepsLastCause checks that when the context ends, the error
// names both the context's end and why the last attempt failed, in the two
// ways a context can end between attempts: while waiting to retry, and in
// the attempt itself, where net.Dialer compares its deadline with the clock
// and returns a timeout before the context's timer has fired (seen under CPU
// load: the cause was lost and the error read only "i/o timeout").
func TestDialRetryKeepsLastCause(t *testing.T) {
	enoent := &os.SyscallError{Syscall: "connect", Err: syscall.ENOENT}
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		_, err := dialRetry(ctx, func(context.Context) (net.Conn, error) {
			calls++
			cancel()
			return nil, enoent
		}, time.Minute)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, os.ErrNotExist) || calls != 1 {
			t.Errorf("err = %v after %d attempts, want Canceled and ENOENT after 1", err, calls)
		}
	})
	t.Run("deadline seen by the dial first", func(t *testing.T) {
		// A deadline already in the past, but a context whose Err is still
		// nil: the state net.Dialer can see before the context's timer runs.
		ctx := pastDeadline{context.Background(), time.Now().Add(-time.Millisecond)}
		path := filepath.Join(ipctest.ShortDir(t), "never")
		calls := 0
		_, err := dialRetry(ctx, func(ctx context.Context) (net.Conn, error) {
			calls++
			if calls == 1 {
				return nil, enoent
			}
			return dialOnce(ctx, NetworkUnix, path) // net.Dialer sees the deadline
		}, time.Minute)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrNotExist) || calls != 2 {
			t.Errorf("err = %v after %d attempts, want DeadlineExceeded and ENOENT after 2", err, calls)
		}
		if !strings.Contains(err.Error(), "last attempt") {
			t.Errorf("err = %v: does not say what the last attempt met", err)
		}
	})
}

// pastDeadline is a context whose deadline has passed but whose Done channel
// has not closed yet.
type pastDeadline struct {
	context.Context
	deadline time.Time
}

func (c pastDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

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
