package reverse

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/ipc"
)

// DefaultAdvertiseTimeout is how long the server waits for a new connection's
// Advertise message, as the .NET tools do.
const DefaultAdvertiseTimeout = 250 * time.Millisecond

// Config adjusts a Server. The zero value is the default.
type Config struct {
	// AdvertiseTimeout bounds reading each connection's Advertise message;
	// 0 means DefaultAdvertiseTimeout.
	AdvertiseTimeout time.Duration
	// Dropped, when non-nil, is called (from the server's goroutines) with an
	// *AdvertiseError for each connection dropped before it was accepted.
	Dropped func(err error)
}

// Server accepts connections from runtimes on one socket or named pipe.
type Server struct {
	addr   string
	ln     net.Listener
	remove func() error
	cfg    Config

	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup

	mu       sync.Mutex
	runtimes map[ipc.GUID]*Runtime
	order    []*Runtime // in order of first connection
	queue    []*Runtime // seen but not yet returned by Accept
	queued   chan struct{}
	pending  map[net.Conn]struct{} // connections still advertising
}

// Runtime is one runtime instance that connected to the server, identified by
// its cookie. It is a diag.Dialer: Dial returns the runtime's next connection.
type Runtime struct {
	// PID is the process id the runtime advertised (as seen in its own PID
	// namespace, which may not be ours).
	PID int
	// Cookie is the runtime instance cookie; it changes when the process
	// restarts even if the pid is reused.
	Cookie ipc.GUID

	s *Server
	// Guarded by s.mu.
	held    *heldConn
	gone    bool
	changed chan struct{} // closed and replaced when held or gone changes
}

// heldConn is a runtime connection the server holds until a Dial takes it.
// A watcher goroutine reads from it to notice when the runtime closes it.
type heldConn struct {
	c     net.Conn
	done  chan struct{} // closed when the watcher returns
	err   error         // the watcher's read error, set before done closes
	data  bool          // the runtime sent bytes before any command
	taken bool          // guarded by s.mu: a Dial owns c
}

// Listen starts a server on addr: a Unix socket path or, on Windows, a named
// pipe (\\.\pipe\NAME or a bare NAME). A nil cfg means the defaults.
// Errors are *ListenError values.
func Listen(addr string, cfg *Config) (*Server, error) {
	if addr == "" {
		return nil, &ListenError{Addr: addr, Err: errors.New("empty address")}
	}
	s := &Server{
		addr:     addr,
		closed:   make(chan struct{}),
		runtimes: make(map[ipc.GUID]*Runtime),
		queued:   make(chan struct{}),
		pending:  make(map[net.Conn]struct{}),
	}
	if cfg != nil {
		s.cfg = *cfg
	}
	if s.cfg.AdvertiseTimeout <= 0 {
		s.cfg.AdvertiseTimeout = DefaultAdvertiseTimeout
	}
	ln, remove, err := listen(addr)
	if err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	s.ln, s.remove = ln, remove
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr returns the address the server listens on, as given to Listen.
func (s *Server) Addr() string { return s.addr }

func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: wait and retry.
			t := time.NewTimer(backoff)
			select {
			case <-s.closed:
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		if s.isClosed() {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.pending[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handshake(c)
	}
}

// handshake reads the Advertise and files the connection under its cookie.
func (s *Server) handshake(c net.Conn) {
	defer s.wg.Done()
	_ = c.SetReadDeadline(time.Now().Add(s.cfg.AdvertiseTimeout))
	adv, err := ipc.ReadAdvertise(c)
	if err == nil {
		err = c.SetReadDeadline(time.Time{})
	}
	s.mu.Lock()
	delete(s.pending, c)
	if err != nil || s.isClosed() {
		s.mu.Unlock()
		c.Close()
		if err != nil && s.cfg.Dropped != nil {
			remote := ""
			if a := c.RemoteAddr(); a != nil {
				remote = a.String()
			}
			s.cfg.Dropped(&AdvertiseError{Remote: remote, Err: err})
		}
		return
	}
	rt := s.runtimes[adv.RuntimeCookie]
	if rt == nil {
		pid := math.MaxInt
		if adv.PID <= math.MaxInt32 {
			pid = int(adv.PID)
		}
		rt = &Runtime{PID: pid, Cookie: adv.RuntimeCookie, s: s, changed: make(chan struct{})}
		s.runtimes[adv.RuntimeCookie] = rt
		s.order = append(s.order, rt)
		s.queue = append(s.queue, rt)
		close(s.queued)
		s.queued = make(chan struct{})
	}
	old := rt.held
	h := &heldConn{c: c, done: make(chan struct{})}
	rt.held, rt.gone = h, false
	rt.notify()
	s.wg.Add(1)
	s.mu.Unlock()
	if old != nil {
		// Only the newest connection of a runtime is kept.
		old.c.Close()
	}
	go s.watch(rt, h)
}

// notify wakes Dial calls waiting on rt. Called with s.mu held.
func (rt *Runtime) notify() {
	close(rt.changed)
	rt.changed = make(chan struct{})
}

// watch reads from a held connection until a Dial takes it (which sets a past
// read deadline) or the runtime closes it.
func (s *Server) watch(rt *Runtime, h *heldConn) {
	defer s.wg.Done()
	var b [1]byte
	n, err := h.c.Read(b[:])
	s.mu.Lock()
	h.err, h.data = err, n > 0
	dropped := !h.taken
	if dropped && rt.held == h {
		rt.held = nil
		// A runtime only closes an idle connection when it exits; bytes
		// before a command are a protocol violation, not an exit.
		rt.gone = n == 0 && !s.isClosed()
		rt.notify()
	}
	close(h.done)
	s.mu.Unlock()
	if dropped {
		h.c.Close()
	}
}

// Accept waits for a runtime that has not connected before and returns it.
// Runtimes are returned in the order of their first connection.
func (s *Server) Accept(ctx context.Context) (*Runtime, error) {
	for {
		s.mu.Lock()
		if s.isClosed() {
			s.mu.Unlock()
			return nil, fmt.Errorf("reverse: accept: %w", ErrClosed)
		}
		if len(s.queue) > 0 {
			rt := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return rt, nil
		}
		wait := s.queued
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reverse: waiting for a runtime to connect to %s: %w", s.addr, ctx.Err())
		case <-s.closed:
		case <-wait:
		}
	}
}

// Runtimes returns the runtimes that connected and have not gone away, in the
// order of their first connection, whether or not Accept returned them.
func (s *Server) Runtimes() []*Runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Runtime
	for _, rt := range s.order {
		if !rt.gone {
			out = append(out, rt)
		}
	}
	return out
}

