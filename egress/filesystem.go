package egress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FileSystemConfig configures a FileSystem provider. Directory is
// required; the zero value of every other field is the default.
type FileSystemConfig struct {
	// Name is the provider's name; "" is "filesystem".
	Name string
	// Directory is where artifacts are written. It is created (0700) when
	// missing; a relative path is made absolute once, at NewFileSystem.
	Directory string
}

// FileSystem writes artifacts into one directory. It is safe for
// concurrent use.
type FileSystem struct {
	name string
	dir  string
}

// NewFileSystem checks the configuration and creates the directory when it
// is missing.
func NewFileSystem(cfg FileSystemConfig) (*FileSystem, error) {
	if cfg.Directory == "" {
		return nil, errors.New("egress: the file system provider needs a directory")
	}
	dir, err := filepath.Abs(cfg.Directory)
	if err != nil {
		return nil, fmt.Errorf("egress: directory %q: %w", cfg.Directory, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress: create the egress directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("egress: %s is not a directory", dir)
	}
	name := cfg.Name
	if name == "" {
		name = "filesystem"
	}
	return &FileSystem{name: name, dir: dir}, nil
}

// Name is the provider's name.
func (p *FileSystem) Name() string { return p.name }

// Directory is the absolute directory artifacts are written to.
func (p *FileSystem) Directory() string { return p.dir }

// Put copies the artifact into the directory under its name. The bytes go
// to a private temporary file first, which is then linked to the name:
// an existing file, directory or symbolic link at the name is refused
// (fs.ErrExist), and nothing is written outside the directory. An artifact
// whose LocalPath is already the file at the name is not copied again.
func (p *FileSystem) Put(ctx context.Context, a Artifact) (Result, error) {
	dest := filepath.Join(p.dir, a.Name)
	fail := func(err error) (Result, error) {
		return Result{}, &Error{Provider: p.name, Artifact: a.Name, Destination: dest, LocalPath: a.LocalPath, Err: err}
	}
	if err := checkArtifact(a); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	root, err := os.OpenRoot(p.dir)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	if fi, err := root.Lstat(a.Name); err == nil {
		if a.LocalPath != "" {
			if lfi, lerr := os.Lstat(a.LocalPath); lerr == nil && os.SameFile(fi, lfi) {
				return Result{Provider: p.name, Location: dest, Size: fi.Size()}, nil
			}
		}
		return fail(existsError(fi))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}

	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + a.Name + ".partial-" + hex.EncodeToString(rnd[:])
	if len(tmp) > 255 {
		tmp = ".partial-" + hex.EncodeToString(rnd[:])
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(err)
	}
	err = writeAll(ctx, f, a)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		// A link fails when anything (even a dangling symbolic link) has
		// appeared at the name since the Lstat: it is never replaced.
		if err = root.Link(tmp, a.Name); errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%w: created by someone else during the copy", fs.ErrExist)
		}
	}
	_ = root.Remove(tmp)
	if err != nil {
		return fail(err)
	}
	return Result{Provider: p.name, Location: dest, Size: a.Size}, nil
}

// writeAll copies the artifact's body into f, syncs and closes it.
func writeAll(ctx context.Context, f *os.File, a Artifact) error {
	n, err := io.Copy(f, ctxReader{ctx, io.NewSectionReader(a.Body, 0, a.Size)})
	if err == nil && n != a.Size {
		err = fmt.Errorf("the body ended after %d of %d bytes", n, a.Size)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("copy: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func existsError(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("a symbolic link is in the way, not followed: %w", fs.ErrExist)
	case fi.IsDir():
		return fmt.Errorf("a directory is in the way: %w", fs.ErrExist)
	}
	return fmt.Errorf("a file of that name is already there: %w", fs.ErrExist)
}
