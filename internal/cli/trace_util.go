package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/nettrace"
)

// isTruncation reports whether err is a nettrace stream that stopped early
// (as opposed to damaged).
func isTruncation(err error) bool {
	var fe *nettrace.FormatError
	return errors.As(err, &fe) && fe.Truncated()
}

// openInput opens an input file; a directory or a file that cannot be
// opened is a local I/O failure (exitIO), not damaged input.
func openInput(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, ioError(fmt.Errorf("open %s: %w", name, unwrapPath(err)))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, ioError(fmt.Errorf("%s is a directory: give a trace file", name))
	}
	return f, nil
}
