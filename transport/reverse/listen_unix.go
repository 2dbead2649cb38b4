//go:build unix

package reverse

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxSocketPath is the longest path a Unix socket can have on Linux (108
// bytes with the terminating NUL); macOS allows 103.
const maxSocketPath = 107

// listen binds a Unix socket at path with mode 0600. It binds under a random
// name in the same directory, restricts it, then renames it into place, so
// the socket is never reachable at path with looser permissions; the rename
// also replaces a stale socket atomically.
func listen(path string) (net.Listener, func() error, error) {
	if len(path) > maxSocketPath {
		return nil, nil, fmt.Errorf("the path is %d bytes long; Unix socket paths are limited to %d: choose a shorter one", len(path), maxSocketPath)
	}
	if err := checkStale(path); err != nil {
		return nil, nil, err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, nil, err
	}
	tmp := filepath.Join(filepath.Dir(path), ".clrdiag-"+hex.EncodeToString(rnd[:]))
	if len(tmp) > maxSocketPath {
		tmp = path // the final name is shorter than our temporary one
		if err := removeStale(path); err != nil {
			return nil, nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, func() error, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	if tmp != path {
		if err := os.Rename(tmp, path); err != nil {
			return fail(err)
		}
	}
	ours, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	remove := func() error {
		// Remove the socket only if it is still ours: another listener may
		// have replaced it after taking it for stale.
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if !os.SameFile(fi, ours) {
			return nil
		}
		return os.Remove(path)
	}
	return ln, remove, nil
}

// checkStale returns nil if path does not exist or is a socket nobody listens
// on, ErrAddressInUse if a process accepts connections on it, and an error for
// anything else at that path (which is never removed).
func checkStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: the path exists and is not a socket (%v)", fs.ErrExist, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return ErrAddressInUse
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
		return nil // stale: its listener is gone
	}
	return fmt.Errorf("cannot tell whether the existing socket is in use: %w", err)
}

func removeStale(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
