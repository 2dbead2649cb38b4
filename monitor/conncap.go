package monitor

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connCap is the listener Serve accepts on: it holds at most max
// connections. At the cap, a new connection takes the place of the oldest
// one that is not in a request (connected but silent, still sending its
// headers, or idle between keep-alive requests), so that a client holding
// connections without asking anything cannot lock others out; only when
// every connection is in a request does a new one wait until a request
// ends or a connection closes (and the ones behind it in the listen
// backlog).
//
// It learns what each connection does from the http.Server hooks install
// sets: ConnState (closed, idle), ConnContext and the handler (in a
// request: the headers have been read and the handler runs).
type connCap struct {
	net.Listener
	max int

	mu     sync.Mutex
	wake   *sync.Cond // a connection closed or left a request, or the listener closed
	conns  map[net.Conn]*capConn
	closed bool
}

// capConn is what connCap knows of one connection.
type capConn struct {
	conn     net.Conn
	since    time.Time // accepted, or the end of its last request
	requests int       // requests in a handler (HTTP/2 has several)
}

type capConnKey struct{}

func newConnCap(ln net.Listener, max int) *connCap {
	l := &connCap{Listener: ln, max: max, conns: map[net.Conn]*capConn{}}
	l.wake = sync.NewCond(&l.mu)
	return l
}

// install makes hs report to l.
func (l *connCap) install(hs *http.Server) {
	next := hs.Handler
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc, _ := r.Context().Value(capConnKey{}).(*capConn)
		if cc == nil {
			next.ServeHTTP(w, r)
			return
		}
		l.mu.Lock()
		cc.requests++
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			cc.requests--
			cc.since = time.Now()
			l.mu.Unlock()
			l.wake.Broadcast()
		}()
		next.ServeHTTP(w, r)
	})
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		l.mu.Lock()
		defer l.mu.Unlock()
		if cc := l.conns[underlying(c)]; cc != nil {
			return context.WithValue(ctx, capConnKey{}, cc)
		}
		return ctx
	}
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateClosed, http.StateHijacked:
			l.mu.Lock()
			delete(l.conns, underlying(c))
			l.mu.Unlock()
			l.wake.Broadcast()
		}
	}
}

// underlying returns the connection Accept returned for c.
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// Accept waits for a connection and, at the cap, makes room for it.
func (l *connCap) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.conns) >= l.max && !l.closed {
		if v := l.oldestIdle(); v != nil {
			delete(l.conns, v.conn)
			v.conn.Close()
			break
		}
		l.wake.Wait()
	}
	if l.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[c] = &capConn{conn: c, since: time.Now()}
	return c, nil
}

// oldestIdle returns the connection not in a request that has been so the
// longest, or nil.
func (l *connCap) oldestIdle() *capConn {
	var old *capConn
	for _, cc := range l.conns {
		if cc.requests == 0 && (old == nil || cc.since.Before(old.since)) {
			old = cc
		}
	}
	return old
}

// Close closes the listener and wakes an Accept waiting for room.
func (l *connCap) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wake.Broadcast()
	return l.Listener.Close()
}
