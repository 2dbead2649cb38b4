package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
	"github.com/spf13/cobra"
)

func init() { registerTrace("events", newTraceEventsCmd) }

func newTraceEventsCmd(e *env) *cobra.Command {
	var (
		asJSON    bool
		providers []string
		events    []string
		limit     int
	)
	cmd := &cobra.Command{
		Use:   "events FILE",
		Short: "Print the events of a nettrace/netperf file, one per line, with decoded payloads",
		Long: "Print the events of a trace file (or standard input with -), one per line: time,\n" +
			"provider, event name and id, thread and the decoded payload fields. Self-describing\n" +
			"events (EventSource, EventCounters, TraceLogging) are decoded with the trace's own\n" +
			"field metadata; the runtime's own events (Microsoft-Windows-DotNETRuntime, its\n" +
			"Rundown, Private and Stress providers, the SampleProfiler) carry none, and are\n" +
			"named and decoded from clrdiag's copy of the runtime manifest (GCStart,\n" +
			"MethodDCEndVerbose, ExceptionThrown...). Addresses, ids and flags print in\n" +
			"hexadecimal (JSON strings \"0x...\"). An event nobody knows prints as Event(N)\n" +
			"with its raw payload in hexadecimal (--json: payloadRaw).\n\n" +
			"--provider and --event may be repeated; --event takes an id, a name (GCStart,\n" +
			"ExceptionThrown_V1) or a Task/Opcode name as TraceEvent and dotnet-trace write\n" +
			"them (GC/Start, Method/JittingStarted). When the filters match no event, the\n" +
			"command says on stderr which providers and events the trace does have and exits\n" +
			"with status 1 (as grep does). A damaged or truncated trace prints every complete\n" +
			"event, then exits with status 5.",
		Example: "  clrdiag trace events app.nettrace --provider System.Runtime --event EventCounters\n" +
			"  clrdiag trace events app.nettrace --provider Microsoft-Windows-DotNETRuntime --event GCStart\n" +
			"  clrdiag trace events - --json --limit 100 < app.nettrace",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErrorf("--limit must be 0 (no limit) or more, got %d", limit)
			}
			filter, err := eventfmt.NewFilter(providers, events)
			if err != nil {
				return usageError(err)
			}
			in, name, closeIn, err := openTraceInput(e, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			r, err := nettrace.NewReader(in)
			if err != nil {
				return headerError(name, err)
			}
			return printEvents(cmd.Context(), e.stdout, r, filter, limit, asJSON, args[0] == "-", name)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per line")
	fl.StringArrayVar(&providers, "provider", nil, "only events of this provider (repeatable, case-insensitive)")
	fl.StringArrayVar(&events, "event", nil, "only events with this id or name (repeatable)")
	fl.IntVar(&limit, "limit", 0, "stop after this many events (0: no limit)")
	return cmd
}

// printEvents prints the events of r that f selects (eventfmt.Print)
// and turns its errors into the command's exit statuses.
func printEvents(ctx context.Context, out io.Writer, r *nettrace.Reader, f *eventfmt.Filter, limit int, asJSON, stream bool, name string) error {
	printed, err := eventfmt.Print(ctx, out, r, f, eventfmt.Options{JSON: asJSON, Limit: limit, Live: stream}, name)
	switch e := err.(type) {
	case *eventfmt.NoMatchError:
		return &ExitError{Code: exitFailure, Err: e}
	case *eventfmt.ReadError:
		if ierr := interruptedError(ctx, name, e.Err); ierr != nil {
			return ierr
		}
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%s: %w (%d matching events before the damage were printed)", name, e.Err, printed)}
	}
	return err
}

// loggingProvider is the EventSource of Microsoft.Extensions.Logging's
// EventSourceLogger (ILogger messages in a trace).
const loggingProvider = logs.Provider
