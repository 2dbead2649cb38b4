package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dumpPlace is where a dump will be written, as the target sees it and as
// clrdiag can reach it.
type dumpPlace struct {
	// Path is the absolute path the runtime is given (in the target's
	// file system).
	Path string
	// Local is the same file as clrdiag reaches it: Path itself, or
	// /proc/PID/root/Path for a target in another mount namespace; "" when
	// clrdiag cannot reach the target's file system.
	Local string
	// OtherNamespace is set when the target runs in another mount
	// namespace (a container): Path is resolved in its file system.
	OtherNamespace bool
}

// locateDump finds where clrdiag can see the file the target will write at
// abs. pid 0 (a --diagnostic-port target) is taken to share our files.
func locateDump(pid int, abs string, proc procFS) dumpPlace {
	p := dumpPlace{Path: abs, Local: abs}
	if pid == 0 {
		return p
	}
	self, err1 := os.Readlink(filepath.Join(proc.root, "self", "ns", "mnt"))
	other, err2 := os.Readlink(filepath.Join(proc.root, strconv.Itoa(pid), "ns", "mnt"))
	if err1 != nil || err2 != nil || self == other {
		return p
	}
	p.OtherNamespace = true
	root := filepath.Join(proc.root, strconv.Itoa(pid), "root")
	if _, err := os.Stat(root + string(filepath.Separator)); err != nil {
		p.Local = ""
		return p
	}
	p.Local = filepath.Join(root, abs)
	return p
}

// checkDumpDir checks, before anything is asked of the runtime, what makes
// createdump fail with a bare E_FAIL: a directory that does not exist, is
// not a directory, or is not writable by the target's user (uid and groups
// from /proc/PID/status). It returns a local I/O error (exitIO), or nil when the
// directory looks right or cannot be inspected.
func checkDumpDir(pid int, p dumpPlace, proc procFS) error {
	if p.Local == "" {
		return nil
	}
	where := ""
	if p.OtherNamespace {
		where = " in the target's file system (it runs in another mount namespace)"
	}
	dir := filepath.Dir(p.Path)
	st, err := os.Stat(filepath.Dir(p.Local))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ioError(fmt.Errorf("-o %s: the directory %s does not exist%s; the runtime writes the dump there and creates no directory", p.Path, dir, where))
	case err != nil:
		return nil // e.g. permission denied for clrdiag: the target may do better
	case !st.IsDir():
		return ioError(fmt.Errorf("-o %s: %s is not a directory%s", p.Path, dir, where))
	}
	if pid == 0 {
		return nil
	}
	id, ok := readIDs(pid, proc)
	if !ok || id.uid == 0 {
		return nil
	}
	owner, group, ok := fileOwner(st)
	if !ok {
		return nil
	}
	perm := st.Mode().Perm()
	var writable bool
	switch {
	case owner == id.uid:
		writable = perm&0o200 != 0 && perm&0o100 != 0
	case id.inGroup(group):
		writable = perm&0o020 != 0 && perm&0o010 != 0
	default:
		writable = perm&0o002 != 0 && perm&0o001 != 0
	}
	if !writable {
		return ioError(fmt.Errorf("-o %s: the directory %s%s is not writable by the target's user (uid %d): the runtime writes the dump as that user; choose a directory it can write (e.g. its working directory or /tmp)",
			p.Path, dir, where, id.uid))
	}
	return nil
}

// procIDs are the effective ids of a process.
type procIDs struct {
	uid, gid uint32
	groups   []uint32
}

func (p procIDs) inGroup(g uint32) bool {
	if p.gid == g {
		return true
	}
	for _, x := range p.groups {
		if x == g {
			return true
		}
	}
	return false
}

// readIDs parses the effective uid and gid and the supplementary groups of
// /proc/PID/status.
func readIDs(pid int, proc procFS) (procIDs, bool) {
	b, err := proc.read(pid, "status")
	if err != nil {
		return procIDs{}, false
	}
	var id procIDs
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
				id.uid, haveUID = uint32(n), true
			} else {
				id.gid, haveGID = uint32(n), true
			}
		case "Groups":
			for _, s := range f {
				if n, err := strconv.ParseUint(s, 10, 32); err == nil {
					id.groups = append(id.groups, uint32(n))
				}
			}
		}
	}
	return id, haveUID && haveGID
}
