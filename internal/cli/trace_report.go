package cli

import (
	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/profile"
)

func newTraceReportCmd(e *env) *cobra.Command {
	var (
		top       int
		inclusive bool
		asJSON    bool
		pf        profileFlags
	)
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "Summarise a trace: hot methods, threads, GC, exceptions, lock contention",
		Long: "Read a nettrace file (\"-\" for standard input) and report the top methods by exclusive\n" +
			"(or --inclusive) sampled time, per-thread managed/external samples, garbage collections\n" +
			"(by generation and reason, pause times, allocations by type when allocation ticks were\n" +
			"collected), exceptions by type with their throw sites, and lock contention.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := readProfile(e, args[0], pf.config(false))
			if err != nil {
				return err
			}
			r := profile.BuildReport(p, profile.ReportConfig{Top: top, Inclusive: inclusive})
			if asJSON {
				return writeJSON(e.stdout, r)
			}
			return r.WriteText(e.stdout)
		},
	}
	cmd.Flags().IntVar(&top, "top", 20, "how many methods, types and sites to list")
	cmd.Flags().BoolVar(&inclusive, "inclusive", false, "order methods by inclusive time")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write JSON")
	pf.register(cmd)
	return cmd
}
