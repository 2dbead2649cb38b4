package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
)

func init() { registerGCDump("report", newGCDumpReportCmd) }

func newGCDumpReportCmd(e *env) *cobra.Command {
	reportType := heapstat
	src := gcdumpSource{tf: e.sessionTargetFlags(nil), reportType: &reportType}
	var cfg gcdump.ReportConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report [FILE|-p PID]",
		Short: "Objects per type: count, size and retained size",
		Long: "Summarise a heap snapshot per type, as dotnet-gcdump report does, with the retained\n" +
			"(dominated) size of each type: the memory that would be freed if nothing referred to the\n" +
			"objects of that type any more, counting only what nothing else keeps alive. FILE is a\n" +
			".gcdump (from clrdiag, dotnet-gcdump, PerfView or Visual Studio) or a .nettrace of a heap\n" +
			"snapshot session; -p/-n/--diagnostic-port takes a snapshot of a live process instead.\n" +
			"--json writes {types:[{name,count,size,retainedSize}], totalSize, objects, roots}.\n" +
			"-t is --timeout here (with -p); dotnet-gcdump's -t heapstat (--report-type) is accepted.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch cfg.Sort {
			case gcdump.SortSize, gcdump.SortCount, gcdump.SortRetained:
			default:
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--sort %q: use size, count or retained", cfg.Sort)}
			}
			if cfg.Top < 0 {
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--top %d: use 0 for all types or a positive number", cfg.Top)}
			}
			g, err := src.load(cmd, e, args)
			if err != nil {
				return err
			}
			d, err := computeDominators(cmd.Context(), g)
			if err != nil {
				return err
			}
			r, err := gcdump.BuildReport(g, d, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				if r.Types == nil {
					r.Types = []gcdump.TypeStat{}
				}
				return writeJSON(e.stdout, r)
			}
			return r.WriteText(e.stdout)
		},
	}
	src.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&cfg.Top, "top", 0, "list only the first N types (0: all)")
	fl.StringVar(&cfg.Sort, "sort", gcdump.SortSize, "order: size, count or retained")
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	return cmd
}
