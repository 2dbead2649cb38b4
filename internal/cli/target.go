package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/spf13/cobra"
)

// targetFlags is the process selection every command that talks to a
// process shares: exactly one of -p, -n and --diagnostic-port.
type targetFlags struct {
	pid  int
	name string
	port string
	g    *globalFlags
	cmd  *cobra.Command // for its stderr (listen and launch messages)
	// launch, set by registerLaunch, lets the command start its target.
	launch *launchFlags
	// timeout, when set by the command before resolve, bounds each
	// command sent to the runtime (diag.Config.Timeout: 0 the default,
	// negative no limit).
	timeout time.Duration
}

// clientConfig is the diag configuration of the target's client.
func (f *targetFlags) clientConfig() *diag.Config {
	return &diag.Config{Timeout: f.timeout}
}

func (f *targetFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.IntVarP(&f.pid, "process-id", "p", 0, "process id of the target .NET process")
	fl.StringVarP(&f.name, "name", "n", "", "name of the target process (as shown by 'clrdiag ps')")
	fl.StringVar(&f.port, "diagnostic-port", "", "diagnostic port: PATH[,suspend|,nosuspend] to wait for a runtime started with DOTNET_DiagnosticPorts=PATH to connect (listen, the default), or PATH,connect for a runtime's own socket (a PATH where a runtime already listens is connected to)")
	fl.StringVar(&f.port, "dport", "", "alias of --diagnostic-port")
	_ = fl.MarkHidden("dport")
}

// dialer wraps the endpoint with the global --record-ipc and --replay-ipc
// options.
func (f *targetFlags) dialer(ep transport.Endpoint) diag.Dialer {
	if f.g != nil && f.g.replay != nil {
		return f.g.replay
	}
	d := transport.Dialer{Endpoint: ep}
	if f.g != nil && f.g.recorder != nil { // not a nil *Recorder in the interface
		d.Recorder = f.g.recorder
	}
	return d
}

// target is a resolved process and a client for it.
type target struct {
	PID      int
	Name     string
	Endpoint transport.Endpoint
	Client   *diag.Client

	// Started, when non-nil, must be called once the command has set up
	// what it needs (e.g. its EventPipe session): for a child launched
	// suspended or a runtime waiting on a suspending port it sends
	// ResumeRuntime.
	Started func(ctx context.Context) error
	// Exited, when non-nil, is closed when a launched child exits; then
	// ExitCode returns its status.
	Exited   <-chan struct{}
	ExitCode func() int
	// Close releases what resolve set up (a listening socket, a child).
	Close func() error
}

// started calls t.Started if set.
func (t *target) started(ctx context.Context) error {
	if t.Started == nil {
		return nil
	}
	return t.Started(ctx)
}

// close calls t.Close if set.
func (t *target) close() error {
	if t.Close == nil {
		return nil
	}
	return t.Close()
}

// errNoTarget is returned when no selection flag was given.
var errNoTarget = errors.New("no target process: give -p PID, -n NAME or --diagnostic-port PATH (see 'clrdiag ps')")

func (f *targetFlags) given() int {
	n := 0
	if f.pid != 0 {
		n++
	}
	if f.name != "" {
		n++
	}
	if f.port != "" {
		n++
	}
	return n
}

// resolve finds the endpoint of the selected process and returns a client
// for it.
func (f *targetFlags) resolve(ctx context.Context) (*target, error) {
	if f.g != nil && f.g.replay != nil && f.given() == 0 {
		// A replayed recording needs no process.
		return &target{Client: diag.NewClient(f.g.replay, f.clientConfig())}, nil
	}
	if args := f.childArgs(); len(args) > 0 {
		return f.launchTarget(ctx, args)
	}
	switch f.given() {
	case 0:
		return nil, usageError(errNoTarget)
	case 1:
	default:
		return nil, usageError(errors.New("give only one of -p, -n and --diagnostic-port"))
	}
	var t target
	switch {
	case f.pid != 0:
		if f.pid < 0 {
			return nil, usageErrorf("-p %d: a process id is a positive number", f.pid)
		}
		ep, err := transport.Resolve(ctx, f.pid, f.g.discoverConfig())
		if err != nil {
			return nil, explainNotFound(err, nil, hostProc)
		}
		t.PID, t.Endpoint = f.pid, ep
	case f.name != "":
		procs, err := transport.FindByName(ctx, f.name, f.g.discoverConfig())
		if err != nil {
			all, _ := transport.Discover(ctx, f.g.discoverConfig())
			return nil, explainNotFound(err, all, hostProc)
		}
		switch len(procs) {
		case 0:
			all, _ := transport.Discover(ctx, f.g.discoverConfig())
			return nil, &ExitError{Code: exitNotFound, Err: nameNotFound(f.name, all)}
		case 1:
		default:
			pids := make([]string, len(procs))
			for i, p := range procs {
				pids[i] = fmt.Sprint(p.PID)
			}
			return nil, usageErrorf("%d .NET processes are named %q (pids %s): pick one with -p", len(procs), f.name, strings.Join(pids, ", "))
		}
		t.PID, t.Name, t.Endpoint = procs[0].PID, procs[0].Name, procs[0].Endpoint
	default:
		dp, err := transport.ParseDiagnosticPort(f.port)
		if err != nil {
			return nil, usageError(err)
		}
		if dp.Mode == transport.PortListen && !explicitListen(f.port) && liveSocket(ctx, dp.Address) {
			// As dotnet-dump: a path where a runtime already listens is
			// one to connect to (listening there is impossible anyway).
			fmt.Fprintf(f.stderr(), "%s is a live socket: connecting to it (add ,listen to wait for a runtime there instead)\n", dp.Address)
			dp.Mode = transport.PortConnect
		}
		if dp.Mode == transport.PortListen {
			return f.listenTarget(ctx, dp)
		}
		ep, err := dp.Endpoint()
		if err != nil {
			return nil, usageError(err)
		}
		t.Endpoint = ep
	}
	t.Client = diag.NewClient(f.dialer(t.Endpoint), f.clientConfig())
	return &t, nil
}

// explicitListen reports whether a --diagnostic-port value asks for listen
// mode in so many words.
func explicitListen(spec string) bool {
	tags := strings.Split(spec, ",")
	for _, t := range tags[1:] {
		if strings.EqualFold(strings.TrimSpace(t), "listen") {
			return true
		}
	}
	return false
}

// liveSocket reports whether path is a Unix socket something accepts
// connections on (a runtime's diagnostic socket, or dsrouter's).
func liveSocket(ctx context.Context, path string) bool {
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
