package weighted

import (
	"io"
	"testing"
)

// What the external tests (captures_test.go) use of the package's inside.

// AppendPprof is wp.appendPprof.
func AppendPprof(wp *Profile, b []byte) ([]byte, error) { return wp.appendPprof(b) }

// WriteGzip is writeGzip.
func WriteGzip(w io.Writer, data []byte) error { return writeGzip(w, data) }

// CheckFolded is checkFolded.
func CheckFolded(t *testing.T, wp *Profile, what string) { checkFolded(t, wp, what) }

// CheckPprofEncoding is checkPprofEncoding.
func CheckPprofEncoding(t *testing.T, name string, wp *Profile) { checkPprofEncoding(t, name, wp) }
