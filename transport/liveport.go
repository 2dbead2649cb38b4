package transport

import (
	"context"
	"net"
	"os"
	"runtime"
	"strings"
	"time"
)

// ListenGiven reports whether a --diagnostic-port value
// (ParseDiagnosticPort's syntax) asks for listen mode in so many words
// (",listen"), rather than by default.
func ListenGiven(spec string) bool {
	tags := strings.Split(spec, ",")
	for _, t := range tags[1:] {
		if strings.EqualFold(strings.TrimSpace(t), "listen") {
			return true
		}
	}
	return false
}

// LiveSocket reports whether path is a Unix socket something accepts
// connections on (a runtime's diagnostic socket, or dsrouter's): a port
// given in listen mode by default at such a path is one to connect to,
// as dotnet-dump takes it (listening there is impossible anyway). It
// tries to connect for at most a second, and is always false on Windows.
func LiveSocket(ctx context.Context, path string) bool {
	if runtime.GOOS == "windows" {
		return false
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		return false
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "unix", path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
