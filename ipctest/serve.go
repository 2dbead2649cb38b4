package ipctest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

// reply is what a handler decided to answer.
type reply struct {
	errHR   uint32 // non-zero: an Error reply with this HRESULT
	errMsg  string
	withMsg bool
	ok      []byte // OK payload
	cont    []byte // continuation after the OK reply
	trace   *TracingSession
	stopped chan struct{}
}

func errReply(hr uint32) reply { return reply{errHR: hr} }
func okHR() reply              { return reply{ok: ipc.AppendHRESULTReply(nil, ipc.HRSuccess)} }

// serve reads one command on c and answers it. It returns a function that
// runs a tracing session on c (nil when the exchange is over); the caller
// closes c after it.
func (s *Server) serve(c net.Conn, reverse bool) func() {
	h, err := ipc.ReadHeader(c)
	if err != nil {
		if h.Magic != ([14]byte{}) || h.Size != 0 { // a header arrived
			hr := ipc.HRBadEncoding
			if errors.Is(err, ipc.ErrUnknownMagic) {
				hr = ipc.HRUnknownMagic
			}
			s.log(Received{Header: h, Err: err, Reverse: reverse})
			s.writeError(c, hr, "", false)
		}
		return nil
	}
	payload := make([]byte, h.PayloadSize())
	if _, err := io.ReadFull(c, payload); err != nil {
		s.log(Received{Header: h, Err: err, Reverse: reverse})
		return nil
	}
	set, id := h.CommandSet, h.CommandID
	decID := id
	if s.cfg.Runtime == NET3_1 && set == ipc.SetProfiler {
		decID = ipc.CmdAttachProfiler
	}
	req, derr := ipc.DecodeRequest(set, decID, payload)
	s.log(Received{Header: h, Request: req, Err: derr, Reverse: reverse})

	fault := FaultNone
	if s.cfg.Fault != nil {
		fault = s.cfg.Fault(set, id)
	}
	switch fault {
	case FaultCloseEarly:
		return nil
	case FaultNeverAnswer:
		_, _ = io.Copy(io.Discard, c) // until the client or Close ends it
		return nil
	case FaultError:
		s.writeError(c, ipc.HRFail, "", false)
		return nil
	case FaultDelay:
		t := time.NewTimer(s.cfg.Delay)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return nil
		}
	}

	var r reply
	switch {
	case !s.cfg.Runtime.Supports(set, id):
		r = errReply(ipc.HRUnknownCommand)
	case derr != nil:
		r = errReply(ipc.HRBadEncoding)
	default:
		r = s.handle(set, decID, req)
	}
	if r.errHR != 0 {
		s.writeError(c, r.errHR, r.errMsg, r.withMsg)
		return nil
	}
	msg, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdOK, r.ok)
	switch fault {
	case FaultShortReply:
		_, _ = c.Write(msg[:ipc.HeaderSize+len(r.ok)/2])
		s.endSession(r)
		return nil
	case FaultOversizeReply:
		s.writeOversize(c, set, id, msg)
		s.endSession(r)
		return nil
	}
	if _, err := c.Write(append(msg, r.cont...)); err != nil {
		s.endSession(r)
		return nil
	}
	if r.trace == nil {
		return nil
	}
	r.trace.Stream = c
	return func() { s.runSession(r) }
}

func (s *Server) writeError(c net.Conn, hr uint32, msg string, withMsg bool) {
	m, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdError, ipc.AppendErrorReply(nil, hr, msg, withMsg))
	_, _ = c.Write(m)
}

