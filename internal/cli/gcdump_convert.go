package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/weighted"
)

func init() { registerGCDump("convert", newGCDumpConvertCmd) }

// gcdumpFormat finds a format of package weighted that fits a heap (see
// gcdumpFormats).
func gcdumpFormat(name string) (weighted.Format, error) {
	var names []string
	for _, f := range weighted.Formats() {
		if f.TimeOnly {
			continue
		}
		if strings.EqualFold(f.Name, name) {
			return f, nil
		}
		names = append(names, f.Name)
	}
	return weighted.Format{}, usageErrorf("--format %q: use %s", name, strings.Join(names, ", "))
}

// gcdumpFormats are the formats of package weighted that fit a heap, those
// that do not draw only time (a heap has no time order), for the help and
// completion: the ones that draw no time first, then the others.
func gcdumpFormats() []weighted.Format {
	var fs []weighted.Format
	for _, f := range weighted.Formats() {
		if !f.TimeOnly {
			fs = append(fs, f)
		}
	}
	slices.SortStableFunc(fs, func(a, b weighted.Format) int {
		switch {
		case a.Timeline == b.Timeline:
			return 0
		case a.Timeline:
			return 1
		}
		return -1
	})
	return fs
}

// gcdumpFormatText joins the names (or, with suffixes, the suffixes) of
// gcdumpFormats with sep, and the last two with last when it is set.
func gcdumpFormatText(sep, last string, suffixes bool) string {
	var names []string
	for _, f := range gcdumpFormats() {
		if suffixes {
			names = append(names, f.Suffix)
		} else {
			names = append(names, f.Name)
		}
	}
	if last != "" && len(names) > 1 {
		return strings.Join(names[:len(names)-1], sep) + last + names[len(names)-1]
	}
	return strings.Join(names, sep)
}

func newGCDumpConvertCmd(e *env) *cobra.Command {
	var force bool
	src := gcdumpSource{tf: e.sessionTargetFlags(&force)}
	var format, output string
	var depth int
	cmd := &cobra.Command{
		Use:   "convert [FILE|-p PID] --format " + gcdumpFormatText("|", "", false),
		Short: "The heap as a flame graph (" + gcdumpFormatText(", ", "", false) + ")",
		Long: "Write the heap as weighted stacks: each object weighs its size, on the path of the\n" +
			"dominator tree from the kind of root that holds it down to its type, so a flame graph shows\n" +
			"where memory is held. Runs of one type (linked lists) are one frame. An object held by several\n" +
			"kinds of roots is shown under the first of static fields, local variables, COM wrappers and\n" +
			"GC handles that reaches it, as PerfView does, below an \"[also held by other roots]\" frame\n" +
			"(on .NET Core 3.1 the pinned array of statics holds what static fields hold). pprof output\n" +
			"has the sample types inuse_space (bytes) and inuse_objects: go tool pprof -top FILE.pb.gz.\n" +
			"The default output is\n" +
			"FILE with the format's extension (" + gcdumpFormatText(", ", "", true) + "); - is standard output.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ft, err := gcdumpFormat(format)
			if err != nil {
				return err
			}
			ext := ft.Suffix
			if depth < 0 {
				return &ExitError{Code: exitUsage, Err: errors.New("--max-depth must be positive")}
			}
			out := output
			if out == "" {
				base := "heap"
				if len(args) == 1 && args[0] != "-" {
					base = strings.TrimSuffix(strings.TrimSuffix(args[0], filepath.Ext(args[0])), ".gcdump")
				}
				out = base + ext
			}
			if err := checkOutput(out, force); err != nil {
				return err
			}
			g, err := src.load(cmd, e, args)
			if err != nil {
				return err
			}
			d, err := computeDominators(cmd.Context(), g)
			if err != nil {
				return err
			}
			f := gcdump.BuildFlame(g, d, gcdump.FlameConfig{MaxDepth: depth})
			name := "heap"
			if len(args) == 1 {
				name = filepath.Base(args[0])
			}
			n, err := writeOutput(e, out, false, force, func(w io.Writer) error { return ft.Write(w, f.Weighted(name)) })
			if err != nil {
				return err
			}
			if out != "-" {
				fmt.Fprintf(e.stderr, "Wrote %s (%s bytes): %s objects, %s bytes of heap in %s stacks.\n", out, groupInt(n),
					groupInt(f.Objects), groupInt(int64(f.Bytes)), groupInt(int64(len(f.Stacks))))
			}
			if note := f.ChosenNote(); note != "" {
				fmt.Fprintf(e.stderr, "Note: %s.\n", note)
			}
			return nil
		},
	}
	src.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "", gcdumpFormatText(", ", " or ", false))
	fl.StringVarP(&output, "output", "o", "", "output file (default FILE with the format's extension; - for standard output)")
	cmd.Flags().BoolVar(&force, "force", false, forceSessionUsage)
	fl.IntVar(&depth, "max-depth", 64, "frames kept on a stack; deeper paths keep their top and the object's type")
	return cmd
}
