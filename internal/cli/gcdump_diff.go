package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
)

func init() { registerGCDump("diff", newGCDumpDiffCmd) }

func newGCDumpDiffCmd(e *env) *cobra.Command {
	var top int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff BEFORE AFTER",
		Short: "What grew between two snapshots, per type",
		Long: "Compare two heap snapshots of a process type by type and list the types whose objects\n" +
			"changed, the largest growth in bytes first: the types a leak piles up. Then ask\n" +
			"'clrdiag gcdump paths AFTER --type NAME' what holds them.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if top < 0 {
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--top %d: use 0 for all types or a positive number", top)}
			}
			before, err := loadGraph(e, args[0])
			if err != nil {
				return err
			}
			after, err := loadGraph(e, args[1])
			if err != nil {
				return err
			}
			d := gcdump.DiffGraphs(before, after)
			if asJSON {
				if top > 0 && len(d.Types) > top {
					d.Types = d.Types[:top]
				}
				if d.Types == nil {
					d.Types = []gcdump.TypeDiff{}
				}
				return writeJSON(e.stdout, d)
			}
			return d.WriteText(e.stdout, top)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&top, "top", 20, "list only the first N types (0: all)")
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	return cmd
}
