package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/eventpipe"
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
	// overall is --timeout: for a command of requests, one deadline for
	// all of them and their fallbacks (diag.Config.Deadline); for one that
	// opens a session, the bound on starting it (target.startContext).
	overall time.Duration
	// session is set (by sessionTargetFlags) for a command that opens an
	// EventPipe session: resolve refuses a stopped process unless force.
	session bool
	// ownTimeout is set for a command with a --timeout of its own (dump,
	// attach, gcdump): register adds none.
	ownTimeout bool
	// force points at the command's --force (set before register by a
	// command that has one for its output; register adds one otherwise
	// for a session).
	force    *bool
	ownForce bool
}

// sessionTargetFlags returns the process selection of a command that opens
// an EventPipe session; force is its --force, or nil for one that
// register adds.
func (e *env) sessionTargetFlags(force *bool) *targetFlags {
	f := e.targetFlags()
	f.session, f.force = true, force
	return f
}

// clientConfig is the diag configuration of the target's client.
func (f *targetFlags) clientConfig() *diag.Config {
	c := &diag.Config{Timeout: f.timeout}
	if !f.session && !f.ownTimeout && f.overall > 0 {
		c.Deadline = time.Now().Add(f.overall)
		if f.timeout == 0 || f.timeout > f.overall {
			c.Timeout = f.overall
		}
	}
	return c
}

// forced reports whether --force was given.
func (f *targetFlags) forced() bool { return f.force != nil && *f.force }

// stoppedForceUsage is what --force adds on a command that opens a session.
const stoppedForceUsage = "start the session even in a process that is stopped (SIGSTOP, a debugger): it starts when the process continues"

func (f *targetFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	if !f.ownTimeout {
		help := "give up when the runtime has not answered within this long: one deadline for every request of the command and its fallbacks"
		if f.session {
			help = "give up when the session has not started within this long (the request and its fallbacks); the collection itself has its own bounds"
		}
		fl.DurationVar(&f.overall, "timeout", diag.DefaultTimeout, help)
	}
	if f.session && f.force == nil {
		f.force = &f.ownForce
		fl.BoolVar(&f.ownForce, "force", false, stoppedForceUsage)
	}
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
	if f.g != nil {
		d.RetryFor = f.g.dialRetryFor
	}
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

	// startTimeout bounds starting a session (--timeout); 0 means none,
	// as for a stopped process with --force.
	startTimeout time.Duration
}

// startSession starts an EventPipe session in the target within
// --timeout.
func (t *target) startSession(ctx context.Context, cfg eventpipe.Config) (*eventpipe.Session, error) {
	sctx, cancel := t.startContext(ctx)
	defer cancel()
	sess, err := eventpipe.Start(sctx, t.Client, cfg)
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			return nil, fmt.Errorf("start the session: no answer within --timeout %v: %w", t.startTimeout, err)
		}
		return nil, fmt.Errorf("start the session: %w", err)
	}
	return sess, nil
}

// startContext is the context to start a session with: ctx bounded by
// --timeout.
func (t *target) startContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.startTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, t.startTimeout)
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
		if dp.Mode == transport.PortListen && !transport.ListenGiven(f.port) && transport.LiveSocket(ctx, dp.Address) {
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
	if f.g != nil {
		f.g.pid = t.PID
	}
	if f.session {
		t.startTimeout = f.overall
		if t.PID != 0 {
			switch err := checkRunning(t.PID, hostProc); {
			case err == nil:
			case !f.forced():
				return nil, &ExitError{Code: exitRuntime, Err: fmt.Errorf("%w; continue it first (kill -CONT %d), or give --force to start the session once it continues", err, t.PID)}
			default:
				fmt.Fprintf(f.stderr(), "warning: %v; the session starts once it continues (kill -CONT %d); Ctrl-C gives up.\n", err, t.PID)
				t.startTimeout = 0
				f.timeout = -1
			}
		}
	}
	t.Client = diag.NewClient(f.dialer(t.Endpoint), f.clientConfig())
	return &t, nil
}
