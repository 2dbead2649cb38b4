package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/internal/ctxio"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/ipc"
)

// The gcdump command groups the heap snapshot subcommands, one per file
// (gcdump_collect.go, gcdump_report.go, gcdump_paths.go, gcdump_diff.go,
// gcdump_convert.go; 'gcdump ps' comes from aliases.go), each added with
//
//	func init() { registerGCDump("xxx", newGCDumpXxxCmd) }
func init() { register("gcdump", newGCDumpCmd) }

// gcdumpCommands are the gcdump subcommand constructors, filled by init
// functions and never changed after program start.
var gcdumpCommands []command

func registerGCDump(name string, f func(*env) *cobra.Command) {
	gcdumpCommands = append(gcdumpCommands, command{name, f})
}

func newGCDumpCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gcdump",
		Short: "Heap snapshots: collect, report, paths to roots, diff, flame graphs (.gcdump files)",
		Long: "Take heap snapshots of a running .NET process (Core 3.0 and later) as dotnet-gcdump does,\n" +
			"in the .gcdump format that PerfView, Visual Studio and dotnet-gcdump read, and look into\n" +
			"them: objects per type with retained sizes, what keeps a type alive, what grew between two\n" +
			"snapshots, and the heap as a flame graph.\n\n" +
			"A leak hunt:\n" +
			"  clrdiag gcdump collect -p 1234 -o before.gcdump\n" +
			"  clrdiag gcdump collect -p 1234 -o after.gcdump      # a while later\n" +
			"  clrdiag gcdump diff before.gcdump after.gcdump      # what grew\n" +
			"  clrdiag gcdump paths after.gcdump --type MyApp.Item # what holds it",
	}
	for _, c := range reachable(gcdumpCommands, e.argsAfter("gcdump")) {
		cmd.AddCommand(c.build(e))
	}
	return cmd
}

// loadGraph reads a .gcdump file, or the heap snapshot in a .nettrace file
// (a session with the heap keywords); "-" reads standard input. A signal
// (e.ctx) stops the reading: exitInterrupted.
func loadGraph(e *env, path string) (*gcdump.Graph, error) {
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	var (
		g   *gcdump.Graph
		err error
	)
	if path == "-" {
		br := bufio.NewReader(ctxio.Cancelable(ctx, e.stdin))
		if head, _ := br.Peek(8); string(head) == "Nettrace" {
			g, err = gcdump.FromTrace(br)
		} else {
			g, err = gcdump.ReadAll(br)
		}
	} else {
		f, oerr := openInput(path) // a directory is a local I/O failure, not damage
		if oerr != nil {
			return nil, oerr
		}
		defer f.Close()
		head := make([]byte, 8)
		n, _ := io.ReadFull(f, head)
		if string(head[:n]) == "Nettrace" {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, &ExitError{Code: exitIO, Err: err}
			}
			g, err = gcdump.FromTrace(bufio.NewReaderSize(ctxio.Cancelable(ctx, f), 1<<20))
		} else if st, serr := f.Stat(); serr != nil {
			err = serr
		} else {
			g, err = gcdump.Read(ctxio.ReaderAt(ctx, f), st.Size())
		}
	}
	switch {
	case err == nil:
		return g, nil
	case ctx.Err() != nil:
		return nil, gcdumpInterrupted(path, "reading it")
	case gcdump.IsFormatError(err), errors.Is(err, gcdump.ErrNoHeapDump), errors.Is(err, gcdump.ErrIncomplete), isNettraceError(err):
		return nil, &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w", path, err)}
	}
	return nil, &ExitError{Code: exitIO, Err: fmt.Errorf("%s: %w", path, err)}
}

// computeDominators computes the snapshot's dominator tree; a signal
// stops it (exitInterrupted).
func computeDominators(ctx context.Context, g *gcdump.Graph) (*gcdump.Dominators, error) {
	d, err := gcdump.ComputeDominatorsContext(ctx, g)
	if err != nil {
		if ctx.Err() != nil {
			return nil, gcdumpInterrupted("", "computing the dominator tree")
		}
		return nil, &ExitError{Code: exitFailure, Err: err}
	}
	return d, nil
}

// gcdumpInterrupted is the error of a gcdump command stopped by a signal.
func gcdumpInterrupted(path, doing string) error {
	if path == "" {
		return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("interrupted while %s", doing)}
	}
	return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("%s: interrupted while %s", path, doing)}
}

func isNettraceError(err error) bool {
	return gcdump.IsTruncation(err) || strings.Contains(err.Error(), "nettrace")
}

// gcdumpSource is the snapshot a report-like command works on: a FILE
// argument, or a live process given with the target flags.
type gcdumpSource struct {
	tf      *targetFlags
	timeout string
	// reportType is set for 'gcdump report', which takes dotnet-gcdump's
	// --report-type (its -t): heapstat, what the command prints.
	reportType *string
}

// heapstat is dotnet-gcdump's only report type: objects and bytes per
// type, which 'gcdump report' prints.
const heapstat = "heapstat"

func (s *gcdumpSource) register(cmd *cobra.Command) {
	s.tf.ownTimeout = true
	s.tf.register(cmd)
	help := "with -p/-n/--diagnostic-port: give up when the heap walk takes longer (a Go duration, or seconds)"
	if s.reportType != nil {
		help += "; dotnet-gcdump's -t heapstat (its --report-type) is accepted too"
		cmd.Flags().StringVar(s.reportType, "report-type", heapstat, "dotnet-gcdump's report type: heapstat (the only one, what this command prints)")
	}
	cmd.Flags().StringVarP(&s.timeout, "timeout", "t", "30s", help)
}

