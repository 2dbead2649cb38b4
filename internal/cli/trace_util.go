package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/transport"
)

// processName returns the name clrdiag ps shows for pid, or "".
func processName(ctx context.Context, pid int) string {
	if pid == 0 {
		return ""
	}
	procs, err := transport.Discover(ctx, nil)
	if err != nil {
		return ""
	}
	for _, p := range procs {
		if p.PID == pid {
			return p.Name
		}
	}
	return ""
}

// repairTrace makes a trace file whose stream stopped early (or is damaged
// after some point) end cleanly: it cuts the file after the last complete
// block and appends the end-of-stream marker. It returns the new length,
// or -1 when the file needed nothing; with damage, the error describes it
// and the file is still cut and terminated (a positive length).
//
// limit, when not negative, is where damage that CompleteLength cannot see
// begins (an event the decoder refused): only the blocks that end before
// it are kept.
func repairTrace(f *os.File, limit int64) (int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	n, complete, damage := nettrace.CompleteLength(bufio.NewReaderSize(r, 1<<20))
	if damage != nil && n == 0 {
		return 0, damage
	}
	if complete {
		return -1, nil
	}
	if err := f.Truncate(n); err != nil {
		return 0, err
	}
	end := nettrace.EndOfStream()
	if _, err := f.WriteAt(end, n); err != nil {
		return n, fmt.Errorf("the end-of-stream marker could not be written (%w); readers will report the file as cut after its last complete block", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return 0, err
	}
	return n + int64(len(end)), damage
}

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
