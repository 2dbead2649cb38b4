package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/transport/reverse"
	"github.com/spf13/cobra"
)

// defaultLaunchTimeout is how long a launched child's runtime has to connect,
// as in the .NET tools.
const defaultLaunchTimeout = 10 * time.Second

// launchFlags are the options of commands that can start the target
// themselves: clrdiag trace collect ... -- dotnet app.dll.
type launchFlags struct {
	showChildIO   bool
	resumeRuntime bool
	// timeout is how long the child's runtime has to connect; 0 means
	// defaultLaunchTimeout. Tests shorten it.
	timeout time.Duration
}

// registerLaunch lets cmd start its target: the arguments after "--" are a
// command to run with a private diagnostic port. It adds --show-child-io and
// --resume-runtime and makes cmd accept arguments only after "--".
func (f *targetFlags) registerLaunch(cmd *cobra.Command) {
	f.launch = &launchFlags{}
	fl := cmd.Flags()
	fl.BoolVar(&f.launch.showChildIO, "show-child-io", false, "connect the launched child's standard input and output to clrdiag's (hidden by default)")
	fl.BoolVar(&f.launch.resumeRuntime, "resume-runtime", true, "resume the launched child's runtime once the session is set up (false leaves it paused at startup)")
	if cmd.Use != "" && !strings.Contains(cmd.Use, "--") {
		cmd.Use += " [-- COMMAND [ARGS...]]"
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
			return usageErrorf("unexpected argument %q: a command to launch goes after --", args[0])
		}
		return nil
	}
}

// childArgs returns the command after "--", if any.
func (f *targetFlags) childArgs() []string {
	if f.launch == nil || f.cmd == nil || f.cmd.ArgsLenAtDash() < 0 {
		return nil
	}
	args := f.cmd.Flags().Args()
	if at := f.cmd.ArgsLenAtDash(); at <= len(args) {
		return args[at:]
	}
	return nil
}

// launchSocket names the private listen socket as the .NET tools do:
// $TMPDIR/clrdiag-<pid>-<yyyyMMdd_HHmmss>.socket, a bare pipe name on Windows.
func launchSocket(now time.Time) string {
	name := fmt.Sprintf("clrdiag-%d-%s", os.Getpid(), now.Format("20060102_150405"))
	if runtime.GOOS == "windows" {
		return name
	}
	return filepath.Join(os.TempDir(), name+".socket")
}

// childEnv is env with DOTNET_DiagnosticPorts replaced.
func childEnv(env []string, port string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.EqualFold(name, "DOTNET_DiagnosticPorts") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "DOTNET_DiagnosticPorts="+port)
}

// exitStatus is a process's exit code, 128+signal for a killed one.
func exitStatus(ps *os.ProcessState) int {
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return 1
}

// launchTarget starts the command after "--" with a private connect-mode
// diagnostic port that suspends its runtime, waits for that runtime to
// connect, and returns it as the target. Started resumes it (unless
// --resume-runtime=false); Close kills the child if it still runs.
func (f *targetFlags) launchTarget(ctx context.Context, args []string) (*target, error) {
	if f.given() != 0 {
		return nil, usageError(errors.New("give either a command to launch after -- or one of -p, -n and --diagnostic-port"))
	}
	timeout := f.launch.timeout
	if timeout <= 0 {
		timeout = defaultLaunchTimeout
	}
	addr := launchSocket(time.Now())
	srv, err := reverse.Listen(addr, nil)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = childEnv(os.Environ(), addr+",suspend,connect")
	if f.launch.showChildIO && f.cmd != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = f.cmd.InOrStdin(), f.cmd.OutOrStdout(), f.cmd.ErrOrStderr()
		// A stdin that is not a file is copied by a goroutine that may
		// block forever; do not let it hold Wait once the child is gone.
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		srv.Close()
		return nil, usageErrorf("launch %s: %w", args[0], err)
	}
	exited := make(chan struct{})
	var code int
	go func() {
		err := cmd.Wait()
		if cmd.ProcessState != nil {
			code = exitStatus(cmd.ProcessState)
		} else if err != nil {
			code = 1
		}
		close(exited)
	}()
	kill := func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	fail := func(err error) (*target, error) {
		kill()
		srv.Close()
		return nil, err
	}

	// Accept until the child's own runtime connects: another runtime could
	// find the socket, and a child may start other .NET processes first.
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-actx.Done():
		}
	}()
	var rt *reverse.Runtime
	for rt == nil {
		r, err := srv.Accept(actx)
		if err != nil {
			select {
			case <-exited:
				return fail(&ExitError{Code: exitNotFound, Err: fmt.Errorf("%s exited with status %d before its runtime connected to clrdiag (is it a .NET 5+ application?)", args[0], code)})
			default:
			}
			if ctx.Err() != nil {
				return fail(err)
			}
			return fail(&ExitError{Code: exitNotFound, Err: fmt.Errorf("the runtime did not connect within %v: launching under tracing needs .NET 5 or later (.NET Core 3.1 does not know DOTNET_DiagnosticPorts); start the application yourself and use -p", timeout)})
		}
		if r.PID == cmd.Process.Pid {
			rt = r
		}
	}

	t := f.reverseTarget(srv, rt, f.launch.resumeRuntime)
	t.Name = filepath.Base(args[0])
	t.Exited = exited
	t.ExitCode = func() int {
		<-exited
		return code
	}
	var once sync.Once
	var closeErr error
	t.Close = func() error {
		// The child's session is over: end it as the .NET tools do, then
		// remove the socket.
		once.Do(func() {
			kill()
			closeErr = srv.Close()
		})
		return closeErr
	}
	if !f.launch.resumeRuntime {
		t.Started = nil
	}
	return t, nil
}
