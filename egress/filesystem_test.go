package egress_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/egress"
)

func newFS(t *testing.T) (*egress.FileSystem, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "egress", "traces") // created by NewFileSystem
	p, err := egress.NewFileSystem(egress.FileSystemConfig{Name: "local", Directory: dir})
	if err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// TestFileSystemPutNettrace ships a real capture and decodes the copy.
func TestFileSystemPutNettrace(t *testing.T) {
	p, dir := newFS(t)
	a, want := nettraceArtifact(t)
	res, err := p.Put(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, a.Name)
	if res.Location != dest || res.Size != int64(len(want)) || res.Provider != "local" {
		t.Errorf("result %+v", res)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from the artifact (%d vs %d bytes)", len(got), len(want))
	}
	decodeAll(t, got)
	fi, _ := os.Stat(dest)
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want only the artifact (no temporary file left)", len(ents))
	}
}

// TestFileSystemRefusesWhatIsInTheWay: an existing file, a symbolic link
// to a file outside the directory, a dangling link and a directory at the
// name are all refused, and nothing is written through them.
func TestFileSystemRefusesWhatIsInTheWay(t *testing.T) {
	p, dir := newFS(t)
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := []byte("artifact")
	art := func(name string) egress.Artifact {
		return egress.Artifact{Name: name, Body: bytes.NewReader(body), Size: int64(len(body)), LocalPath: "/var/lib/clrdiag/x"}
	}
	if err := os.WriteFile(filepath.Join(dir, "exists"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []string{"exists", "adir"}
	if runtime.GOOS != "windows" {
		if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(t.TempDir(), "nothing"), filepath.Join(dir, "dangling")); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, "link", "dangling")
	}
	for _, name := range cases {
		_, err := p.Put(context.Background(), art(name))
		var ee *egress.Error
		if !errors.Is(err, fs.ErrExist) || !errors.As(err, &ee) || ee.LocalPath != "/var/lib/clrdiag/x" ||
			!strings.Contains(err.Error(), "the artifact is kept at /var/lib/clrdiag/x") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me" {
		t.Errorf("the link's target was written: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "exists")); string(b) != "old" {
		t.Errorf("the existing file was replaced: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "partial") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestFileSystemRefusesBadNames: nothing from a name leaves the directory.
func TestFileSystemRefusesBadNames(t *testing.T) {
	p, _ := newFS(t)
	for _, name := range []string{"../escape", "/etc/passwd", "..", "sub/x"} {
		_, err := p.Put(context.Background(), egress.Artifact{Name: name, Body: bytes.NewReader(nil)})
		if !errors.Is(err, egress.ErrInvalidName) {
			t.Errorf("%q: err = %v", name, err)
		}
	}
}

// TestFileSystemShortBody: a body shorter than Size fails and leaves
// nothing behind.
func TestFileSystemShortBody(t *testing.T) {
	p, dir := newFS(t)
	_, err := p.Put(context.Background(), egress.Artifact{Name: "short", Body: bytes.NewReader([]byte("abc")), Size: 10})
	if err == nil || !strings.Contains(err.Error(), "ended after 3 of 10 bytes") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d entries left", len(ents))
	}
}

// TestFileSystemCancelled: a cancelled context writes nothing.
func TestFileSystemCancelled(t *testing.T) {
	p, dir := newFS(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Put(ctx, egress.Artifact{Name: "x", Body: bytes.NewReader([]byte("abc")), Size: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d entries left", len(ents))
	}
}

// TestFileSystemArtifactAlreadyThere: an artifact whose local copy is the
// file at the destination (a dump written into the egress directory) is
// not copied onto itself.
func TestFileSystemArtifactAlreadyThere(t *testing.T) {
	p, dir := newFS(t)
	path := filepath.Join(dir, "dump_1.dmp")
	if err := os.WriteFile(path, []byte("dump"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, f, err := egress.File(path, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := p.Put(context.Background(), a)
	if err != nil || res.Location != path || res.Size != 4 {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestNewFileSystemNeedsADirectory(t *testing.T) {
	if _, err := egress.NewFileSystem(egress.FileSystemConfig{}); err == nil {
		t.Error("no error for an empty directory")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := egress.NewFileSystem(egress.FileSystemConfig{Directory: file}); err == nil {
		t.Error("no error for a file")
	}
}
