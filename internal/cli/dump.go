package cli

import (
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

func init() { register(newDumpCmd) }

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
			// The runtime opens the path itself and follows a link planted
			// there: refuse (or, with --force, remove) what is in the way.
			if err := safefile.Prepare(abs, force); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "Writing %s dump of process %d to %s\n", strings.ToLower(typ), t.PID, abs)
			err = t.Client.WriteDump(ctx, diag.DumpRequest{Path: abs, Type: dt, Diagnostics: diagLog, VerboseDiagnostics: verbose, CrashReport: crashReport})
			if err != nil {
				return err
			}
			// createdump makes the file world-readable; a dump holds the
			// process's memory, secrets included.
			if st, serr := safefile.Seal(abs); serr == nil {
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
	addForceFlag(cmd, &force)
	return cmd
}
