package diag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

// Dialer opens a fresh connection to a diagnostic endpoint. Every command
// uses its own connection, as the protocol requires.
// transport.Endpoint and ipctest.Server implement it.
type Dialer interface {
	Dial(ctx context.Context) (net.Conn, error)
}

// Defaults of Config.
const (
	DefaultTimeout             = 30 * time.Second
	DefaultMaxEnvironmentBytes = 16 << 20
	DefaultAttachTimeout       = 30 * time.Second
)

// Config tunes a Client. The zero value gives the defaults.
type Config struct {
	// Timeout bounds each command, from dialing to the end of the reply
	// (for StartStream: until the session id arrives). A context deadline
	// that comes earlier wins. 0 means DefaultTimeout; a negative value
	// means no per-command timeout (the context alone decides).
	Timeout time.Duration
	// Deadline, when set, bounds every command of the client, the way a
	// context deadline does: one deadline for a sequence of commands and
	// their version fallbacks (ProcessInfo3, 2, 1), such as a command line
	// tool's overall --timeout. Timeout still bounds each command.
	Deadline time.Time
	// MaxEnvironmentBytes caps the ProcessEnvironment continuation the
	// client accepts; the size the runtime announces is checked before
	// anything is allocated. 0 means DefaultMaxEnvironmentBytes.
	MaxEnvironmentBytes int
}

// Client sends diagnostic commands to one runtime. It holds no connection
// between calls and is safe for concurrent use.
type Client struct {
	d   Dialer
	cfg Config
}

// NewClient returns a client that dials d for every command. A nil cfg
// means the defaults.
func NewClient(d Dialer, cfg *Config) *Client {
	c := &Client{d: d}
	if cfg != nil {
		c.cfg = *cfg
	}
	if c.cfg.Timeout == 0 {
		c.cfg.Timeout = DefaultTimeout
	}
	if c.cfg.MaxEnvironmentBytes <= 0 {
		c.cfg.MaxEnvironmentBytes = DefaultMaxEnvironmentBytes
	}
	return c
}

// exchange is one command on one connection: dial, send, read the reply.
// On success with keep=true the caller owns conn (deadline cleared, no longer
// tied to ctx); otherwise conn is closed before exchange returns.
func (c *Client) exchange(ctx context.Context, name string, msg []byte, keep bool, cont func(conn net.Conn, m ipc.Message) error) (conn net.Conn, reply ipc.Message, err error) {
	if c.d == nil {
		return nil, reply, fmt.Errorf("%s: the client has no dialer; create it with diag.NewClient(endpoint, nil)", name)
	}
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	if !c.cfg.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.cfg.Deadline)
		defer cancel()
	}
	start := time.Now()
	nc, err := c.d.Dial(ctx)
	if err != nil {
		return nil, reply, c.wrap(ctx, name, "connecting to the diagnostic endpoint", start, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	handedOver := false
	defer func() {
		if !handedOver {
			stop()
			nc.Close()
		}
	}()
	if _, err = nc.Write(msg); err != nil {
		return nil, reply, c.wrap(ctx, name, "sending the request", start, err)
	}
	reply, err = ipc.ReadReply(nc)
	if err != nil {
		return nil, reply, c.wrap(ctx, name, "reading the reply", start, err)
	}
	if cont != nil {
		if err = cont(nc, reply); err != nil {
			return nil, reply, c.wrap(ctx, name, "reading the reply", start, err)
		}
	}
	if !keep {
		return nil, reply, nil
	}
	if !stop() {
		// ctx ended and closed the connection.
		return nil, reply, c.wrap(ctx, name, "handing over the stream", start, net.ErrClosed)
	}
	_ = nc.SetDeadline(time.Time{})
	handedOver = true
	return nc, reply, nil
}

// wrap turns a failure into an error naming the command and what to try.
func (c *Client) wrap(ctx context.Context, name, step string, start time.Time, err error) error {
	var se *ipc.ServerError
	if errors.As(err, &se) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		if errors.Is(cause, context.Canceled) {
			return fmt.Errorf("%s: %s: canceled after %v: %w", name, step, time.Since(start).Round(time.Millisecond), cause)
		}
		return fmt.Errorf("%s: %s: no answer within %v; the runtime may be suspended, busy with another diagnostic request (one runs at a time, e.g. a slow profiler attach), or the endpoint is not a .NET runtime; retry or raise the timeout: %w (%w)",
			name, step, time.Since(start).Round(time.Millisecond), cause, err)
	}
	return fmt.Errorf("%s: %s: %w", name, step, err)
}

// message builds a whole request message.
func message(set, id uint8, payload []byte) ([]byte, error) {
	return ipc.AppendMessage(make([]byte, 0, ipc.HeaderSize+len(payload)), set, id, payload)
}

