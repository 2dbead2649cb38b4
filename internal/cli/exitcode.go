package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// The exit statuses of every clrdiag command: one table, documented in the
// README ("Exit codes") and in 'clrdiag --help'. A command returns an
// *ExitError with one of these codes, or an error that exitCodeOf classifies.
const (
	// exitOK: the command did what was asked.
	exitOK = 0
	// exitFailure: it failed for a reason none of the codes below names.
	exitFailure = 1
	// exitUsage: a bad command line: unknown command or flag, bad value,
	// missing or extra argument.
	exitUsage = 2
	// exitNotFound: no such process, not a .NET process, or no diagnostic
	// endpoint to talk to.
	exitNotFound = 3
	// exitRuntime: the runtime refused or failed the request (an HRESULT),
	// does not support it, or stopped answering.
	exitRuntime = 4
	// exitDamaged: an input file is damaged, truncated or of an unsupported
	// format. The command prints what it could read first.
	exitDamaged = 5
	// exitIO: a local I/O failure: a file cannot be opened, created or
	// written, the disk is full, a size cap was hit.
	exitIO = 6
	// exitInterrupted: a signal cut the work short before it was complete.
	// A Ctrl-C that is the normal way to end a collection exits exitOK.
	exitInterrupted = 130
)

// exitCodes is the table in the order it is documented.
var exitCodes = []struct {
	Code    int
	Meaning string
}{
	{exitOK, "done"},
	{exitFailure, "failed for a reason not below"},
	{exitUsage, "bad command line: unknown command or flag, bad value, missing argument"},
	{exitNotFound, "no such process, not a .NET process, or no diagnostic endpoint"},
	{exitRuntime, "the runtime refused or failed the request (HRESULT), does not support it, or stopped answering"},
	{exitDamaged, "input file damaged, truncated or of an unsupported format (after printing what could be read)"},
	{exitIO, "local I/O failure: a file cannot be opened, created or written, disk full, size cap hit"},
	{exitInterrupted, "cut short by a signal before the work was complete (Ctrl-C that normally ends a collection: 0)"},
}

// exitCodeHelp is the table as text for 'clrdiag --help'.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %3d  %s\n", c.Code, c.Meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// usageError marks err as a bad command line (exitUsage).
func usageError(err error) error { return &ExitError{Code: exitUsage, Err: err} }

// usageErrorf is usageError(fmt.Errorf(format, args...)).
func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// exitCodeOf returns the exit status for an error returned by a command.
// An *ExitError carries its own code; other errors are classified by their
// type: a missing endpoint, a runtime's refusal, damaged input, a local I/O
// failure. interrupted says whether a signal arrived: a cancellation then
// exits exitInterrupted.
func exitCodeOf(err error, interrupted bool) int {
	if err == nil {
		return exitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var (
		opErr   *transport.OpError
		srvErr  *ipc.ServerError
		fmtErr  *nettrace.FormatError
		stkErr  *stacks.Error
		pathErr *fs.PathError
		netErr  net.Error
	)
	switch {
	case interrupted && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return exitInterrupted
	case errors.Is(err, transport.ErrNotFound), errors.Is(err, transport.ErrUntrustedSocket), errors.As(err, &opErr) && opErr.Op == "dial":
		return exitNotFound
	case errors.As(err, &srvErr), errors.Is(err, ipc.ErrProtocol), errors.Is(err, reverse.ErrRuntimeGone),
		errors.Is(err, counters.ErrStreamCut), errors.Is(err, stacks.ErrNoSamples), errors.Is(err, stacks.ErrEndedEarly):
		return exitRuntime
	case errors.As(err, &stkErr) && stkErr.Local:
		return exitIO
	case errors.As(err, &fmtErr), errors.Is(err, nettrace.ErrUnsupportedFormat):
		return exitDamaged
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EROFS), errors.As(err, &pathErr):
		return exitIO
	case errors.As(err, &netErr) && netErr.Timeout():
		return exitRuntime // the runtime stopped answering
	}
	return exitFailure
}
