package cli

import "github.com/spf13/cobra"

// The trace command groups the trace subcommands. Each lives in its own
// file (trace_collect.go, trace_stream.go, trace_stats.go, trace_events.go,
// trace_convert.go, trace_report.go, ...) and adds itself with
//
//	func init() { registerTrace("xxx", newTraceXxxCmd) }
func init() { register("trace", newTraceCmd) }

// traceCommands are the trace subcommand constructors, filled by init
// functions and never changed after program start.
var traceCommands []command

func registerTrace(name string, f func(*env) *cobra.Command) {
	traceCommands = append(traceCommands, command{name, f})
}

func newTraceCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Collect EventPipe traces and look into nettrace files",
		Long: "Collect EventPipe traces from a running .NET process (collect, stream) and read\n" +
			"nettrace/netperf files (stats, events, convert, report).",
	}
	for _, c := range reachable(traceCommands, e.argsAfter("trace")) {
		cmd.AddCommand(c.build(e))
	}
	return cmd
}
