package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/netaddr"
)

// ErrURLScheme is matched by ListenAddr's error for a URL that is neither
// http:// nor https://.
var ErrURLScheme = errors.New("use http:// or https://")

// ListenAddr turns a URL to serve on (http://host:port, https://host:port,
// or host:port) into a listen address; tls tells whether https was asked
// for. The ASP.NET and dotnet-monitor wildcards http://*:PORT and
// http://+:PORT mean every interface.
func ListenAddr(s string) (addr string, tls bool, err error) {
	if strings.Contains(s, ";") {
		return "", false, errors.New("give one URL (the monitor serves one address)")
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		switch {
		case strings.EqualFold(scheme, "http"):
		case strings.EqualFold(scheme, "https"):
			tls = true
		default:
			return "", false, ErrURLScheme
		}
		s = strings.TrimSuffix(rest, "/")
		if strings.Contains(s, "/") {
			return "", false, errors.New("give scheme, host and port only (no path)")
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", false, fmt.Errorf("%w (want http://HOST:PORT, e.g. http://127.0.0.1:52323 or http://*:52323)", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", false, fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "*" || host == "+" {
		host = "" // every interface
	}
	return net.JoinHostPort(host, port), tls, nil
}

// IsLoopback reports whether a listen address only accepts local
// connections.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LocalURL is the scheme://HOST:PORT a browser on this machine reaches a
// server listening at addr by: the listen address, or 127.0.0.1 for an
// unspecified one (every interface).
func LocalURL(scheme string, addr net.Addr) string {
	return netaddr.LocalBase(scheme, addr.String())
}

// resumeTimeout bounds the ResumeRuntime AcceptRuntimes sends.
const resumeTimeout = 10 * time.Second

// AcceptRuntimes names each runtime that connects to the source's server
// (Identify, while its first connection is there) and, with resume,
// resumes it, as dotnet-monitor does in listen mode: a runtime with the
// default suspend waits for it. It returns when ctx ends or the server is
// closed; run it in its own goroutine.
func (s *ReverseSource) AcceptRuntimes(ctx context.Context, resume bool) {
	for {
		rt, err := s.Server.Accept(ctx)
		if err != nil {
			return
		}
		go func() {
			s.Identify(ctx, rt)
			if !resume {
				return
			}
			rctx, cancel := context.WithTimeout(ctx, resumeTimeout)
			defer cancel()
			_ = diag.NewClient(rt, nil).ResumeRuntime(rctx)
		}()
	}
}
