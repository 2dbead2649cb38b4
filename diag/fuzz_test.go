package diag_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
)

// replayDialer answers every request with fixed bytes, then the end of
// the stream. Its connections live in memory, with no goroutine behind
// them: a fuzzing worker runs tens of thousands of inputs a second, and a
// server goroutine per connection (a net.Pipe) piled up by the hundred
// thousand on a loaded machine until one input outlasted Go's 10 s limit.
type replayDialer struct{ reply []byte }

func (d replayDialer) Dial(ctx context.Context) (net.Conn, error) {
	return &replayConn{reply: bytes.NewReader(d.reply)}, nil
}

// replayConn takes whatever is written and reads back the reply.
type replayConn struct {
	reply  *bytes.Reader
	closed atomic.Bool // the client may close from a context watcher
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return c.reply.Read(p)
}

func (c *replayConn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return len(p), nil
}

func (c *replayConn) Close() error                     { c.closed.Store(true); return nil }
func (c *replayConn) LocalAddr() net.Addr              { return replayAddr{} }
func (c *replayConn) RemoteAddr() net.Addr             { return replayAddr{} }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

type replayAddr struct{}

func (replayAddr) Network() string { return "memory" }
func (replayAddr) String() string  { return "replay" }

// FuzzClientReplies feeds arbitrary reply bytes to the client's commands:
// none may panic or hang, and failures must be typed.
func FuzzClientReplies(f *testing.F) {
	ok := func(p []byte) []byte { m, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdOK, p); return m }
	info, _ := (&ipc.ProcessInfo{Version: 3, PayloadVersion: 1, PID: 1, OS: "Linux"}).MarshalBinary()
	f.Add(ok(info))
	env := ipc.AppendEnvironment(nil, []string{"A=1"})
	er, _ := ipc.EnvironmentReply{IncomingBytes: uint32(len(env))}.AppendBinary(nil)
	f.Add(append(ok(er), env...))
	f.Add(ok(ipc.AppendSessionIDReply(nil, 7)))
	f.Add(ok(ipc.AppendHRESULTReply(nil, ipc.HRFail)))
	em, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdError, ipc.AppendErrorReply(nil, ipc.HRFail, "m", true))
	f.Add(em)
	f.Fuzz(func(t *testing.T, reply []byte) {
		// A client that waits for its timeout is reported as hung here,
		// with the input, before Go's fuzzing engine kills a worker whose
		// input runs 10 s (exit status 2 and no message).
		c := diag.NewClient(replayDialer{reply}, &diag.Config{Timeout: 4 * time.Second, MaxEnvironmentBytes: 1 << 16})
		ctx := context.Background()
		start := time.Now()
		check := func(op string, err error) {
			// Every reply is there at once and the connection then closes:
			// an operation that takes seconds waited for something else.
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("%s took %v (%d goroutines): %v", op, d, runtime.NumGoroutine(), err)
			}
			start = time.Now()
			var se *ipc.ServerError
			var pe *ipc.ProtocolError
			if err != nil && !errors.As(err, &se) && !errors.As(err, &pe) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				if len(err.Error()) == 0 {
					t.Fatal("empty error message")
				}
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("client hung: %v", err)
			}
		}
		_, err := c.ProcessInfo(ctx)
		check("ProcessInfo", err)
		_, err = c.Environment(ctx)
		check("Environment", err)
		check("ResumeRuntime", c.ResumeRuntime(ctx))
		_, s, err := c.StartStream(ctx, ipc.CmdCollectTracing2, nil)
		check("StartStream", err)
		if s != nil {
			s.Close()
		}
	})
}
