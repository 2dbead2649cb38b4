package procstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// IDs are the effective user and group ids of a process and its
// supplementary groups.
type IDs struct {
	UID, GID uint32
	Groups   []uint32
}

// InGroup reports whether g is the process's group or one of its
// supplementary groups.
func (id IDs) InGroup(g uint32) bool {
	if id.GID == g {
		return true
	}
	for _, x := range id.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// IDs parses the effective uid and gid and the supplementary groups of
// /proc/PID/status; ok is false when they cannot be read.
func (p FS) IDs(pid int) (id IDs, ok bool) {
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "status"))
	if err != nil {
		return IDs{}, false
	}
	var haveUID, haveGID bool
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch k {
		case "Uid", "Gid":
			if len(f) < 2 {
				continue
			}
			n, err := strconv.ParseUint(f[1], 10, 32) // effective
			if err != nil {
				continue
			}
			if k == "Uid" {
				id.UID, haveUID = uint32(n), true
			} else {
				id.GID, haveGID = uint32(n), true
			}
		case "Groups":
			for _, s := range f {
				if n, err := strconv.ParseUint(s, 10, 32); err == nil {
					id.Groups = append(id.Groups, uint32(n))
				}
			}
		}
	}
	return id, haveUID && haveGID
}

// Place is where a file that a process writes lands, as the process sees
// it and as this process can reach it.
type Place struct {
	// Path is the absolute path the process is given (in its file
	// system).
	Path string
	// Local is the same file as this process reaches it: Path itself, or
	// /proc/PID/root/Path for a process in another mount namespace; ""
	// when the process's file system cannot be reached.
	Local string
	// OtherNamespace is set when the process runs in another mount
	// namespace (a container): Path is resolved in its file system.
	OtherNamespace bool
}

// Locate finds where this process can see the file that process pid will
// write at abs. pid 0 (a process reached through a diagnostic port, whose
// pid is unknown) is taken to share this process's files.
func (p FS) Locate(pid int, abs string) Place {
	pl := Place{Path: abs, Local: abs}
	if pid == 0 {
		return pl
	}
	self, err1 := os.Readlink(filepath.Join(p.root(), "self", "ns", "mnt"))
	other, err2 := os.Readlink(filepath.Join(p.root(), strconv.Itoa(pid), "ns", "mnt"))
	if err1 != nil || err2 != nil || self == other {
		return pl
	}
	pl.OtherNamespace = true
	root := filepath.Join(p.root(), strconv.Itoa(pid), "root")
	if _, err := os.Stat(root + string(filepath.Separator)); err != nil {
		pl.Local = ""
		return pl
	}
	pl.Local = filepath.Join(root, abs)
	return pl
}

// DirProblem is why a process cannot create a file in a directory.
type DirProblem uint8

const (
	// DirMissing: the directory does not exist.
	DirMissing DirProblem = iota + 1
	// DirNotDirectory: the path's parent is not a directory.
	DirNotDirectory
	// DirNotWritable: the process's user may not create files in it.
	DirNotWritable
)

// DirError says that a process cannot create the file at Place.Path.
type DirError struct {
	Problem DirProblem
	Place   Place
	// UID is the process's effective uid (DirNotWritable).
	UID uint32
}

func (e *DirError) Error() string {
	dir := filepath.Dir(e.Place.Path)
	where := ""
	if e.Place.OtherNamespace {
		where = " in the process's file system (another mount namespace)"
	}
	switch e.Problem {
	case DirMissing:
		return fmt.Sprintf("the directory %s does not exist%s", dir, where)
	case DirNotDirectory:
		return fmt.Sprintf("%s is not a directory%s", dir, where)
	}
	return fmt.Sprintf("the directory %s%s is not writable by the process's user (uid %d)", dir, where, e.UID)
}

// CheckDir checks what makes a process fail to create the file at pl.Path
// (a runtime writing a dump answers a bare E_FAIL): a directory that does
// not exist, is not a directory, or is not writable by process pid's user
// (uid and groups from /proc/PID/status). It returns a *DirError, or nil
// when the directory looks right or cannot be inspected (from here: the
// process may do better).
func (p FS) CheckDir(pid int, pl Place) error {
	if pl.Local == "" {
		return nil
	}
	st, err := os.Stat(filepath.Dir(pl.Local))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &DirError{Problem: DirMissing, Place: pl}
	case err != nil:
		return nil // e.g. permission denied for us: the process may do better
	case !st.IsDir():
		return &DirError{Problem: DirNotDirectory, Place: pl}
	}
	if pid == 0 {
		return nil
	}
	id, ok := p.IDs(pid)
	if !ok || id.UID == 0 {
		return nil
	}
	owner, group, ok := fileOwner(st)
	if !ok {
		return nil
	}
	perm := st.Mode().Perm()
	var writable bool
	switch {
	case owner == id.UID:
		writable = perm&0o200 != 0 && perm&0o100 != 0
	case id.InGroup(group):
		writable = perm&0o020 != 0 && perm&0o010 != 0
	default:
		writable = perm&0o002 != 0 && perm&0o001 != 0
	}
	if !writable {
		return &DirError{Problem: DirNotWritable, Place: pl, UID: id.UID}
	}
	return nil
}
