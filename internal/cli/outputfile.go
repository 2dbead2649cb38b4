package cli

import (
	"strings"
	"unicode"

	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/spf13/cobra"
)

// The output-file rule of every command (see package safefile): an existing
// path is refused unless --force, which replaces it (a link is removed, never
// followed); traces, dumps and recordings are created 0600.

// forceUsage is the help of --force, the same on every command that writes
// a file.
const forceUsage = "replace an existing output file (without it an existing file or link is refused; a link is removed, never followed)"

// addForceFlag registers --force on cmd.
func addForceFlag(cmd *cobra.Command, force *bool) {
	cmd.Flags().BoolVar(force, "force", false, forceUsage)
}

// checkOutput fails early, before a session starts, when path exists and
// force is not set. It changes nothing.
func checkOutput(path string, force bool) error {
	if force || path == "-" {
		return nil
	}
	return safefile.Prepare(path, false)
}

// safeName makes text from the target (its process name) usable as part of
// a file name: path separators, control characters and leading dots become
// underscores.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
	if strings.HasPrefix(s, ".") {
		s = "_" + s[1:]
	}
	return s
}
