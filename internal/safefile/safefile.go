package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrExists is matched (with errors.Is, as is fs.ErrExist) by the error
// Create and Prepare return for a path that already exists without
// Overwrite.
var ErrExists = fmt.Errorf("%w (give --force to replace it)", fs.ErrExist)

// Options says how to create a file. The zero value refuses an existing
// path and creates the file 0644 (less the umask).
type Options struct {
	// Overwrite removes an existing file or link at the path first.
	Overwrite bool
	// Private creates the file 0600: for traces, dumps and anything else
	// that may hold the target's secrets.
	Private bool
}

func (o Options) perm() fs.FileMode {
	if o.Private {
		return 0o600
	}
	return 0o644
}

// Create creates the file at path for reading and writing, following the
// package's rule. Errors are *fs.PathError values.
func Create(path string, opt Options) (*os.File, error) {
	if opt.Overwrite {
		// --force onto a device, a FIFO or a link to one (-o /dev/null,
		// /dev/stdout, a named pipe): write into it as a shell's > would.
		// Removing it instead would destroy /dev/null for a clrdiag run
		// as root.
		if f, ok, err := openSpecial(path); ok || err != nil {
			return f, err
		}
	}
	if err := Prepare(path, opt.Overwrite); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, opt.perm())
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, fs.ErrExist) {
			// Created by someone else since Prepare looked.
			return nil, &fs.PathError{Op: "create", Path: path, Err: ErrExists}
		}
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &fs.PathError{Op: "create", Path: path, Err: err}
	}
	if opt.Private {
		// The umask may only remove bits; make sure nothing else widened it.
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	return f, nil
}

// Prepare applies the rule to a path another process will create (a dump):
// it fails with ErrExists when something is there, or, with overwrite,
// removes it (a link itself, never its target; never a directory).
func Prepare(path string, overwrite bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !overwrite {
		return &fs.PathError{Op: "create", Path: path, Err: existsError(fi)}
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "create", Path: path, Err: errors.New("is a directory")}
	}
	if t := fi.Mode().Type(); t != 0 && t != fs.ModeSymlink {
		// A device, FIFO or socket is never removed: not even --force
		// may turn /dev/null into a file.
		return &fs.PathError{Op: "create", Path: path, Err: fmt.Errorf("not a regular file (%v), not replaced", t)}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// existsError says what is in the way.
func existsError(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("a symbolic link is in the way, not followed: %w", ErrExists)
	case fi.IsDir():
		return fmt.Errorf("a directory is in the way: %w", fs.ErrExist)
	}
	return ErrExists
}

// Seal checks a file another process wrote at path (a dump): it must be a
// regular file, not a link, and is set to mode 0600 through a descriptor
// opened without following links. It returns the file's information.
func Seal(path string) (fs.FileInfo, error) {
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "check", Path: path, Err: errors.New("a symbolic link replaced the file")}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		if isLoop(err) {
			return nil, &fs.PathError{Op: "check", Path: path, Err: errors.New("a symbolic link replaced the file")}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "check", Path: path, Err: fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
	}
	if fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return nil, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	return fi, nil
}

// openSpecial opens path for writing when it is, or links to, something
// other than a regular file or a directory: a character device, a FIFO or
// a terminal. ok is false when path is missing, a regular file, a
// directory, or a link to a regular file or to nothing (those follow the
// create rule: a planted link to a regular file is removed, never
// followed).
func openSpecial(path string) (f *os.File, ok bool, err error) {
	fi, err := os.Stat(path) // follows links: where would the bytes go?
	if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
		return nil, false, nil
	}
	if fi.Mode().Type()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe) == 0 {
		return nil, false, &fs.PathError{Op: "create", Path: path, Err: fmt.Errorf("not a regular file (%v), not replaced", fi.Mode().Type())}
	}
	f, err = os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, true, err
	}
	return f, true, nil
}
