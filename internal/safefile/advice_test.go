//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A dump the monitor may not make private is explained: whose it is, and
// what the monitor needs.
func TestSealAdvice(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dump.dmp")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	owner := os.Getuid()
	if owner == 0 {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		owner = 65534
	}
	err := SealAdvice(p, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission})
	if !errors.Is(err, ErrForeignFile) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{"uid " + strconv.Itoa(owner), "runAsUser", "CAP_FOWNER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	other := errors.New("disk on fire")
	if SealAdvice(p, other) != other || SealAdvice(p, nil) != nil {
		t.Error("other errors must pass unchanged")
	}
}
