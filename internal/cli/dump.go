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
	tf.ownTimeout = true // --timeout: how long the runtime may take to write the dump
	var (
		typ         string
		out         string
		diagLog     bool
		verbose     bool
		crashReport bool
		force       bool
		inTarget    bool
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
			def := "core_" + time.Now().Format("20060102_150405")
			if runtime.GOOS == "windows" {
				def = "dump_" + time.Now().Format("20060102_150405") + ".dmp"
			}
			if out == "" {
				out = def
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			// The target resolves the path in its own file system; check
			// there what can be checked before asking it. An existing
			// directory receives the default name.
			place := locateDump(t.PID, abs, hostProc)
			if place.Local != "" && isDir(place.Local) {
				abs = filepath.Join(abs, def)
				place = locateDump(t.PID, abs, hostProc)
			}
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
				return invisibleDump(e, t.PID, abs, "clrdiag cannot reach the target's file system (it runs in another mount namespace and /proc/PID/root is not readable: run clrdiag as root or with CAP_SYS_PTRACE)", inTarget)
			}
			// createdump makes the file world-readable; a dump holds the
			// process's memory, secrets included.
			st, serr := safefile.Seal(place.Local)
			switch {
			case serr == nil:
				fmt.Fprintf(e.stdout, "Dump written to %s (%d bytes, mode 0600)\n", abs, st.Size())
			case errors.Is(serr, fs.ErrNotExist):
				why := fmt.Sprintf("no file is at %s although the runtime said it wrote it there: the target sees another file system (a container or another mount namespace)", place.Local)
				return invisibleDump(e, t.PID, abs, why, inTarget)
			default:
				return ioError(fmt.Errorf("the dump at %s is not safe to keep: %w", abs, serr))
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
	fl.BoolVar(&inTarget, "path-in-target", false, "the path is one in the target's file system that clrdiag need not see (a container's): succeed once the runtime says it wrote the dump")
	fl.DurationVar(&timeout, "timeout", defaultDumpTimeout, "how long to wait for the runtime to write the dump (0: as long as it takes); a full dump of a large process takes minutes")
	addForceFlag(cmd, &force)
	return cmd
}

// invisibleDump ends a dump the runtime wrote where clrdiag cannot see it:
// a success with --path-in-target, a local I/O failure (exitIO) otherwise,
// saying where the runtime wrote it and why it is not visible here.
func invisibleDump(e *env, pid int, abs, why string, inTarget bool) error {
	if inTarget {
		fmt.Fprintf(e.stdout, "Dump written to %s by the target, in its own file system (not visible from here)\n", abs)
		return nil
	}
	return ioError(fmt.Errorf("the runtime of process %d wrote the dump at %s in its file system, but it is not visible from here: %s; copy it out of the target's file system, or give --path-in-target when that is expected", pid, abs, why))
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
