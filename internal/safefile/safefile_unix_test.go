//go:build unix

package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO planted at a dump path neither blocks Seal nor passes.
func TestSealFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o666); err != nil {
		t.Skip(err)
	}
	if _, err := Seal(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Seal(fifo) = %v", err)
	}
}

// As root, Overwrite replaces another user's file instead of writing into
// it (which would hand the new content to that user).
func TestOverwriteOtherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "trace.nettrace")
	os.WriteFile(p, []byte("bait"), 0o666)
	os.Chown(p, 65534, 65534)
	f, err := Create(p, Options{Overwrite: true, Private: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || st.Uid != 0 || st.Mode&0o777 != 0o600 {
		t.Errorf("replaced file: uid %d mode %o, %v; want root's, 0600", st.Uid, st.Mode&0o777, err)
	}
}
