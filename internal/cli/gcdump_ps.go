package cli

import "github.com/spf13/cobra"

func init() { registerGCDump(newGCDumpPSCmd) }

// newGCDumpPSCmd is 'clrdiag ps' under gcdump, as dotnet-gcdump ps.
func newGCDumpPSCmd(e *env) *cobra.Command {
	cmd := newPSCmd(e)
	cmd.Short = "List the .NET processes that can be diagnosed (same as 'clrdiag ps')"
	return cmd
}
