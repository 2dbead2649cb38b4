package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the clrdiag version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v = bi.Main.Version
			}
			fmt.Fprintf(e.stdout, "clrdiag %s\n", v)
			return nil
		},
	}
}
