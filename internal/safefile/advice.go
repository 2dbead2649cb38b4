package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrForeignFile is matched (errors.Is) by the error SealAdvice returns
// for a file this process may not open or make private: one the target
// process wrote as another user.
var ErrForeignFile = errors.New("the file belongs to another user")

// SealAdvice explains a Seal that failed for lack of permission on a file
// another process wrote (a dump, which the target's createdump writes as
// the target's user): whose file it is, and what the monitor needs to
// keep it. Other errors are returned as they are.
func SealAdvice(path string, err error) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	who := "another user"
	if uid, ok := fileOwner(path); ok {
		who = fmt.Sprintf("uid %d", uid)
	}
	return fmt.Errorf("%w: %s (written by the target as %s; this process runs as uid %d): run the monitor as the target's user "+
		"(in Kubernetes the same runAsUser, or an fsGroup both share), or give it CAP_DAC_OVERRIDE and CAP_FOWNER to read the dump and make it private: %w",
		ErrForeignFile, path, who, os.Getuid(), err)
}
