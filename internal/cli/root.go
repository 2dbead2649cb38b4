// Package cli implements the clrdiag command line. Each subcommand lives in
// its own file and only wires flags to the importable packages.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/record"
	"github.com/spf13/cobra"
)

// ExitError carries a specific exit status out of a command. Its message,
// when non-empty, has already been printed or is printed by Main.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// env is what every command gets: its streams and nothing global.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	global globalFlags
	// ran is set when a command's RunE starts: an error returned before
	// that comes from cobra's checks of the command line.
	ran bool
	// cmd is the command that ran, once ran is set.
	cmd *cobra.Command
	// args is the command line, for error messages that need to look at
	// more of it than cobra passes along.
	args []string
	// ctx ends at SIGINT or SIGTERM (the commands' cmd.Context()).
	ctx context.Context
}

// globalFlags are the root's persistent flags.
type globalFlags struct {
	recordDir string
	replayDir string
	recorder  *record.Recorder
	replay    *record.ReplayDialer
	// ids are the random ids of a recording (replayids.go).
	idsOnce sync.Once
	ids     *record.IDLog
	// trustSocket turns off the check that a discovered socket belongs to
	// its process (--trust-socket).
	trustSocket bool
	// pid is the process the command resolved (0: none, or unknown), for
	// the hints of a failure.
	pid int
	// dialRetryFor is how long a refused or missing endpoint is retried
	// (transport.Dialer.RetryFor: 0 is transport's default); not a flag,
	// tests shorten it (mainConfig).
	dialRetryFor time.Duration
}

// discoverConfig is the discovery configuration the global flags select;
// nil means the defaults.
func (g *globalFlags) discoverConfig() *transport.DiscoverConfig {
	if g == nil || !g.trustSocket {
		return nil
	}
	return &transport.DiscoverConfig{TrustAnySocket: true}
}

// targetFlags returns process-selection flags bound to the global options.
func (e *env) targetFlags() *targetFlags { return &targetFlags{g: &e.global} }

// Main runs the CLI with the given arguments and streams and returns the
// process exit status (see exitcode.go).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainWith(mainConfig{}, args, stdin, stdout, stderr)
}

// mainConfig holds what Main takes from no flag; its zero value is
// Main's. Tests shorten waits with it.
type mainConfig struct {
	// dialRetryFor: see globalFlags.dialRetryFor.
	dialRetryFor time.Duration
}

func mainWith(cfg mainConfig, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &outWriter{w: stdout}
	e := &env{stdin: stdin, stdout: out, stderr: stderr, args: args, ctx: ctx}
	e.global.dialRetryFor = cfg.dialRetryFor
	code := execute(e, newRootCmd(e))
	if code == exitOK && out.err != nil && !errors.Is(out.err, syscall.EPIPE) {
		// A command that did not look at its writes' errors: its output
		// is incomplete all the same.
		fmt.Fprintf(stderr, "clrdiag: %s\n", failureMessage(exitIO, "writing the standard output failed: "+unwrapPath(out.err).Error()+"; the output is incomplete"))
		return exitIO
	}
	return code
}

// outWriter is the standard output: it keeps the first write error, so
// that a command's output that could not be written is never a success.
type outWriter struct {
	w   io.Writer
	err error
}