// timeoutValue reads --timeout (-t). In 'gcdump report', -t heapstat is
// dotnet-gcdump's report type, which this command prints: accepted, with
// the default timeout. A -t that is neither is refused, naming both
// meanings.
func (s *gcdumpSource) timeoutValue() (time.Duration, error) {
	if s.reportType != nil {
		if !strings.EqualFold(*s.reportType, heapstat) {
			return 0, usageErrorf("--report-type %q: the only report type is heapstat (dotnet-gcdump's too), objects and bytes per type", *s.reportType)
		}
		if strings.EqualFold(s.timeout, heapstat) {
			return gcdump.DefaultTimeout, nil
		}
	}
	d, err := parseGCDumpTimeout(s.timeout)
	if err != nil && s.reportType != nil {
		return 0, usageErrorf("-t %q: in clrdiag, -t is --timeout (a Go duration such as 45s, or seconds), for a snapshot taken with -p; "+
			"dotnet-gcdump's -t is --report-type, whose only type, heapstat, is what 'gcdump report' prints", s.timeout)
	}
	return d, err
}

// load reads the FILE argument or collects a snapshot of the target.
func (s *gcdumpSource) load(cmd *cobra.Command, e *env, args []string) (*gcdump.Graph, error) {
	live := s.tf.given() > 0 || len(s.tf.childArgs()) > 0
	if cmd.Flags().Changed("timeout") || cmd.Flags().Changed("report-type") {
		// Checked with a file too: a mistaken -t is better said than
		// ignored.
		if _, err := s.timeoutValue(); err != nil {
			return nil, err
		}
	}
	switch {
	case len(args) == 1 && live:
		return nil, &ExitError{Code: exitUsage, Err: errors.New("give a snapshot FILE or a process (-p, -n, --diagnostic-port), not both")}
	case len(args) == 1:
		return loadGraph(e, args[0])
	case !live:
		return nil, &ExitError{Code: exitUsage, Err: errors.New("give a snapshot FILE, or a process with -p PID, -n NAME or --diagnostic-port")}
	}
	timeout, err := s.timeoutValue()
	if err != nil {
		return nil, err
	}
	s.tf.timeout = timeout // also bounds each request: starting the session, stopping it
	g, err := collectHeap(cmd.Context(), e, s.tf, gcdump.CollectConfig{Timeout: timeout})
	return g, err
}

// parseGCDumpTimeout accepts a Go duration, dd:hh:mm:ss, or a number of
// seconds as dotnet-gcdump's --timeout.
func parseGCDumpTimeout(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 31); err == nil {
		if n == 0 {
			return 0, &ExitError{Code: exitUsage, Err: errors.New("--timeout must be positive")}
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return 0, &ExitError{Code: exitUsage, Err: fmt.Errorf("--timeout: %w", err)}
	}
	if d <= 0 {
		return 0, &ExitError{Code: exitUsage, Err: errors.New("--timeout must be positive")}
	}
	return d, nil
}

// collectHeap resolves the target and takes a snapshot, printing progress
// on stderr.
func collectHeap(ctx context.Context, e *env, tf *targetFlags, cfg gcdump.CollectConfig) (*gcdump.Graph, error) {
	t, err := tf.resolve(ctx)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if cfg.ProcessName == "" {
		cfg.ProcessName = targetProcessName(ctx, e, t)
	}
	cfg.ProcessID = t.PID
	cfg.Started = t.started
	cfg.Notify = func(n gcdump.Note) {
		switch {
		case n.Kind == gcdump.NoteProgress:
			fmt.Fprintf(e.stderr, "%s\n", n)
		case n.Warning():
			fmt.Fprintf(e.stderr, "warning: %s\n", n)
		default:
			fmt.Fprintln(e.stderr, n)
		}
	}
	g, err := gcdump.Collect(ctx, t.Client, cfg)
	if err != nil {
		return nil, collectExit(ctx, err)
	}
	return g, nil
}

// collectExit gives a failed collection its exit status.
func collectExit(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err // the classifier makes a signal exitInterrupted
	case errors.Is(err, gcdump.ErrTimeout):
		return &ExitError{Code: exitRuntime, Err: fmt.Errorf("%w (the runtime walks the whole heap during a blocking collection: a large heap takes longer)", err)}
	case errors.Is(err, ipc.ErrUnknownCommand):
		return &ExitError{Code: exitRuntime, Err: fmt.Errorf("%w (heap snapshots need .NET Core 3.0 or later)", err)}
	case errors.Is(err, gcdump.ErrEndedEarly), errors.Is(err, gcdump.ErrTargetExited), gcdump.IsTruncation(err):
		return &ExitError{Code: exitTargetGone, Err: fmt.Errorf("the session ended before the heap walk did: the target exited, was killed or closed the connection (%w)", err)}
	case errors.Is(err, gcdump.ErrIncomplete), errors.Is(err, gcdump.ErrNoHeapDump):
		return &ExitError{Code: exitRuntime, Err: err}
	}
	return err // transport and ipc errors: classified by exitCodeOf
}

// writeOutput writes to path ("-" is standard output), created by the
// safefile rule (an existing path is refused unless force; private files
// are 0600); a failed write removes the file.
func writeOutput(e *env, path string, private, force bool, write func(io.Writer) error) (int64, error) {
	if path == "-" {
		cw := &countWriter{w: e.stdout}
		return cw.n, write(cw)
	}
	f, err := safefile.Create(path, safefile.Options{Overwrite: force, Private: private})
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: f}
	werr := write(cw)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		if errors.Is(werr, gcdump.ErrTooLarge) {
			return 0, &ExitError{Code: exitFailure, Err: werr}
		}
		return 0, &ExitError{Code: exitIO, Err: fmt.Errorf("write %s: %w; the partial file was removed", path, unwrapPath(werr))}
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
