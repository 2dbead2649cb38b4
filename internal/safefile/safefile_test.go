package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestCreateNew(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		opt  Options
		perm fs.FileMode
	}{{Options{}, 0o644}, {Options{Private: true}, 0o600}} {
		p := filepath.Join(dir, tc.perm.String())
		f, err := Create(p, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("x")
		f.Close()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm()&^0o022 != tc.perm&^0o022 {
			t.Errorf("%+v: mode %v, want %v", tc.opt, fi.Mode().Perm(), tc.perm)
		}
		if tc.opt.Private && runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("private file mode %v", fi.Mode().Perm())
		}
	}
}

func TestCreateRefusesWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	existing := filepath.Join(dir, "existing")
	os.WriteFile(existing, []byte("old"), 0o644)
	link := filepath.Join(dir, "link")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(victim, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	os.Symlink(filepath.Join(dir, "created-through-link"), dangling)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)

	for _, p := range []string{existing, link, dangling, sub} {
		f, err := Create(p, Options{})
		if err == nil {
			f.Close()
			t.Errorf("Create(%s) succeeded", p)
			continue
		}
		var pe *fs.PathError
		if !errors.Is(err, fs.ErrExist) || !errors.As(err, &pe) || pe.Path != p {
			t.Errorf("Create(%s) = %v, want a PathError matching fs.ErrExist", p, err)
		}
		if p != sub && !strings.Contains(err.Error(), "--force") {
			t.Errorf("Create(%s): %v does not say how to replace it", p, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim changed: %q", b)
	}
	if b, _ := os.ReadFile(existing); string(b) != "old" {
		t.Errorf("existing file changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "created-through-link")); err == nil {
		t.Error("a file was created through the dangling link")
	}

	// With Overwrite the entry is replaced, never written through.
	for _, p := range []string{existing, link, dangling} {
		f, err := Create(p, Options{Overwrite: true, Private: true})
		if err != nil {
			t.Fatalf("Create(%s, Overwrite) = %v", p, err)
		}
		f.WriteString("new")
		f.Close()
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after Overwrite: %v, %v; want a regular file", p, fi, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim changed through Overwrite: %q", b)
	}
	if _, err := Create(sub, Options{Overwrite: true}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Overwrite of a directory = %v", err)
	}
}

func TestPrepareAndSeal(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "core")
	if err := Prepare(dump, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dump, []byte("dump"), 0o664) // as createdump would
	if err := Prepare(dump, false); !errors.Is(err, ErrExists) {
		t.Errorf("Prepare of an existing dump = %v", err)
	}
	fi, err := Seal(dump)
	if err != nil || fi.Size() != 4 {
		t.Fatalf("Seal = %v, %v", fi, err)
	}
	if st, _ := os.Stat(dump); runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("sealed dump mode %v, want 0600", st.Mode().Perm())
	}
	if err := Prepare(dump, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dump); err == nil {
		t.Error("Prepare(overwrite) left the old dump")
	}
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("v"), 0o644)
	if err := os.Symlink(victim, dump); err != nil {
		t.Skip("no symlinks")
	}
	if _, err := Seal(dump); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Seal of a link = %v", err)
	}
	if st, _ := os.Stat(victim); runtime.GOOS != "windows" && st.Mode().Perm() != 0o644 {
		t.Errorf("Seal changed the link's target to %v", st.Mode().Perm())
	}
}
