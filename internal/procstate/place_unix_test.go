//go:build unix

package procstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// fakeTree makes a /proc tree of the given files (paths below its root).
func fakeTree(t *testing.T, files map[string]string) FS {
	t.Helper()
	fs := FS{Root: t.TempDir()}
	for rel, content := range files {
		p := filepath.Join(fs.Root, rel)
		if os.MkdirAll(filepath.Dir(p), 0o755) != nil || os.WriteFile(p, []byte(content), 0o644) != nil {
			t.Fatalf("cannot write %s", p)
		}
	}
	return fs
}

func statusOf(uid, gid uint32, groups string) string {
	return fmt.Sprintf("Name:\tapp\nUid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nGroups:\t%s\n", uid, uid, uid, uid, gid, gid, gid, gid, groups)
}

// TestCheckDirWritable: the directory must be writable by the process's
// user (owner, group or other bits, by the ids of /proc/PID/status); a
// root process and unreadable ids are not judged.
func TestCheckDirWritable(t *testing.T) {
	dir := t.TempDir()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	owner, group := st.Sys().(*syscall.Stat_t).Uid, st.Sys().(*syscall.Stat_t).Gid
	if owner == 0 {
		// Run as root: give the directory to someone else, since a root
		// process is not judged.
		owner, group = 4242, 4343
		if err := os.Chown(dir, int(owner), int(group)); err != nil {
			t.Fatal(err)
		}
	}
	other := owner + 1000
	path := filepath.Join(dir, "core")
	for _, c := range []struct {
		name   string
		mode   os.FileMode
		status string
		want   bool // writable
	}{
		{"other user, 0755", 0o755, statusOf(other, other, strconv.Itoa(int(other))), false},
		{"other user, 0777", 0o777, statusOf(other, other, ""), true},
		{"owner, 0700", 0o700, statusOf(owner, 0, ""), true},
		{"owner, 0500", 0o500, statusOf(owner, 0, ""), false},
		{"supplementary group, 0770", 0o770, statusOf(other, other, "5 "+strconv.Itoa(int(group))), true},
		{"primary group, 0750", 0o750, statusOf(other, group, ""), false},
		{"root, 0500", 0o500, statusOf(0, 0, ""), true},
		{"no Gid line", 0o500, "Uid:\t7\t7\t7\t7\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Chmod(dir, c.mode); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(dir, 0o700)
			proc := fakeTree(t, map[string]string{"77/status": c.status})
			err := proc.CheckDir(77, proc.Locate(77, path))
			var de *DirError
			switch {
			case c.want && err != nil:
				t.Fatalf("CheckDir: %v, want nil", err)
			case !c.want && (!errors.As(err, &de) || de.Problem != DirNotWritable):
				t.Fatalf("CheckDir: %v, want a DirNotWritable *DirError", err)
			case !c.want && (de.UID == 0 || de.Error() != fmt.Sprintf("the directory %s is not writable by the process's user (uid %d)", dir, de.UID)):
				t.Fatalf("DirError: uid %d, %q", de.UID, de.Error())
			}
		})
	}
}

// TestCheckDirMissing: a missing directory and a file in its place are
// told apart; a process whose files cannot be reached is not judged.
func TestCheckDirMissing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var host FS
	for _, c := range []struct {
		path string
		want DirProblem
		text string
	}{
		{"/nonexistent/dir/x", DirMissing, "the directory /nonexistent/dir does not exist"},
		{filepath.Join(file, "core"), DirNotDirectory, file + " is not a directory"},
	} {
		var de *DirError
		if err := host.CheckDir(0, host.Locate(0, c.path)); !errors.As(err, &de) || de.Problem != c.want || err.Error() != c.text {
			t.Errorf("%s: %v, want %q", c.path, err, c.text)
		}
	}
	if err := host.CheckDir(5, Place{Path: "/nonexistent/x"}); err != nil {
		t.Errorf("unreachable file system: %v, want nil", err)
	}
}

// TestLocateOtherNamespace: a process in another mount namespace writes
// into its own file system, reached through /proc/PID/root.
func TestLocateOtherNamespace(t *testing.T) {
	proc := fakeTree(t, nil)
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link("mnt:[1]", filepath.Join(proc.Root, "self", "ns", "mnt"))
	link("mnt:[1]", filepath.Join(proc.Root, "8", "ns", "mnt"))
	link("mnt:[2]", filepath.Join(proc.Root, "9", "ns", "mnt"))
	if pl := proc.Locate(8, "/tmp/core"); pl != (Place{Path: "/tmp/core", Local: "/tmp/core"}) {
		t.Errorf("same namespace: %+v", pl)
	}
	if pl := proc.Locate(9, "/tmp/core"); pl != (Place{Path: "/tmp/core", OtherNamespace: true}) {
		t.Errorf("other namespace, no root: %+v", pl)
	}
	if err := os.Mkdir(filepath.Join(proc.Root, "9", "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := Place{Path: "/tmp/core", Local: filepath.Join(proc.Root, "9", "root", "tmp", "core"), OtherNamespace: true}
	if pl := proc.Locate(9, "/tmp/core"); pl != want {
		t.Errorf("other namespace: %+v, want %+v", pl, want)
	}
	if pl := proc.Locate(0, "/tmp/core"); pl.Local != "/tmp/core" || pl.OtherNamespace {
		t.Errorf("pid 0: %+v", pl)
	}
	de := &DirError{Problem: DirMissing, Place: want}
	if got := de.Error(); got != "the directory /tmp does not exist in the process's file system (another mount namespace)" {
		t.Errorf("DirError: %q", got)
	}
}
