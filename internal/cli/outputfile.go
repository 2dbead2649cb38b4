package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// forceSessionUsage is the help of --force on a command that writes a file
// and opens a session.
const forceSessionUsage = forceUsage + "; also " + stoppedForceUsage

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

// outputPlan is a command's -o, checked before anything is asked of the
// target: a file to write, standard output ("-"), or a directory the
// default name goes into (-o DIR, or no -o: the working directory).
type outputPlan struct {
	path  string // the file; "" until named (dir holds the default name)
	dir   string // the directory of the default name when path is ""
	force bool
}

// planOutput checks -o (o; "" for the default name in the working
// directory) the way every command does, before the target is touched:
// an existing directory receives the command's default name (as the
// dotnet tools do); otherwise the file's directory must exist and be
// writable, and the file must not exist unless force. Its errors exit
// exitIO.
func planOutput(o string, force bool) (outputPlan, error) {
	p := outputPlan{force: force}
	switch {
	case o == "-":
		p.path = o
		return p, nil
	case o == "":
		p.dir = "."
	default:
		if st, err := os.Stat(o); err == nil && st.IsDir() {
			p.dir = o
		} else {
			p.path = o
		}
	}
	dir := p.dir
	if p.path != "" {
		dir = filepath.Dir(p.path)
	}
	if err := writableDir(dir); err != nil {
		return p, ioError(fmt.Errorf("-o %s: %w", cmp.Or(o, "."), err))
	}
	if p.path != "" {
		if err := checkOutput(p.path, force); err != nil {
			return p, ioError(err)
		}
	}
	return p, nil
}

// isDir reports whether path is an existing directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// named reports whether -o named the file (not a directory).
func (p outputPlan) named() bool { return p.path != "" }

// name returns the file to write: the one -o named, or def (a base name)
// in the directory; a default name is checked here, once it is known.
func (p outputPlan) name(def string) (string, error) {
	if p.path != "" {
		return p.path, nil
	}
	path := filepath.Join(p.dir, def)
	if err := checkOutput(path, p.force); err != nil {
		return "", ioError(err)
	}
	return path, nil
}

// writableDir checks that files can be created in dir: it exists, is a
// directory and takes a new file (created and removed at once, which also
// finds a read-only file system).
func writableDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist (clrdiag creates no directory)", dir)
	case err != nil:
		return fmt.Errorf("the directory %s cannot be used: %w", dir, unwrapPath(err))
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".clrdiag-probe-*")
	if err != nil {
		return fmt.Errorf("no file can be created in %s: %w", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// unwrapPath returns the cause of a *fs.PathError (whose text repeats the
// path a message names already), or err.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
