package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
)

func init() { registerGCDump("diff", newGCDumpDiffCmd) }

func newGCDumpDiffCmd(e *env) *cobra.Command {
	var top int
	var sort string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff BEFORE AFTER",
		Short: "What grew between two snapshots, per type",
		Long: "Compare two heap snapshots of a process type by type and list the types whose objects\n" +
			"or retained size changed, with their before and after values, the largest growth in bytes\n" +
			"first: the types a leak piles up, and (Retained Delta) the types that hold it. A warning\n" +
			"says when the snapshots are of different processes or runtimes, or AFTER was taken first.\n" +
			"Then ask 'clrdiag gcdump paths AFTER --type NAME' what holds them.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if top < 0 {
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--top %d: use 0 for all types or a positive number", top)}
			}
			switch sort {
			case gcdump.SortSize, gcdump.SortCount, gcdump.SortRetained:
			default:
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--sort %q: use size, count or retained", sort)}
			}
			var reports [2]*gcdump.Report
			var graphs [2]*gcdump.Graph
			for i, path := range args {
				g, err := loadGraph(e, path)
				if err != nil {
					return err
				}
				d, err := computeDominators(cmd.Context(), g)
				if err != nil {
					return err
				}
				if reports[i], err = gcdump.BuildReport(g, d, gcdump.ReportConfig{}); err != nil {
					return err
				}
				graphs[i] = g
			}
			diff := gcdump.DiffReports(reports[0], reports[1], sort)
			diff.Warnings = gcdump.SnapshotWarnings(graphs[0], graphs[1])
			if asJSON {
				for _, w := range diff.Warnings {
					fmt.Fprintf(e.stderr, "warning: %s\n", w)
				}
				if top > 0 && len(diff.Types) > top {
					diff.Types = diff.Types[:top]
				}
				if diff.Types == nil {
					diff.Types = []gcdump.TypeDiff{}
				}
				return writeJSON(e.stdout, diff)
			}
			return diff.WriteText(e.stdout, top)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&top, "top", 20, "list only the first N types (0: all)")
	fl.StringVar(&sort, "sort", gcdump.SortSize, "order: size (change in bytes), count, or retained (change in retained bytes)")
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	return cmd
}
