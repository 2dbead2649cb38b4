package netaddr

import "testing"

func TestLocalBase(t *testing.T) {
	for _, c := range []struct {
		scheme, addr, want string
	}{
		{"http", "0.0.0.0:52323", "http://127.0.0.1:52323"},
		{"https", "[::]:80", "https://127.0.0.1:80"},
		{"http", "[::1]:9", "http://[::1]:9"},
		{"http", "10.1.2.3:8", "http://10.1.2.3:8"},
		{"http", "localhost:8080", "http://localhost:8080"},
		{"http", "[fe80::1%eth0]:8", "http://[fe80::1%eth0]:8"},
		{"https", "/tmp/sock", "https:///tmp/sock"},
		{"http", "", "http://"},
	} {
		if got := LocalBase(c.scheme, c.addr); got != c.want {
			t.Errorf("LocalBase(%q, %q) = %q, want %q", c.scheme, c.addr, got, c.want)
		}
	}
}
