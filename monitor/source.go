package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

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
// seen in their own PID namespace. Make it with NewReverseSource.
//
// A runtime is named from its ProcessInfo (.NET 5+: the executable of its
// command line, "dotnet" for "dotnet app.dll", as LocalSource names
// processes): Identify asks when the runtime arrives, or Processes the
// first time it lists one it could not name. A runtime leaves the list
// when it closes its connection, or when it does not connect again within
// ReconnectTimeout after a command (a live runtime connects again at
// once; one that exited right after a command never does): its Dialer then
// fails and the runtime is forgotten, and a live one that comes back is
// listed again.
type ReverseSource struct {
	Server *reverse.Server
	// ReconnectTimeout bounds the wait for a runtime's next connection; 0
	// means DefaultReconnectTimeout.
	ReconnectTimeout time.Duration

	mu    sync.Mutex
	known map[*reverse.Runtime]*reverseInfo
}

// DefaultReconnectTimeout is ReverseSource.ReconnectTimeout's default.
const DefaultReconnectTimeout = 10 * time.Second

// identifyTimeout bounds the ProcessInfo asked to name a runtime;
// identifyRetry is how long a runtime that could not be named is not
// asked again.
const (
	identifyTimeout = 3 * time.Second
	identifyRetry   = 30 * time.Second
)

type reverseInfo struct {
	name, cmdline string
	named         bool
	tried         time.Time
}

// NewReverseSource lists the runtimes of srv.
func NewReverseSource(srv *reverse.Server) *ReverseSource {
	return &ReverseSource{Server: srv}
}

// Processes implements Source.
func (s *ReverseSource) Processes(ctx context.Context) ([]Process, error) {
	rts := s.Server.Runtimes()
	out := make([]Process, 0, len(rts))
	for _, rt := range rts {
		info := s.info(rt)
		if !info.named && time.Since(info.tried) > identifyRetry {
			s.Identify(ctx, rt)
			info = s.info(rt)
		}
		out = append(out, Process{PID: rt.PID, Name: info.name, CommandLine: info.cmdline, Dialer: reverseDialer{s, rt}})
	}
	s.mu.Lock()
	live := make(map[*reverse.Runtime]bool, len(rts))
	for _, rt := range rts {
		live[rt] = true
	}
	for rt := range s.known {
		if !live[rt] {
			delete(s.known, rt)
		}
	}
	s.mu.Unlock()
	return out, nil
}

func (s *ReverseSource) info(rt *reverse.Runtime) reverseInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.known[rt]; i != nil {
		return *i
	}
	return reverseInfo{}
}

// Identify asks the runtime who it is (ProcessInfo) and remembers its name
// and command line; a runtime that is just arriving has its connection
// ready, so call it then (before resuming it). Errors are not returned:
// the runtime is asked again later.
func (s *ReverseSource) Identify(ctx context.Context, rt *reverse.Runtime) {
	ctx, cancel := context.WithTimeout(ctx, identifyTimeout)
	defer cancel()
	info, err := diag.NewClient(rt, &diag.Config{Timeout: identifyTimeout}).ProcessInfo(ctx)
	ri := &reverseInfo{tried: time.Now()}
	if err == nil {
		ri.name, ri.cmdline, ri.named = processName(info.CommandLine), info.CommandLine, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[*reverse.Runtime]*reverseInfo{}
	}
	if old := s.known[rt]; old == nil || !old.named {
		s.known[rt] = ri
	}
}

// processName is a process's name from its command line: the base name of
// the executable without .exe ("dotnet" for "/usr/share/dotnet/dotnet
// app.dll"), as the operating system names it.
func processName(cmdline string) string {
	exe := strings.TrimSpace(cmdline)
	if strings.HasPrefix(exe, `"`) {
		if end := strings.IndexByte(exe[1:], '"'); end >= 0 {
			exe = exe[1 : end+1]
		}
	} else if i := strings.IndexAny(exe, " \t"); i >= 0 {
		exe = exe[:i]
	}
	if i := strings.LastIndexAny(exe, `/\`); i >= 0 {
		exe = exe[i+1:]
	}
	if len(exe) > 4 && strings.EqualFold(exe[len(exe)-4:], ".exe") {
		exe = exe[:len(exe)-4]
	}
	return exe
}

// reverseDialer dials a runtime of a ReverseSource, waiting at most the
// source's ReconnectTimeout for its next connection; a runtime that has
// closed its connection or does not connect again in that time is removed
// from the server (it has exited).
type reverseDialer struct {
	s  *ReverseSource
	rt *reverse.Runtime
}

func (d reverseDialer) Dial(ctx context.Context) (net.Conn, error) {
	wait := cmp.Or(d.s.ReconnectTimeout, DefaultReconnectTimeout)
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := d.rt.Dial(dctx)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, reverse.ErrRuntimeGone):
		d.s.Server.Remove(d.rt)
	case ctx.Err() == nil && dctx.Err() != nil:
		d.s.Server.Remove(d.rt)
		err = fmt.Errorf("runtime %d did not connect again within %v (a live runtime connects again at once): it has probably exited: %w", d.rt.PID, wait, err)
	}
	return nil, err
}

// String names the runtime in errors.
func (d reverseDialer) String() string { return d.rt.String() }

// StaticSource is a fixed list of processes, for tests and embedding.
type StaticSource []Process

// Processes implements Source.
func (s StaticSource) Processes(context.Context) ([]Process, error) { return s, nil }
