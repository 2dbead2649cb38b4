package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/clrdiag/clrdiag/internal/procstate"
)

// locateDump finds where clrdiag can see the file the target will write at
// abs (procstate.FS.Locate). pid 0 (a --diagnostic-port target) is taken to
// share our files.
func locateDump(pid int, abs string, proc procFS) procstate.Place {
	return procstate.FS{Root: proc.root}.Locate(pid, abs)
}

// checkDumpDir checks, before anything is asked of the runtime, what makes
// createdump fail with a bare E_FAIL (procstate.FS.CheckDir): a directory
// that does not exist, is not a directory, or is not writable by the
// target's user. It returns a local I/O error (exitIO), or nil when the
// directory looks right or cannot be inspected.
func checkDumpDir(pid int, p procstate.Place, proc procFS) error {
	var de *procstate.DirError
	if !errors.As(procstate.FS{Root: proc.root}.CheckDir(pid, p), &de) {
		return nil
	}
	where := ""
	if p.OtherNamespace {
		where = " in the target's file system (it runs in another mount namespace)"
	}
	dir := filepath.Dir(p.Path)
	switch de.Problem {
	case procstate.DirMissing:
		return ioError(fmt.Errorf("-o %s: the directory %s does not exist%s; the runtime writes the dump there and creates no directory", p.Path, dir, where))
	case procstate.DirNotDirectory:
		return ioError(fmt.Errorf("-o %s: %s is not a directory%s", p.Path, dir, where))
	}
	return ioError(fmt.Errorf("-o %s: the directory %s%s is not writable by the target's user (uid %d): the runtime writes the dump as that user; choose a directory it can write (e.g. its working directory or /tmp)",
		p.Path, dir, where, de.UID))
}
