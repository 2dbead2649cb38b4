package netaddr

import "net"

// LocalBase returns scheme://HOST:PORT for a server listening at addr
// (host:port, as net.Addr.String gives it): the listen host, or 127.0.0.1
// when it is an unspecified address (0.0.0.0, ::), which means every
// interface. An addr that is not host:port (a Unix socket path) is
// appended to scheme:// as it is.
func LocalBase(scheme, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
