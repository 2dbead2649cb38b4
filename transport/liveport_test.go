package transport

import "testing"

func TestListenGiven(t *testing.T) {
	for spec, want := range map[string]bool{
		"/tmp/s": false, "/tmp/s,connect": false, "/tmp/s,nosuspend": false,
		"/tmp/s,listen": true, "/tmp/s, LISTEN ,nosuspend": true, "/tmp/s,nosuspend,Listen": true,
		"listen": false, // the address, not a tag
	} {
		if got := ListenGiven(spec); got != want {
			t.Errorf("ListenGiven(%q) = %v, want %v", spec, got, want)
		}
	}
}
