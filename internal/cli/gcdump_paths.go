package cli

import (
	"context"
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
			"and shows the chain of its first object, root first. A chain of objects of one type (a\n" +
			"linked list) is one step, however long, so a leak's list is one kind of path. At the same\n" +
			"depth a static field is preferred to a local variable, and both to a GC handle, as in\n" +
			"PerfView. NAME is a full type name (App.Cache.Entry, System.String[,]), or a unique suffix\n" +
			"or part of one (Entry). One breadth-first search: time and memory grow with the heap,\n" +
			"whatever its shape. Ctrl-C stops it.",
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
			p, err := gcdump.FindPaths(context.Background(), g, typeName, max)
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
	fl.IntVar(&max, "max", 10, "spell out at most N kinds of path (the largest; the others are counted)")
	fl.BoolVar(&asJSON, "json", false, "write JSON")
	return cmd
}
