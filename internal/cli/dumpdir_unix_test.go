//go:build unix

package cli

import (
	"os"
	"strconv"
	"testing"
)

func fileOwnerOf(t *testing.T, path string) (uid, gid uint32, ok bool) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileOwner(st)
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
