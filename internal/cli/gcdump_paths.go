package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
)

func init() { registerGCDump("paths", newGCDumpPathsCmd) }

func newGCDumpPathsCmd(e *env) *cobra.Command {
	src := gcdumpSource{tf: e.sessionTargetFlags(nil)}
	var typeName string
	var max int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "paths [FILE|-p PID] --type NAME",
		Short: "What keeps the objects of a type alive: shortest paths from the roots",
		Long: "For every object of the type, find its shortest chain of references from a root, and\n" +
			"group the objects by the types along their chains: each group says which kind of root holds\n" +
			"it (a static field, a local variable of a running method, a GC handle, the finalizer queue)\n" +
			"and shows the chain of its first object, root first. NAME is a full type name\n" +
			"(App.Cache.Entry), or a unique suffix or part of one (Entry).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if typeName == "" {
				return &ExitError{Code: exitUsage, Err: errors.New("--type NAME is required (see the names with 'clrdiag gcdump report')")}
			}
			if max < 0 {
				return &ExitError{Code: exitUsage, Err: fmt.Errorf("--max %d must be positive", max)}
			}
			g, err := src.load(cmd, e, args)
			if err != nil {
				return err
			}
			p, err := gcdump.FindPaths(g, typeName, max)
			if err != nil {
				return &ExitError{Code: exitFailure, Err: err}
			}
			if asJSON {
				if p.Paths == nil {
					p.Paths = []gcdump.Path{}
				}
				return writeJSON(e.stdout, p)
			}
			return p.WriteText(e.stdout)
		},
	}
	src.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&typeName, "type", "", "the type whose objects to explain")
	fl.IntVar(&max, "max", 10, "show at most N kinds of path")
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	return cmd
}
