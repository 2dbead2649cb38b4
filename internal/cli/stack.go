package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/stacks"
)

func init() { register("stack", newStackCmd) }

func newStackCmd(e *env) *cobra.Command {
	tf := e.sessionTargetFlags(nil)
	var cfg stacks.Config
	var asJSON bool
	var rundownMax string
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Print the current managed stack of every thread of a running process",
		Long: "Take a snapshot of the managed stacks of every thread, as dotnet-stack does: a very short\n" +
			"SampleProfiler session (about 10 ms) whose first sample of each thread is printed,\n" +
			"symbolised with the rundown the runtime sends when the session stops. The rundown lists\n" +
			"every loaded method, so in a large application it can take several seconds.\n" +
			"Threads are named when the operating system knows their names (not on .NET Core 3.1).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Duration <= 0 {
				return usageError(errors.New("--duration must be positive"))
			}
			var err error
			if cfg.MaxRundownBytes, err = units.ParseBytes(rundownMax); err != nil || cfg.MaxRundownBytes <= 0 {
				return usageErrorf("--rundown-max-size %q: give a size such as 256MB or 1GB (powers of 1000; 256MiB for powers of 1024)", rundownMax)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			cfg.PID = t.PID
			cfg.StartTimeout = t.startTimeout
			cfg.Started = t.started
			cfg.Notify = func(n stacks.Note) { printStackNote(e.stderr, n) }
			snap, err := stacks.Capture(ctx, t.Client, cfg)
			if err != nil {
				return err // exitCodeOf: exitIO for the temporary file, exitRuntime for the runtime
			}
			if asJSON {
				return writeJSON(e.stdout, snap)
			}
			if err := snap.WriteText(e.stdout); err != nil {
				return err
			}
			if snap.NamesNote != "" {
				fmt.Fprintf(e.stderr, "note: %s\n", snap.NamesNote)
			}
			return nil
		},
	}
	tf.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	fl.DurationVar(&cfg.Duration, "duration", stacks.DefaultDuration, "how long to sample before stopping the session")
	_ = fl.MarkHidden("duration")
	fl.DurationVar(&cfg.StopTimeout, "stop-timeout", stacks.DefaultStopTimeout, "how long to wait for the runtime to acknowledge the stop")
	fl.DurationVar(&cfg.RundownTimeout, "rundown-timeout", stacks.DefaultRundownTimeout, "how long to wait for the rundown (method names) after the stop")
	fl.StringVar(&rundownMax, "rundown-max-size", "256MB", "how much the runtime may send after the stop (the rundown) before the session is closed")
	return cmd
}

// printStackNote prints a note of package stacks on w.
func printStackNote(w io.Writer, n stacks.Note) {
	switch {
	case n.Kind == stacks.NoteRundownTimeout:
		fmt.Fprintf(w, "warning: %s. Raise --rundown-timeout for a large application.\n", termsafe.Lines(n.String()))
	case n.Warning():
		fmt.Fprintf(w, "warning: %s\n", termsafe.Lines(n.String()))
	default:
		fmt.Fprintln(w, termsafe.Lines(n.String()))
	}
}
