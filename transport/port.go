package transport

import (
	"fmt"
	"runtime"
	"strings"
)

// PortMode says who connects to whom on a diagnostic port.
type PortMode int

const (
	// PortListen (the default, as in dotnet-trace) means the tool listens at
	// the address and the runtime, started with DOTNET_DiagnosticPorts,
	// connects to it.
	PortListen PortMode = iota
	// PortConnect means the runtime listens at the address and the tool
	// connects, as with a target's default diagnostic socket.
	PortConnect
)

func (m PortMode) String() string {
	switch m {
	case PortListen:
		return "listen"
	case PortConnect:
		return "connect"
	}
	return fmt.Sprintf("PortMode(%d)", int(m))
}

// DiagnosticPort is a parsed --diagnostic-port value:
// ADDRESS[,connect|,listen][,suspend|,nosuspend].
type DiagnosticPort struct {
	Address   string   // socket path, pipe name or \\.\pipe\NAME
	Mode      PortMode // PortListen unless ",connect" was given
	NoSuspend bool     // ",nosuspend": the runtime does not wait for ResumeRuntime
}

// maxPortSpec bounds the length of a --diagnostic-port value.
const maxPortSpec = 4096

// maxPortAddress bounds the address in it, so that the canonical form
// String writes (with ",connect,nosuspend" at most) fits maxPortSpec too.
const maxPortAddress = maxPortSpec - len(",connect,nosuspend")

// ParseDiagnosticPort parses ADDRESS[,connect|,listen][,suspend|,nosuspend].
// Tags are case-insensitive and may come in any order; repeating a tag is
// allowed, contradicting one is an error. Listen is the default mode.
func ParseDiagnosticPort(s string) (DiagnosticPort, error) {
	var p DiagnosticPort
	if len(s) > maxPortSpec {
		return p, fmt.Errorf("diagnostic port: value is %d bytes, longer than the %d allowed", len(s), maxPortSpec)
	}
	parts := strings.Split(s, ",")
	p.Address = strings.TrimSpace(parts[0])
	if p.Address == "" {
		return p, fmt.Errorf("diagnostic port %q: missing address; want ADDRESS[,connect|,listen], "+
			"e.g. /tmp/dotnet-diagnostic-1234-5678-socket,connect", s)
	}
	if len(p.Address) > maxPortAddress {
		return p, fmt.Errorf("diagnostic port: address is %d bytes, longer than the %d allowed", len(p.Address), maxPortAddress)
	}
	var mode, suspend string
	for _, raw := range parts[1:] {
		tag := strings.ToLower(strings.TrimSpace(raw))
		switch tag {
		case "connect", "listen":
			if mode != "" && mode != tag {
				return p, fmt.Errorf("diagnostic port %q: both %q and %q given; choose one", s, mode, tag)
			}
			mode = tag
		case "suspend", "nosuspend":
			if suspend != "" && suspend != tag {
				return p, fmt.Errorf("diagnostic port %q: both %q and %q given; choose one", s, suspend, tag)
			}
			suspend = tag
		default:
			return p, fmt.Errorf("diagnostic port %q: unknown tag %q; known tags are connect, listen, suspend, nosuspend", s, raw)
		}
	}
	if mode == "connect" {
		p.Mode = PortConnect
	}
	p.NoSuspend = suspend == "nosuspend"
	return p, nil
}

// String formats p so that ParseDiagnosticPort reads it back unchanged.
func (p DiagnosticPort) String() string {
	s := p.Address + "," + p.Mode.String()
	if p.NoSuspend {
		s += ",nosuspend"
	}
	return s
}

// Endpoint returns the endpoint to dial for a port in connect mode. For a
// listen-mode port it returns an error matching ErrListenNotSupported.
//
// On Windows an address that is not a path (\\.\pipe\NAME or a bare NAME) is
// a named pipe; everywhere else the address is a Unix socket path.
func (p DiagnosticPort) Endpoint() (Endpoint, error) {
	return p.endpoint(runtime.GOOS)
}

func (p DiagnosticPort) endpoint(goos string) (Endpoint, error) {
	if p.Mode != PortConnect {
		return Endpoint{}, fmt.Errorf("diagnostic port %s: %w; add \",connect\" to connect to a "+
			"runtime that listens at this address", p.Address, ErrListenNotSupported)
	}
	if goos == "windows" {
		const prefix = `\\.\pipe\`
		switch {
		case len(p.Address) >= len(prefix) && strings.EqualFold(p.Address[:len(prefix)], prefix):
			return Endpoint{Network: NetworkPipe, Address: p.Address}, nil
		case !strings.ContainsAny(p.Address, `\/:`):
			return Endpoint{Network: NetworkPipe, Address: prefix + p.Address}, nil
		}
	}
	return Endpoint{Network: NetworkUnix, Address: p.Address}, nil
}
