package monitor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds how long Serve waits for requests in progress once
// its context ends.
const ShutdownTimeout = 5 * time.Second

// HTTPServer returns an http.Server for s with the limits of its Config:
// ReadHeaderTimeout, ReadTimeout (requests have no body) and WriteTimeout
// bound the short routes and IdleTimeout closes idle keep-alive
// connections, so a client cannot hold connections open without asking
// anything; routes to a process extend their read and write deadlines to
// what they may take (QueueTimeout + MaxDuration + the stop and rundown),
// and a trace stream's writes must each complete within
// StreamStallTimeout.
func (s *Server) HTTPServer() *http.Server {
	c := &s.cfg
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Serve serves s on ln until ctx ends, then shuts down, waiting up to
// ShutdownTimeout for requests in progress. It holds at most
// Config.MaxConns connections at once: at the cap, a new connection takes
// the place of the oldest one that is not in a request (silent, sending its
// headers slowly, or idle), so that a flood of idle connections cannot
// lock out a client that asks something; when all are in requests, further
// ones wait in the listen backlog until one ends. With certFile and
// keyFile it serves HTTPS.
func (s *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string) error {
	hs := s.HTTPServer()
	capped := newConnCap(ln, s.cfg.MaxConns)
	capped.install(hs)
	ln = capped
	errc := make(chan error, 1)
	go func() {
		if certFile != "" || keyFile != "" {
			errc <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
