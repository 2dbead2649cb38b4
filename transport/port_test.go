package transport

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDiagnosticPort(t *testing.T) {
	tests := []struct {
		in      string
		want    DiagnosticPort
		wantErr string
	}{
		{in: "/tmp/port.sock", want: DiagnosticPort{Address: "/tmp/port.sock", Mode: PortListen}},
		{in: "/tmp/s,connect", want: DiagnosticPort{Address: "/tmp/s", Mode: PortConnect}},
		{in: "/tmp/s,listen", want: DiagnosticPort{Address: "/tmp/s", Mode: PortListen}},
		{in: " /tmp/s , CONNECT ", want: DiagnosticPort{Address: "/tmp/s", Mode: PortConnect}},
		{in: "/tmp/s,nosuspend,connect", want: DiagnosticPort{Address: "/tmp/s", Mode: PortConnect, NoSuspend: true}},
		{in: "/tmp/s,suspend", want: DiagnosticPort{Address: "/tmp/s"}},
		{in: "/tmp/s,connect,connect", want: DiagnosticPort{Address: "/tmp/s", Mode: PortConnect}},
		{in: `\\.\pipe\mine,connect`, want: DiagnosticPort{Address: `\\.\pipe\mine`, Mode: PortConnect}},
		{in: "", wantErr: "missing address"},
		{in: ",connect", wantErr: "missing address"},
		{in: "/tmp/s,connect,listen", wantErr: `both "connect" and "listen"`},
		{in: "/tmp/s,suspend,nosuspend", wantErr: `both "suspend" and "nosuspend"`},
		{in: "/tmp/s,bogus", wantErr: `unknown tag "bogus"`},
		{in: "/tmp/s,", wantErr: `unknown tag ""`},
		{in: strings.Repeat("a", maxPortSpec+1), wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDiagnosticPort(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseDiagnosticPort(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDiagnosticPort(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDiagnosticPortEndpoint(t *testing.T) {
	tests := []struct {
		port DiagnosticPort
		goos string
		want Endpoint
	}{
		{DiagnosticPort{Address: "/tmp/s", Mode: PortConnect}, "linux", Endpoint{Network: NetworkUnix, Address: "/tmp/s"}},
		{DiagnosticPort{Address: "mypipe", Mode: PortConnect}, "linux", Endpoint{Network: NetworkUnix, Address: "mypipe"}},
		{DiagnosticPort{Address: "mypipe", Mode: PortConnect}, "windows", Endpoint{Network: NetworkPipe, Address: `\\.\pipe\mypipe`}},
		{DiagnosticPort{Address: `\\.\PIPE\x`, Mode: PortConnect}, "windows", Endpoint{Network: NetworkPipe, Address: `\\.\PIPE\x`}},
		{DiagnosticPort{Address: `C:\tmp\s.sock`, Mode: PortConnect}, "windows", Endpoint{Network: NetworkUnix, Address: `C:\tmp\s.sock`}},
	}
	for _, tt := range tests {
		got, err := tt.port.endpoint(tt.goos)
		if err != nil || got != tt.want {
			t.Errorf("%+v on %s: Endpoint() = %+v, %v; want %+v", tt.port, tt.goos, got, err, tt.want)
		}
	}
	_, err := DiagnosticPort{Address: "/tmp/s"}.Endpoint()
	if !errors.Is(err, ErrListenNotSupported) || !strings.Contains(err.Error(), ",connect") {
		t.Errorf("listen port: err = %v, want ErrListenNotSupported suggesting ,connect", err)
	}
}

func FuzzParseDiagnosticPort(f *testing.F) {
	for _, s := range []string{"/tmp/s", "/tmp/s,connect", "a,listen,nosuspend", ",", "x,,", `\\.\pipe\p,CONNECT,suspend`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseDiagnosticPort(s)
		if err != nil {
			return
		}
		if p.Address == "" || strings.Contains(p.Address, ",") {
			t.Fatalf("ParseDiagnosticPort(%q) accepted address %q", s, p.Address)
		}
		// String round-trips.
		q, err := ParseDiagnosticPort(p.String())
		if err != nil || q != p {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", s, p, p.String(), q, err)
		}
	})
}

// The fuzzer found a 4 KiB address whose canonical form (with ",listen"
// added) no longer parsed: the address is bounded so String always fits.
func TestDiagnosticPortLongAddress(t *testing.T) {
	long := strings.Repeat("a", maxPortAddress)
	p, err := ParseDiagnosticPort(long + ",CONNECT,NoSuspend")
	if err != nil {
		t.Fatal(err)
	}
	if q, err := ParseDiagnosticPort(p.String()); err != nil || q != p {
		t.Errorf("round trip of the longest address: %v", err)
	}
	if _, err := ParseDiagnosticPort(long + "b"); err == nil || !strings.Contains(err.Error(), "address is") {
		t.Errorf("address of %d bytes accepted: %v", len(long)+1, err)
	}
}
