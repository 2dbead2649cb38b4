package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/spf13/cobra"
)

func init() { register("dump", newDumpCmd) }

var dumpTypes = map[string]ipc.DumpType{
	"full": ipc.DumpFull, "heap": ipc.DumpWithHeap, "mini": ipc.DumpNormal, "triage": ipc.DumpTriage,
}

func newDumpCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	var (
		typ         string
		out         string
		diagLog     bool
		verbose     bool
		crashReport bool
		force       bool
		timeout     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Write a core dump of the target (the runtime's createdump writes it)",
		Long: "Ask the runtime to write a dump of itself. The target process writes the file, so the\n" +
			"path is made absolute and must be writable by the target (inside its container, if any).\n" +
			"Types: full (default), heap, mini, triage. createdump needs ptrace rights in the target's\n" +
			"environment (CAP_SYS_PTRACE in containers).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dt, ok := dumpTypes[strings.ToLower(typ)]
			if !ok {
				return usageErrorf("--type %q: use full, heap, mini or triage", typ)
			}
			if timeout < 0 {
				return usageErrorf("--timeout %v: give a positive duration, or 0 to wait as long as the runtime takes", timeout)
			}
			tf.timeout = timeout
			if timeout == 0 {
				tf.timeout = -1 // diag: no per-command limit
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if out == "" {
				out = "core_" + time.Now().Format("20060102_150405")
				if runtime.GOOS == "windows" {
					out = "dump_" + time.Now().Format("20060102_150405") + ".dmp"
				}
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			// The target resolves the path in its own file system; check
			// there what can be checked before asking it.
			place := locateDump(t.PID, abs, hostProc)
			if err := checkDumpDir(t.PID, place, hostProc); err != nil {
				return err
			}
			if place.OtherNamespace {
				fmt.Fprintf(e.stderr, "note: process %d runs in another mount namespace (a container): %s is a path in its file system\n", t.PID, abs)
			}
			// The runtime opens the path itself and follows a link planted
			// there: refuse (or, with --force, remove) what is in the way.
			if place.Local != "" {
				if err := safefile.Prepare(place.Local, force); err != nil {
					return err
				}
			}
			fmt.Fprintf(e.stderr, "Writing %s dump of process %d to %s\n", strings.ToLower(typ), t.PID, abs)
			err = t.Client.WriteDump(ctx, diag.DumpRequest{Path: abs, Type: dt, Diagnostics: diagLog, VerboseDiagnostics: verbose, CrashReport: crashReport})
			if err != nil {
				return dumpError(err, timeout)
			}
			if place.Local == "" {
				fmt.Fprintf(e.stdout, "Dump written to %s (by the target, in its file system; not visible from here)\n", abs)
				return nil
			}
			// createdump makes the file world-readable; a dump holds the
			// process's memory, secrets included.
			if st, serr := safefile.Seal(place.Local); serr == nil {
				fmt.Fprintf(e.stdout, "Dump written to %s (%d bytes, mode 0600)\n", abs, st.Size())
			} else if !errors.Is(serr, fs.ErrNotExist) {
				return &ExitError{Code: exitIO, Err: fmt.Errorf("the dump at %s is not safe to keep: %w", abs, serr)}
			} else {
				fmt.Fprintf(e.stdout, "Dump written to %s (by the target; not visible from here, e.g. inside its container)\n", abs)
			}
			return nil
		},
	}
	tf.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&typ, "type", "full", "dump type: full, heap, mini or triage")
	fl.StringVarP(&out, "output", "o", "", "dump file path (default ./core_YYYYMMDD_HHMMSS)")
	fl.BoolVar(&diagLog, "diag", false, "log dump generation in the target's output")
	fl.BoolVar(&verbose, "verbose-diag", false, "verbose dump generation logging (.NET 6+)")
	fl.BoolVar(&crashReport, "crashreport", false, "also write a crash report JSON (.NET 6+)")
	fl.DurationVar(&timeout, "timeout", defaultDumpTimeout, "how long to wait for the runtime to write the dump (0: as long as it takes); a full dump of a large process takes minutes")
	addForceFlag(cmd, &force)
	return cmd
}

// defaultDumpTimeout bounds a dump request: createdump writes every page
// of a full dump before the runtime answers.
const defaultDumpTimeout = 5 * time.Minute

// dumpError adds to a failed dump what only the dump command knows.
func dumpError(err error, timeout time.Duration) error {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return &ExitError{Code: exitRuntime, Err: fmt.Errorf("%w; the runtime may still be writing the dump: raise --timeout (now %v, 0 waits as long as it takes)", err, timeout)}
	}
	return err
}