// Remove forgets a runtime and closes the connection held for it. If the
// runtime connects again, Accept returns it again as a new Runtime.
func (s *Server) Remove(rt *Runtime) {
	s.mu.Lock()
	if s.runtimes[rt.Cookie] != rt {
		s.mu.Unlock()
		return
	}
	delete(s.runtimes, rt.Cookie)
	for i, r := range s.order {
		if r == rt {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	for i, r := range s.queue {
		if r == rt {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	h := rt.held
	rt.held, rt.gone = nil, true
	rt.notify()
	s.mu.Unlock()
	if h != nil {
		h.c.Close()
	}
}

// Close stops listening, closes the connections the server holds (not those
// Dial returned), waits for its goroutines and removes the socket. Pending
// Accept and Dial calls return errors matching ErrClosed.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.closed)
		var conns []net.Conn
		for c := range s.pending {
			conns = append(conns, c)
		}
		for _, rt := range s.runtimes {
			if rt.held != nil {
				conns = append(conns, rt.held.c)
			}
		}
		s.mu.Unlock()
		err := s.ln.Close()
		for _, c := range conns {
			c.Close()
		}
		s.wg.Wait()
		if s.remove != nil {
			if rerr := s.remove(); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
		if err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = fmt.Errorf("reverse: close %s: %w", s.addr, err)
		}
	})
	return s.closeErr
}

// aLongTimeAgo is a read deadline in the past: it makes a pending Read return
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// Dial returns the runtime's newest connection, waiting for the runtime to
// connect (again) if the server holds none: the runtime reconnects after each
// command, so every command gets its own connection. It returns an error
// matching ErrRuntimeGone when the runtime has exited, ErrClosed after the
// server's Close, and the context's error if ctx ends first.
func (rt *Runtime) Dial(ctx context.Context) (net.Conn, error) {
	s := rt.s
	for {
		s.mu.Lock()
		if s.isClosed() {
			s.mu.Unlock()
			return nil, fmt.Errorf("reverse: dial runtime %d: %w", rt.PID, ErrClosed)
		}
		if h := rt.held; h != nil {
			rt.held = nil
			h.taken = true
			s.mu.Unlock()
			// Stop the watcher; its read returns a timeout unless the
			// runtime closed the connection meanwhile.
			_ = h.c.SetReadDeadline(aLongTimeAgo)
			<-h.done
			if errors.Is(h.err, os.ErrDeadlineExceeded) {
				if err := h.c.SetReadDeadline(time.Time{}); err == nil && alive(h.c) {
					return h.c, nil
				}
			}
			h.c.Close()
			s.mu.Lock()
			if rt.held == nil && !h.data && !s.isClosed() {
				rt.gone = true
			}
			s.mu.Unlock()
			continue
		}
		if rt.gone {
			s.mu.Unlock()
			return nil, fmt.Errorf("reverse: dial runtime %d: %w", rt.PID, ErrRuntimeGone)
		}
		wait := rt.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reverse: waiting for runtime %d to connect: %w", rt.PID, ctx.Err())
		case <-s.closed:
		case <-wait:
		}
	}
}

// Gone reports whether the runtime closed the connection the server held for
// it and has not connected since: it has most likely exited.
func (rt *Runtime) Gone() bool {
	rt.s.mu.Lock()
	defer rt.s.mu.Unlock()
	return rt.gone
}

// String describes the runtime for messages.
func (rt *Runtime) String() string {
	return fmt.Sprintf("pid %d (cookie %v)", rt.PID, rt.Cookie)
}