// writeOversize sends a reply whose lengths exceed what follows.
func (s *Server) writeOversize(c net.Conn, set, id uint8, msg []byte) {
	var p []byte
	switch {
	case set == ipc.SetProcess && id == ipc.CmdProcessEnvironment:
		p, _ = ipc.EnvironmentReply{IncomingBytes: 0xFFFFFFF0}.AppendBinary(nil)
	case set == ipc.SetProcess && (id == ipc.CmdProcessInfo || id == ipc.CmdProcessInfo2 || id == ipc.CmdProcessInfo3):
		if id == ipc.CmdProcessInfo3 {
			p = ipc.AppendHRESULTReply(p, 1) // payload version
		}
		p = append(p, make([]byte, 8+16)...)
		p = ipc.AppendHRESULTReply(p, 0x7FFFFFFF) // command line length
		p = append(p, 'x', 0)
	default:
		msg[14], msg[15] = 0xFF, 0xFF
		_, _ = c.Write(msg)
		return
	}
	m, _ := ipc.AppendMessage(nil, ipc.SetServer, ipc.CmdOK, p)
	_, _ = c.Write(m)
}

func (s *Server) log(r Received) {
	s.mu.Lock()
	s.state.received = append(s.state.received, r)
	s.mu.Unlock()
}

// handle runs a decoded, supported command against the imitated state.
func (s *Server) handle(set, id uint8, req ipc.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.state
	switch r := req.(type) {
	case *ipc.GenerateCoreDumpRequest:
		st.dumps = append(st.dumps, *r)
		if s.cfg.DumpHRESULT != 0 {
			if id == ipc.CmdGenerateCoreDump3 {
				return reply{errHR: s.cfg.DumpHRESULT, errMsg: s.cfg.DumpMessage, withMsg: true}
			}
			return errReply(s.cfg.DumpHRESULT)
		}
		if s.cfg.DumpContent != nil {
			// As createdump: the file at the path, world-readable.
			if err := os.WriteFile(r.Path, s.cfg.DumpContent, 0o644); err != nil {
				return errReply(ipc.HRFail)
			}
		}
		return okHR()
	case *ipc.AttachProfilerRequest:
		switch {
		case s.cfg.ProfilerHRESULT != 0:
			return errReply(s.cfg.ProfilerHRESULT)
		case r.Path == "":
			return errReply(ipc.HRFail)
		case st.profiler:
			return errReply(ipc.HRProfilerAlreadyActive)
		}
		st.profiler = true
		return okHR()
	case *ipc.StartupProfilerRequest:
		switch {
		case !st.suspended:
			return errReply(ipc.HRInvalidArg)
		case s.cfg.ProfilerHRESULT != 0:
			return errReply(s.cfg.ProfilerHRESULT)
		}
		cp := *r
		st.startupProf = &cp
		return okHR()
	case *ipc.ApplyStartupHookRequest:
		if !st.suspended || r.Path == "" {
			return errReply(ipc.HRInvalidArg)
		}
		st.hooks = append(st.hooks, r.Path)
		return okHR()
	case *ipc.SetEnvironmentVariableRequest:
		if r.Name == "" {
			return errReply(ipc.HRInvalidArg)
		}
		st.setEnv(r.Name, r.Value)
		return okHR()
	case *ipc.EnablePerfMapRequest:
		if r.Type > ipc.PerfMapPerfMap {
			return errReply(ipc.HRInvalidArg)
		}
		st.perfMap = r.Type
		return okHR()
	case *ipc.StopTracingRequest:
		// The runtime answers OK with the id whether or not it named a
		// live session.
		if ch, ok := st.sessions[r.SessionID]; ok {
			close(ch)
			delete(st.sessions, r.SessionID)
		}
		return reply{ok: ipc.AppendSessionIDReply(nil, r.SessionID)}
	case *ipc.CollectTracingRequest:
		if len(r.Providers) == 0 || (r.Version >= 6 && r.BufferMode > ipc.BufferBlock) {
			return errReply(ipc.HRBadEncoding)
		}
		if r.SessionType == ipc.SessionUserEvents {
			return errReply(ipc.HRNotSupported)
		}
		st.nextSession += 0x40
		sid := st.nextSession
		ch := make(chan struct{})
		st.sessions[sid] = ch
		return reply{
			ok:      ipc.AppendSessionIDReply(nil, sid),
			trace:   &TracingSession{ID: sid, Request: r, Stopped: ch},
			stopped: ch,
		}
	case *ipc.EmptyRequest:
		switch id {
		case ipc.CmdProcessInfo, ipc.CmdProcessInfo2, ipc.CmdProcessInfo3:
			info := st.info
			info.Version = map[uint8]int{ipc.CmdProcessInfo: 1, ipc.CmdProcessInfo2: 2, ipc.CmdProcessInfo3: 3}[id]
			p, _ := info.AppendBinary(nil)
			return reply{ok: p}
		case ipc.CmdResumeRuntime:
			st.suspended = false
			return okHR()
		case ipc.CmdProcessEnvironment:
			block := ipc.AppendEnvironment(nil, st.env)
			p, _ := ipc.EnvironmentReply{IncomingBytes: uint32(len(block))}.AppendBinary(nil)
			return reply{ok: p, cont: block}
		case ipc.CmdDisablePerfMap:
			st.perfMap = ipc.PerfMapDisabled
			return okHR()
		}
	}
	return errReply(ipc.HRUnknownCommand)
}