// call sends one command and returns the OK payload. An Error reply becomes
// a *ipc.ServerError naming the command.
func (c *Client) call(ctx context.Context, set, id uint8, payload []byte, cont func(net.Conn, ipc.Message) error) ([]byte, error) {
	name := ipc.CommandName(set, id)
	msg, err := message(set, id, payload)
	if err != nil {
		return nil, err
	}
	_, reply, err := c.exchange(ctx, name, msg, false, cont)
	if err != nil {
		return nil, nameServerError(err, set, id)
	}
	return reply.Payload, nil
}

func nameServerError(err error, set, id uint8) error {
	var se *ipc.ServerError
	if errors.As(err, &se) && se.CommandSet == 0 && se.CommandID == 0 {
		se.CommandSet, se.CommandID = set, id
	}
	return err
}

// callHR sends a command whose OK reply carries an HRESULT and turns a
// failure HRESULT into a *ipc.ServerError.
func (c *Client) callHR(ctx context.Context, set, id uint8, payload []byte) error {
	p, err := c.call(ctx, set, id, payload, nil)
	if err != nil {
		return err
	}
	if len(p) == 0 {
		return nil // tolerate an OK without payload
	}
	hr, err := ipc.DecodeHRESULTReply(p)
	if err != nil {
		return fmt.Errorf("%s: %w", ipc.CommandName(set, id), err)
	}
	if hr != ipc.HRSuccess {
		return &ipc.ServerError{CommandSet: set, CommandID: id, HRESULT: hr}
	}
	return nil
}

// Do sends one command with an arbitrary payload and returns the payload of
// the OK reply. Error replies give a *ipc.ServerError.
func (c *Client) Do(ctx context.Context, set, id uint8, payload []byte) ([]byte, error) {
	return c.call(ctx, set, id, payload, nil)
}

// DoRaw sends raw bytes as they are (for example a header with a wrong magic)
// and reads one reply.
func (c *Client) DoRaw(ctx context.Context, raw []byte) (ipc.Message, error) {
	_, m, err := c.exchange(ctx, "raw request", raw, false, nil)
	return m, err
}

// ProcessInfo asks the runtime who it is, trying ProcessInfo3, then 2, then
// 1 when the runtime answers UNKNOWN_COMMAND. The result's Version says which
// answered. .NET Core 3.x knows none of them.
func (c *Client) ProcessInfo(ctx context.Context) (*ProcessInfo, error) {
	var err error
	for v := 3; v >= 1; v-- {
		id, _ := ipc.ProcessInfoCommand(v)
		var p []byte
		p, err = c.call(ctx, ipc.SetProcess, id, nil, nil)
		if errors.Is(err, ipc.ErrUnknownCommand) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info, err := ipc.DecodeProcessInfo(v, p)
		if err == nil {
			err = checkProcessInfo(ipc.CommandName(ipc.SetProcess, id), info)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ipc.CommandName(ipc.SetProcess, id), err)
		}
		return info, nil
	}
	return nil, err
}

// checkProcessInfo refuses a ProcessInfo reply no runtime sends: process
// id 0, or a string holding NUL characters (the runtime sends C strings;
// an all-zero block decodes to such strings), as a *ipc.ProtocolError.
func checkProcessInfo(name string, p *ProcessInfo) error {
	bad := func(reason string) error {
		return &ipc.ProtocolError{What: name + " reply", Reason: reason + "; no runtime sends that"}
	}
	if p.PID == 0 {
		return bad("process id 0")
	}
	for _, f := range []struct{ name, v string }{
		{"command line", p.CommandLine}, {"OS", p.OS}, {"architecture", p.Arch},
		{"entry assembly", p.ManagedEntrypointAssemblyName}, {"runtime version", p.ClrProductVersion},
		{"runtime identifier", p.RuntimeIdentifier},
	} {
		if strings.ContainsRune(f.v, 0) {
			return bad(fmt.Sprintf("the %s holds %d NUL characters in %d", f.name, strings.Count(f.v, "\x00"), len([]rune(f.v))))
		}
	}
	return nil
}

// Environment returns the target's environment as "NAME=value" strings. The
// size the runtime announces is checked against Config.MaxEnvironmentBytes
// before the block is read.
func (c *Client) Environment(ctx context.Context) ([]string, error) {
	var env []string
	limit := c.cfg.MaxEnvironmentBytes
	_, err := c.call(ctx, ipc.SetProcess, ipc.CmdProcessEnvironment, nil, func(conn net.Conn, m ipc.Message) error {
		r, err := ipc.DecodeEnvironmentReply(m.Payload)
		if err != nil {
			return err
		}
		if uint64(r.IncomingBytes) > uint64(limit) {
			return fmt.Errorf("the runtime announces a %d-byte environment block, over the %d-byte limit; raise diag.Config.MaxEnvironmentBytes if this is expected", r.IncomingBytes, limit)
		}
		block := make([]byte, r.IncomingBytes)
		if n, err := io.ReadFull(conn, block); err != nil {
			return &ipc.ProtocolError{What: "environment block", Offset: n, Expected: len(block), Got: n, Err: err}
		}
		env, err = ipc.DecodeEnvironment(block)
		return err
	})
	if err != nil {
		return nil, err
	}
	return env, nil
}

