package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/clrdiag/clrdiag/internal/ctxio"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
	"github.com/spf13/cobra"
)

func init() { registerTrace("stats", newTraceStatsCmd) }

func newTraceStatsCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Summarise a nettrace/netperf file: format, process, time span, events per provider",
		Long: "Read a trace file (or standard input with -) to its end and print what it holds:\n" +
			"format and version, pointer size, process, time span, event, metadata, stack and\n" +
			"sequence-point counts, dropped events, whether the stream ended cleanly, and the\n" +
			"number of events per provider and per event id, with the event's name (the\n" +
			"runtime's own events are named from clrdiag's copy of the runtime manifest).\n\n" +
			"A damaged or truncated trace still gets the statistics of what could be read;\n" +
			"the command then exits with status 5 (see 'clrdiag --help').",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, name, closeIn, err := openTraceInput(e, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			st, readErr := collectTraceStats(cmd.Context(), in, name)
			if err := interruptedError(cmd.Context(), name, readErr); err != nil {
				return err
			}
			if st == nil {
				return readErr
			}
			if asJSON {
				if err := writeJSON(e.stdout, st); err != nil {
					return err
				}
			} else {
				st.WriteText(e.stdout)
			}
			if readErr != nil {
				return &ExitError{Code: exitDamaged, Err: readErr}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")
	return cmd
}

// openTraceInput opens FILE, or standard input for "-".
func openTraceInput(e *env, path string) (io.Reader, string, func(), error) {
	if path == "-" {
		return ctxio.Interruptible(e.ctx, e.stdin), "(stdin)", func() {}, nil
	}
	f, err := openInput(path)
	if err != nil {
		return nil, "", nil, err
	}
	// A regular file is read as it is: reads of it end, the readers check
	// ctx between blocks, and it needs no buffer here (the reader buffers
	// small reads and reads blocks straight into its block buffers, one
	// copy instead of two). Anything else may block: read it through
	// ctxio.Interruptible so that a Ctrl-C stops the command.
	if ctxio.IsRegularFile(f) {
		return f, path, func() { f.Close() }, nil
	}
	return ctxio.Interruptible(e.ctx, f), path, func() { f.Close() }, nil
}

// collectTraceStats reads the whole trace (eventfmt.Summarize). It
// returns nil stats only when the header cannot be read; otherwise the
// stats of what was read and the error that stopped reading (nil at a
// clean end).
func collectTraceStats(ctx context.Context, in io.Reader, name string) (*eventfmt.Summary, error) {
	r, err := nettrace.NewReader(in)
	if err != nil {
		return nil, headerError(name, err)
	}
	return eventfmt.Summarize(ctx, r, name)
}

// headerError turns a NewReader failure into an actionable error: damaged
// headers and unsupported formats exit exitDamaged.
func headerError(name string, err error) error {
	if errors.Is(err, context.Canceled) { // a signal, through interruptible
		return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("%s: interrupted while reading the trace header", name)}
	}
	var fe *nettrace.FormatError
	if errors.As(err, &fe) {
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: cannot read the trace header: %w", name, err)}
	}
	if errors.Is(err, nettrace.ErrUnsupportedFormat) {
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w", name, err)}
	}
	return fmt.Errorf("%s: %w", name, err)
}
