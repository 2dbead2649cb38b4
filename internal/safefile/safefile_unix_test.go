//go:build unix

package safefile

import (
	"errors"
	"io/fs"
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

// TestOverwriteDeviceWritesIntoIt: --force onto /dev/null (or a link to
// it, as /dev/stdout is a link) writes into the device and never removes
// it; without --force it is refused; Prepare (dumps) never removes it.
func TestOverwriteDeviceWritesIntoIt(t *testing.T) {
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/null", link} {
		if _, err := Create(path, Options{}); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Create(%s) without overwrite: %v, want ErrExist", path, err)
		}
		f, err := Create(path, Options{Overwrite: true, Private: true})
		if err != nil {
			t.Fatalf("Create(%s, Overwrite): %v", path, err)
		}
		if _, err := f.Write([]byte("discarded")); err != nil {
			t.Errorf("write into %s: %v", path, err)
		}
		f.Close()
		fi, err := os.Stat("/dev/null")
		if err != nil || fi.Mode().Type()&fs.ModeCharDevice == 0 {
			t.Fatalf("/dev/null after Create(%s, Overwrite): %v %v", path, fi.Mode(), err)
		}
	}
	if err := Prepare("/dev/null", true); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Prepare(/dev/null, overwrite) = %v, want a refusal", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link to /dev/null was replaced: %v %v", fi, err)
	}
}

// TestOverwriteFIFO: a named pipe given with --force is written into.
func TestOverwriteFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(p)
		got <- string(b)
	}()
	f, err := Create(p, Options{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("through the pipe"))
	f.Close()
	if s := <-got; s != "through the pipe" {
		t.Errorf("read %q from the FIFO", s)
	}
}