// SetEnvironmentVariable sets a variable in the target process (.NET 6+).
func (c *Client) SetEnvironmentVariable(ctx context.Context, name, value string) error {
	p, err := (&ipc.SetEnvironmentVariableRequest{Name: name, Value: value}).MarshalBinary()
	if err != nil {
		return err
	}
	return c.callHR(ctx, ipc.SetProcess, ipc.CmdSetEnvironmentVariable, p)
}

// ResumeRuntime lets a runtime suspended at startup continue (a no-op when
// it is not suspended). With several suspending ports, every one of them
// must be resumed.
func (c *Client) ResumeRuntime(ctx context.Context) error {
	return c.callHR(ctx, ipc.SetProcess, ipc.CmdResumeRuntime, nil)
}

// EnablePerfMap makes the runtime write perf map and/or jitdump files
// (.NET 8+).
func (c *Client) EnablePerfMap(ctx context.Context, t PerfMapType) error {
	p, _ := (&ipc.EnablePerfMapRequest{Type: t}).MarshalBinary()
	return c.callHR(ctx, ipc.SetProcess, ipc.CmdEnablePerfMap, p)
}

// DisablePerfMap stops perf map output (.NET 8+).
func (c *Client) DisablePerfMap(ctx context.Context) error {
	return c.callHR(ctx, ipc.SetProcess, ipc.CmdDisablePerfMap, nil)
}

// ApplyStartupHook adds a managed startup hook assembly (.NET 8+). The
// runtime accepts it only while suspended at startup (otherwise
// ipc.ErrInvalidArgument); resume it afterwards.
func (c *Client) ApplyStartupHook(ctx context.Context, path string) error {
	if path == "" {
		return fmt.Errorf("ApplyStartupHook: empty path; give the path of the hook assembly: %w", ipc.ErrInvalidArgument)
	}
	p, _ := (&ipc.ApplyStartupHookRequest{Path: path}).MarshalBinary()
	return c.callHR(ctx, ipc.SetProcess, ipc.CmdApplyStartupHook, p)
}

// StopTracing ends an EventPipe session started on another connection. The
// runtime then writes rundown and closes that session's stream.
func (c *Client) StopTracing(ctx context.Context, sessionID uint64) error {
	p, _ := (&ipc.StopTracingRequest{SessionID: sessionID}).MarshalBinary()
	_, err := c.call(ctx, ipc.SetEventPipe, ipc.CmdStopTracing, p, nil)
	return err
}

// StartStream sends a CollectTracing* command (id is one of
// ipc.CmdCollectTracing..CmdCollectTracing6) with an encoded payload, reads
// the OK reply and its session id, and hands back the connection that
// carries the trace stream. The per-command timeout covers only the start;
// the returned connection has no deadline and is no longer tied to ctx: the
// caller reads it to EOF (after StopTracing) and closes it.
func (c *Client) StartStream(ctx context.Context, commandID uint8, payload []byte) (sessionID uint64, stream net.Conn, err error) {
	msg, err := message(ipc.SetEventPipe, commandID, payload)
	if err != nil {
		return 0, nil, err
	}
	name := ipc.CommandName(ipc.SetEventPipe, commandID)
	var id uint64
	conn, _, err := c.exchange(ctx, name, msg, true, func(_ net.Conn, m ipc.Message) error {
		var err error
		id, err = ipc.DecodeSessionIDReply(m.Payload)
		return err
	})
	if err != nil {
		return 0, nil, nameServerError(err, ipc.SetEventPipe, commandID)
	}
	return id, conn, nil
}

// StartTracing encodes req and calls StartStream.
func (c *Client) StartTracing(ctx context.Context, req *ipc.CollectTracingRequest) (sessionID uint64, stream net.Conn, err error) {
	p, err := req.MarshalBinary()
	if err != nil {
		return 0, nil, err
	}
	_, id := req.Command()
	return c.StartStream(ctx, id, p)
}

// attachTimeoutMS converts d to the wire value in milliseconds.
func attachTimeoutMS(d time.Duration) (uint32, error) {
	switch {
	case d == 0:
		d = DefaultAttachTimeout
	case d < 0:
		return 0, fmt.Errorf("AttachProfiler: negative attach timeout %v: %w", d, ipc.ErrInvalidArgument)
	}
	ms := d.Milliseconds()
	if ms > math.MaxUint32 {
		ms = math.MaxUint32
	}
	return uint32(ms), nil
}
