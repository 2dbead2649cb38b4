package viewer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/netaddr"
)

// Prefix is where Serve mounts a Viewer.
const Prefix = "/ui/"

// URL is the address of the flame graph a Serve on addr shows: its host,
// or 127.0.0.1 when addr is an unspecified address (0.0.0.0, ::).
func URL(addr net.Addr) string {
	return netaddr.LocalBase("http", addr.String()) + Prefix + "flamegraph"
}

// Serve serves h (usually a Viewer) under Prefix on ln until ctx ends, then
// shuts the server down and returns nil; "/" redirects to the flame graph.
// When ln listens on a loopback address, a request must name a loopback
// host and ln's port in its Host header, so that a web page whose DNS name
// was rebound to 127.0.0.1 cannot read the profile. Serve closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle(Prefix, http.StripPrefix(Prefix[:len(Prefix)-1], h))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"flamegraph", http.StatusSeeOther)
	})
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent) // none, and no error in the browser's console
	})
	var handler http.Handler = mux
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		handler = loopbackHost(tcp.Port, mux)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A view of a large profile takes a while to render.
		WriteTimeout: 5 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// loopbackHost refuses requests whose Host header is not a loopback name
// with the given port.
func loopbackHost(port int, next http.Handler) http.Handler {
	ps := strconv.Itoa(port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, p, err := net.SplitHostPort(r.Host)
		ok := err == nil && p == ps
		if ok {
			ip := net.ParseIP(host)
			ok = host == "localhost" || (ip != nil && ip.IsLoopback())
		}
		if !ok {
			http.Error(w, "forbidden: this viewer answers only to http://127.0.0.1:"+ps+" or http://localhost:"+ps, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
