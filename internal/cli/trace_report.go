package cli

import (
	"fmt"
	"strings"

	"github.com/clrdiag/clrdiag/profile"
	"github.com/spf13/cobra"
)

func newTraceReportCmd(e *env) *cobra.Command {
	var (
		top            int
		inclusive      bool
		includeWaiting bool
		asJSON         bool
		pf             profileFlags
	)
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "Summarise a trace: hot methods, threads, GC, exceptions, lock contention",
		Long: "Read a nettrace file (\"-\" for standard input) and report where it came from (process,\n" +
			".NET version, dropped events), the top methods by exclusive (or --inclusive) sampled time,\n" +
			"per-thread managed/external samples and which threads only waited, garbage collections\n" +
			"(by generation and reason, pause times, allocations by type when allocation ticks were\n" +
			"collected), exceptions by type with their throw sites, and lock contention.\n\n" +
			"--sample picks what the method table weighs:\n" + sampleHelp() +
			"wall (the default) ranks by every sample of the threads that ran: a thread that waited\n" +
			"the whole trace (blocked in Console.ReadLine, a lock, a Join: its stack never changed)\n" +
			"is left out of the ranking and listed under \"Waiting the whole trace\", so time blocked\n" +
			"never ranks above work (pprof's default sample type, wall_ran, weighs the same);\n" +
			"--include-waiting ranks every thread's samples, the waiting threads' methods marked\n" +
			"(waiting) and, at equal time, after work that ran. cpu ranks by Managed samples only\n" +
			"(running managed code); alloc, contention and exceptions rank the allocating, waiting\n" +
			"and throwing methods (exclusive) and their callers (inclusive).\n" +
			"Notes say when the numbers need care (for example .NET Core 3.x labels most samples External).",
		Example: "  clrdiag trace report app.nettrace --top 10\n" +
			"  clrdiag trace report app.nettrace topN -n 5 --inclusive   # dotnet-trace's spelling\n" +
			"  clrdiag trace report app.nettrace --sample alloc --top 10",
		Args: reportArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && !cmd.Flags().Changed("top") && !cmd.Flags().Changed("number") && !cmd.Flags().Changed("topN") {
				top = 5 // dotnet-trace report topN's default
			}
			measure, err := pf.measure()
			if err != nil {
				return err
			}
			p, readErr := readProfile(e, args[0], pf.config(false))
			if p == nil {
				return readErr
			}
			r := profile.BuildReport(p, profile.ReportConfig{Top: top, Inclusive: inclusive, Measure: measure, IncludeWaiting: includeWaiting})
			if asJSON {
				err = writeJSON(e.stdout, r)
			} else {
				err = r.WriteText(e.stdout)
			}
			if err != nil {
				return err
			}
			return readErr
		},
	}
	cmd.Flags().IntVar(&top, "top", 20, "how many methods, types and sites to list (-n, --number: dotnet-trace's names)")
	cmd.Flags().IntVarP(&top, "number", "n", 20, "alias of --top (dotnet-trace report topN -n)")
	cmd.Flags().IntVar(&top, "topN", 20, "alias of --top")
	_ = cmd.Flags().MarkHidden("number")
	_ = cmd.Flags().MarkHidden("topN")
	cmd.Flags().BoolVar(&inclusive, "inclusive", false, "order methods by inclusive time")
	cmd.Flags().BoolVar(&includeWaiting, "include-waiting", false,
		"rank wall time over every thread, those that waited the whole trace too (default: over the threads that ran)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write JSON")
	pf.register(cmd)
	return cmd
}

// reportArgs accepts FILE, or dotnet-trace's "FILE topN".
func reportArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 2 && strings.EqualFold(args[1], "topN") {
		return nil
	}
	if len(args) == 2 {
		return fmt.Errorf("unexpected argument %q: the only word accepted after FILE is topN (dotnet-trace's report topN)", args[1])
	}
	return cobra.ExactArgs(1)(cmd, args)
}
