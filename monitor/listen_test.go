package monitor_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/monitor"
)

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{"http://127.0.0.1:52323": "127.0.0.1:52323", "localhost:1": "localhost:1", "http://[::1]:80": "[::1]:80",
		"http://*:52323": ":52323", "http://+:52325/": ":52325", "HTTP://localhost:2": "localhost:2", "https://x:1": "x:1", "HTTPS://x:2": "x:2"} {
		if got, tls, err := monitor.ListenAddr(in); err != nil || got != want || tls != strings.HasPrefix(strings.ToLower(in), "https") {
			t.Errorf("ListenAddr(%q) = %q, %v, %v; want %q", in, got, tls, err, want)
		}
	}
	for bad, want := range map[string]string{
		"ftp://x:1":           "use http:// or https://",
		"nohost":              "missing port in address (want http://HOST:PORT, e.g. http://127.0.0.1:52323 or http://*:52323)",
		"http://x":            "missing port in address (want http://HOST:PORT",
		"http://a:1;http://b": "give one URL (the monitor serves one address)",
		"http://a:99999":      `port "99999" is not a number from 0 to 65535`,
		"http://a:1/path":     "give scheme, host and port only (no path)",
	} {
		if _, _, err := monitor.ListenAddr(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ListenAddr(%q) = %v, want an error with %q", bad, err, want)
		}
	}
	if _, _, err := monitor.ListenAddr("ftp://x:1"); !errors.Is(err, monitor.ErrURLScheme) {
		t.Errorf("ftp: %v, want ErrURLScheme", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "LocalHost:1": true, "127.9.9.9:1": true,
		":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "example.com:1": false, "nonsense": false} {
		if got := monitor.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}

func TestLocalURL(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 52323}, "https://127.0.0.1:52323"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 80}, "https://127.0.0.1:80"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8}, "https://10.1.2.3:8"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9}, "https://[::1]:9"},
		{&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, "https:///tmp/sock"},
	} {
		if got := monitor.LocalURL("https", c.addr); got != c.want {
			t.Errorf("LocalURL(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
