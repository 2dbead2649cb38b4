package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register("version", newVersionCmd) }

// versionString is the version 'clrdiag --version' and 'clrdiag version'
// print: the module version, then the VCS revision, its time and whether
// the tree had local changes, as the Go toolchain stamped them.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module information)"
	}
	return formatVersion(bi)
}

// formatVersion formats the parts of bi that identify a build.
func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var extra []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified {
			rev += "-modified"
		}
		extra = append(extra, "commit "+rev)
	}
	if when != "" {
		extra = append(extra, when)
	}
	goVer := bi.GoVersion
	if goVer == "" {
		goVer = runtime.Version()
	}
	extra = append(extra, goVer+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return v + " (" + strings.Join(extra, ", ") + ")"
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the clrdiag version (as --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(e.stdout, "clrdiag %s\n", versionString())
			return nil
		},
	}
}