func (st *state) setEnv(name, value string) {
	kv := name + "=" + value
	for i, e := range st.env {
		if len(e) > len(name) && e[:len(name)+1] == name+"=" {
			st.env[i] = kv
			return
		}
	}
	st.env = append(st.env, kv)
}

// endSession forgets a session whose start reply was not delivered.
func (s *Server) endSession(r reply) {
	if r.trace == nil {
		return
	}
	s.mu.Lock()
	if ch, ok := s.state.sessions[r.trace.ID]; ok {
		close(ch)
		delete(s.state.sessions, r.trace.ID)
	}
	s.mu.Unlock()
}

// runSession streams a session until it is stopped.
func (s *Server) runSession(r reply) {
	defer s.endSession(r)
	if s.cfg.Tracing != nil {
		_ = s.cfg.Tracing(s.ctx, r.trace)
		return
	}
	select {
	case <-r.stopped:
	case <-s.ctx.Done():
	}
}

// ConnectTo imitates a runtime configured with a connect-mode diagnostic
// port (DOTNET_DiagnosticPorts=path,connect): it dials the listener at
// socketPath, sends the 34-byte Advertise, serves one command on that
// connection, and reconnects, retrying failed dials after 10 ms, growing by
// 1.25x up to 500 ms. It returns when ctx ends or the server closes.
// Tracing sessions continue on their own connection while it reconnects.
func (s *Server) ConnectTo(ctx context.Context, socketPath string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(s.ctx, cancel)
	defer stopOnClose()
	const first, max = 10 * time.Millisecond, 500 * time.Millisecond
	backoff := first
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", socketPath)
		if err != nil {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			backoff = min(time.Duration(float64(backoff)*1.25), max)
			continue
		}
		backoff = first
		if !s.track(c) {
			c.Close()
			return net.ErrClosed
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		s.mu.Lock()
		adv := ipc.Advertise{RuntimeCookie: s.state.info.RuntimeCookie, PID: s.state.info.PID}
		s.mu.Unlock()
		b, _ := adv.MarshalBinary()
		var session func()
		if _, err := c.Write(b); err == nil {
			session = s.serve(c, true)
		}
		stop()
		if session == nil {
			s.untrack(c)
			continue
		}
		go func() {
			defer s.untrack(c)
			session()
		}()
	}
}

// StartConnecting starts a Server for a test that imitates a runtime
// started with DOTNET_DiagnosticPorts=socketPath,connect (see ConnectTo).
// Calling stop makes the runtime "exit": it stops connecting, as it does
// when the test ends, which also closes the server.
func StartConnecting(tb testing.TB, cfg Config, socketPath string) (s *Server, stop context.CancelFunc) {
	tb.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ConnectTo(ctx, socketPath)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	return s, cancel
}
