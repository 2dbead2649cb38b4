//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// fileOwner is the uid that owns path.
func fileOwner(path string) (int, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
