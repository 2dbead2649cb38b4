package monitor

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of the HTTP limits (Config fields of the same names).
const (
	DefaultMaxConns           = 64
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultReadTimeout        = 30 * time.Second
	DefaultIdleTimeout        = 60 * time.Second
	DefaultWriteTimeout       = time.Minute
	DefaultStreamStallTimeout = 30 * time.Second
	DefaultQueueTimeout       = 30 * time.Second
	// routeSlack is added to the longest a process route may take (its turn,
	// ?duration=, the stop and the rundown) to make its deadlines.
	routeSlack = 3 * time.Minute
)

// errHost and errCrossOrigin are the guard's refusals.
var (
	errHost        = errors.New("monitor: Host not allowed")
	errCrossOrigin = errors.New("monitor: cross-origin request refused")
)

// guard makes the checks every request passes before authentication: the
// Host header (DNS rebinding), the origin (cross-site requests) and CORS.
type guard struct {
	allowedHosts []string // lower case; "*" allows any
	cors         []string // origins allowed cross-origin, as scheme://host[:port]
	cop          *http.CrossOriginProtection
}

func newGuard(cfg *Config) (*guard, error) {
	g := &guard{cop: http.NewCrossOriginProtection()}
	for _, h := range cfg.AllowedHosts {
		g.allowedHosts = append(g.allowedHosts, strings.ToLower(strings.TrimSpace(h)))
	}
	for _, o := range cfg.CORSOrigins {
		if err := g.cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("monitor: CORS origin %q: %w", o, err)
		}
		g.cors = append(g.cors, o)
	}
	return g, nil
}

// checkHost refuses a Host header that a DNS-rebinding page could have
// made: a name that is neither localhost nor allowed. An IP literal cannot
// be rebound (the page's own origin would be that address), so it passes.
func (g *guard) checkHost(r *http.Request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	switch {
	case host == "":
		return fmt.Errorf("%w: the request has no Host header", errHost)
	case net.ParseIP(host) != nil:
		return nil
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return nil // RFC 6761: browsers resolve these to loopback themselves
	case slices.Contains(g.allowedHosts, "*") || slices.Contains(g.allowedHosts, host):
		return nil
	}
	return fmt.Errorf("%w: %q is not this server's name (a DNS-rebinding page uses its own name); "+
		"reach the server by IP address or localhost, or allow the name with --allowed-hosts", errHost, r.Host)
}

// checkOrigin refuses cross-origin browser requests. Every route counts as
// state-changing, GETs included: a trace, counters or stacks request
// starts a session in the target. The net/http CrossOriginProtection logic
// (Sec-Fetch-Site, else Origin against Host) is applied as for a POST.
func (g *guard) checkOrigin(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "" && r.Header.Get("Origin") == "" {
		return nil // not a browser, or a same-origin navigation of an old one
	}
	probe := r
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		probe = r.Clone(r.Context())
		probe.Method = http.MethodPost
	}
	if err := g.cop.Check(probe); err != nil {
		return fmt.Errorf("%w (%v): a web page of another origin cannot use this API; allow its origin with --cors-origin", errCrossOrigin, err)
	}
	return nil
}

// corsOrigin returns the request's Origin when it is one of the configured
// CORS origins.
func (g *guard) corsOrigin(r *http.Request) string {
	o := r.Header.Get("Origin")
	if o == "" {
		return ""
	}
	u, err := url.Parse(o)
	if err != nil {
		return ""
	}
	for _, c := range g.cors {
		if cu, err := url.Parse(c); err == nil && strings.EqualFold(cu.Scheme, u.Scheme) && strings.EqualFold(cu.Host, u.Host) {
			return o
		}
	}
	return ""
}

// serve applies the guard; it returns false when it has answered.
func (g *guard) serve(w http.ResponseWriter, r *http.Request) bool {
	if err := g.checkHost(r); err != nil {
		writeError(w, http.StatusMisdirectedRequest, err)
		return false
	}
	origin := g.corsOrigin(r)
	if origin != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Authorization")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	if err := g.checkOrigin(r); err != nil {
		writeError(w, http.StatusForbidden, err)
		return false
	}
	return true
}

// extendDeadlines gives a request to a process the time its route may take:
// its turn, up to MaxDuration of collection (or DumpTimeout of a dump), the
// stop and the rundown. The
// server's ReadTimeout and WriteTimeout, meant for short routes, would
// otherwise cut it (and ReadTimeout cancels the request's context).
func (s *Server) extendDeadlines(w http.ResponseWriter) {
	d := time.Now().Add(s.cfg.QueueTimeout + max(s.cfg.MaxDuration, s.cfg.DumpTimeout) + routeSlack)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(d)
	_ = rc.SetWriteDeadline(d)
}

// busy answers a request whose process's turn did not come in QueueTimeout.
func (s *Server) busy(w http.ResponseWriter, pid int) {
	w.Header().Set("Retry-After", strconv.Itoa(int(max(s.cfg.QueueTimeout/time.Second, 1))))
	writeError(w, http.StatusServiceUnavailable, fmt.Errorf(
		"process %d is busy with another request (waited %v for its turn; the runtime serves one command at a time): retry later",
		pid, s.cfg.QueueTimeout))
}

func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