func (o *outWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

// Unwrap returns the writer it wraps (for terminal checks).
func (o *outWriter) Unwrap() io.Writer { return o.w }

// unwrapWriter returns the writer under the CLI's own wrappers.
func unwrapWriter(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// execute runs the command line e.args with the tree root and returns the
// exit status.
func execute(e *env, root *cobra.Command) int {
	ctx, args, stdout, stderr := e.ctx, e.args, e.stdout, e.stderr
	args = colonBools(root, args)
	e.args = args
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCodeOf(err, ctx.Err() != nil)
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		if ee.Err == nil {
			return ee.Code // its message is already printed
		}
		err = ee.Err
	case !e.ran:
		// Cobra refused the command line before any command ran: a
		// missing required flag, a flag group, an argument count.
		code = exitUsage
	}
	fmt.Fprintf(stderr, "clrdiag: %s\n", termsafe.Lines(failureMessage(code, err.Error()+e.hints(code, err))))
	return code
}

// hints is what a failure's message gains from what the command knows: the
// --timeout to raise after a timeout, a target that is stopped now.
func (e *env) hints(code int, err error) string {
	var h string
	if code == exitRuntime && isTimeout(err) && e.cmd != nil && !strings.Contains(err.Error(), "--timeout") {
		if f := e.cmd.Flags().Lookup("timeout"); f != nil {
			h += fmt.Sprintf("; --timeout is %s: raise it to wait longer", f.Value)
		}
	}
	if (code == exitRuntime || code == exitTargetGone) && !errors.Is(err, errStopped) {
		if s := stoppedHint(e.global.pid, hostProc); s != "" {
			h += "; " + s
		}
	}
	return h
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "clrdiag",
		Short: "Diagnose running .NET processes without .NET installed",
		Long: "clrdiag speaks the .NET runtime's Diagnostic IPC protocol: it lists .NET processes,\n" +
			"queries and controls them, collects EventPipe traces and decodes nettrace files.\n\n" +
			exitCodeHelp(),
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("clrdiag {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&e.global.recordDir, "record-ipc", "", "save every byte exchanged with the runtime to this directory (one file per connection), for bug reports")
	pf.StringVar(&e.global.replayDir, "replay-ipc", "", "answer from a directory saved with --record-ipc instead of a live process")
	pf.BoolVar(&e.global.trustSocket, "trust-socket", false, "use a discovered diagnostic socket even when it fails the ownership check (owned by another user than the process's, older than the process, or another PID namespace's); only for a socket you know is the target's")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if e.global.recordDir != "" && e.global.replayDir != "" {
			return usageError(errors.New("--record-ipc and --replay-ipc cannot be used together"))
		}
		if e.global.recordDir != "" {
			r, err := record.NewRecorder(e.global.recordDir)
			if err != nil {
				return &ExitError{Code: exitIO, Err: fmt.Errorf("--record-ipc: %w", err)}
			}
			e.global.recorder = r
		}
		if e.global.replayDir != "" {
			r, err := record.Replay(e.global.replayDir)
			if err != nil {
				return usageError(fmt.Errorf("--replay-ipc: %w", err))
			}
			e.global.replay = r
		}
		return nil
	}
	cmds := reachable(commands, e.args)
	if len(e.args) == 1 && (e.args[0] == "--version" || e.args[0] == "-v") {
		// Only the version is asked for: no command is needed.
		cmds = nil
	}
	for _, c := range cmds {
		root.AddCommand(c.build(e))
	}
	addAliases(e, root)
	setupTree(e, root)
	if completionRequest(e.args) {
		registerCompletions(e, root)
	}
	return root
}

// command is a subcommand: its name (the first word of its Use) and its
// constructor.
type command struct {
	name  string
	build func(*env) *cobra.Command
}

// commands is the list of top-level subcommands, one per file. It is
// filled in by init functions of the subcommand files so that each file is
// self-contained; it is never mutated after program start.
var commands []command

func register(name string, f func(*env) *cobra.Command) {
	commands = append(commands, command{name, f})
}

// reachable returns the commands of cmds (the subcommands of one parent) a
// command line can use, given its arguments after the parent's name, so
// that an invocation builds only the part of the tree it runs (building
// every command, with its flags and help, was most of the cost of a small
// command): the command args[0] names, with everything below it; every
// command otherwise, since the parent's help, its "unknown command"
// suggestions, shell completion and flags written before the command look
// at all of them.
func reachable(cmds []command, args []string) []command {
	if len(args) > 0 {
		for _, c := range cmds {
			if c.name == args[0] {
				return []command{c}
			}
		}
	}
	return cmds
}

// argsAfter returns the command line after its first word when that word
// is name (the arguments of the top-level command name), else nil.
func (e *env) argsAfter(name string) []string {
	if len(e.args) > 0 && e.args[0] == name {
		return e.args[1:]
	}
	return nil
}

// completionRequest reports whether args is a request of the shell
// completion scripts (cobra's hidden __complete command), the only use of
// the flag value completions.
func completionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}
