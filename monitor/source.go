package monitor

import (
	"context"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// Process is a .NET process the monitor can talk to.
type Process struct {
	PID         int    `json:"pid"`
	Name        string `json:"name,omitempty"`
	CommandLine string `json:"commandLine,omitempty"`
	// Dialer opens a connection to the process's diagnostic server.
	Dialer diag.Dialer `json:"-"`
}

// Source lists the processes the monitor serves.
type Source interface {
	Processes(ctx context.Context) ([]Process, error)
}

// LocalSource discovers the processes of this machine. The zero value uses
// transport.Discover's defaults.
type LocalSource struct {
	Discover *transport.DiscoverConfig
}

// Processes implements Source.
func (s LocalSource) Processes(ctx context.Context) ([]Process, error) {
	procs, err := transport.Discover(ctx, s.Discover)
	if err != nil {
		return nil, err
	}
	out := make([]Process, len(procs))
	for i, p := range procs {
		out[i] = Process{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, Dialer: p.Endpoint}
	}
	return out, nil
}

// ReverseSource lists the runtimes connected to a reverse server (runtimes
// started with DOTNET_DiagnosticPorts=<socket>,connect). Their pids are as
// seen in their own PID namespace.
type ReverseSource struct {
	Server *reverse.Server
}

// Processes implements Source.
func (s ReverseSource) Processes(context.Context) ([]Process, error) {
	rts := s.Server.Runtimes()
	out := make([]Process, 0, len(rts))
	for _, rt := range rts {
		out = append(out, Process{PID: rt.PID, Dialer: rt})
	}
	return out, nil
}

// StaticSource is a fixed list of processes, for tests and embedding.
type StaticSource []Process

// Processes implements Source.
func (s StaticSource) Processes(context.Context) ([]Process, error) { return s, nil }
