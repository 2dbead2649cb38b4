//go:build unix

package cli

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

func fileOwnerOf(t *testing.T, path string) (uid, gid uint32, ok bool) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return sys.Uid, sys.Gid, true
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
