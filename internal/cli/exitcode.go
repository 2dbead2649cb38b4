package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// The exit statuses of every clrdiag command: one per failure class, one
// table, documented in the README ("Exit codes") and in 'clrdiag --help'.
// A command returns an *ExitError with one of these codes, or an error that
// exitCodeOf classifies. Main starts the message of a failure with its
// class's sentence (classSentence), so that the same failure reads the same
// in every command.
const (
	// exitOK: the command did what was asked.
	exitOK = 0
	// exitFailure: it failed for a reason none of the codes below names.
	exitFailure = 1
	// exitUsage: a bad command line: unknown command or flag, bad value,
	// missing or extra argument.
	exitUsage = 2
	// exitNotFound: no such process, not a .NET process, no diagnostic
	// endpoint to talk to, or one that is refused (not the target's own,
	// stale: nobody listens on it).
	exitNotFound = 3
	// exitRuntime: the runtime refused or failed the request (an HRESULT),
	// does not support it, did not answer in time, answered something
	// impossible, or cannot answer because the process is stopped.
	exitRuntime = 4
	// exitDamaged: an input file or a session stream is damaged, truncated
	// or not of a supported format. The command keeps or prints what it
	// could read first.
	exitDamaged = 5
	// exitIO: a local I/O failure: an output cannot be created or written
	// (no such directory, disk full, a size cap hit), an input file cannot
	// be opened, a port cannot be listened on.
	exitIO = 6
	// exitTargetGone: the target process exited or closed the connection
	// before the work was done (a collection that keeps what arrived exits
	// exitOK, unless nothing arrived).
	exitTargetGone = 7
	// exitInterrupted: a signal cut the work short before it was complete.
	// A Ctrl-C that is the normal way to end a collection exits exitOK.
	exitInterrupted = 130
)

// exitCodes is the table in the order it is documented. Sentence is what a
// failure's message starts with (Main adds it).
var exitCodes = []struct {
	Code     int
	Meaning  string
	Sentence string
}{
	{exitOK, "done", ""},
	{exitFailure, "failed for a reason not below", ""},
	{exitUsage, "bad command line: unknown command or flag, bad value, missing argument", "bad command line"},
	{exitNotFound, "no such process, not a .NET process, or no usable diagnostic endpoint (refused, stale)", "no target"},
	{exitRuntime, "the runtime refused or failed the request (HRESULT), does not support it, did not answer in time, answered something impossible, or the process is stopped", "the runtime failed the request"},
	{exitDamaged, "an input file or a session stream is damaged, truncated or of an unsupported format (after keeping what could be read)", "damaged data"},
	{exitIO, "local I/O failure: an output cannot be created or written (no such directory, disk full, size cap), an input cannot be opened, a port is in use", "local I/O failed"},
	{exitTargetGone, "the target exited or closed the connection before the work was done", "the target went away"},
	{exitInterrupted, "cut short by a signal before the work was complete (Ctrl-C that normally ends a collection: 0)", "interrupted"},
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

// classSentence is the sentence a failure with exit status code starts
// with, "" for none.
func classSentence(code int) string {
	for _, c := range exitCodes {
		if c.Code == code {
			return c.Sentence
		}
	}
	return ""
}

// failureMessage is what Main prints for a failure: msg preceded by its
// class's sentence, unless msg already starts with it.
func failureMessage(code int, msg string) string {
	s := classSentence(code)
	if s == "" || strings.HasPrefix(msg, s) {
		return msg
	}
	return s + ": " + msg
}

// usageError marks err as a bad command line (exitUsage).
func usageError(err error) error { return &ExitError{Code: exitUsage, Err: err} }

// usageErrorf is usageError(fmt.Errorf(format, args...)).
func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// ioError marks err as a local I/O failure (exitIO).
func ioError(err error) error { return &ExitError{Code: exitIO, Err: err} }

// exitCodeOf returns the exit status for an error returned by a command.
// An *ExitError carries its own code; other errors are classified by their
// type: a missing endpoint, a runtime's refusal, damaged input, a local I/O
// failure, a target that went away. interrupted says whether a signal
// arrived: a cancellation then exits exitInterrupted.
func exitCodeOf(err error, interrupted bool) int {
	if err == nil {
		return exitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var (
		opErr    *transport.OpError
		srvErr   *ipc.ServerError
		protoErr *ipc.ProtocolError
		fmtErr   *nettrace.FormatError
		stkErr   *stacks.Error
		outErr   *eventpipe.OutputError
		pathErr  *fs.PathError
		netErr   net.Error
	)
	switch {
	case interrupted && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return exitInterrupted
	case errors.Is(err, transport.ErrNotFound), errors.Is(err, transport.ErrUntrustedSocket):
		return exitNotFound
	case errors.As(err, &opErr) && strings.HasPrefix(opErr.Op, "dial") && !opErr.Timeout():
		// Nothing listens there (ECONNREFUSED), no such socket, or no
		// right to it: no endpoint to talk to.
		return exitNotFound
	case targetGone(err):
		return exitTargetGone
	case errors.As(err, &srvErr), errors.Is(err, ipc.ErrProtocol), errors.As(err, &protoErr),
		errors.Is(err, stacks.ErrNoSamples), errors.Is(err, errStopped):
		return exitRuntime
	case errors.As(err, &stkErr) && stkErr.Local, errors.As(err, &outErr):
		return exitIO
	case errors.As(err, &fmtErr), errors.Is(err, nettrace.ErrUnsupportedFormat), errors.Is(err, eventpipe.ErrNotNettrace):
		return exitDamaged
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EROFS), errors.As(err, &pathErr):
		return exitIO
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return exitRuntime // the runtime stopped answering
	}
	return exitFailure
}

// targetGone reports whether err says the target went away: it exited, was
// killed or closed the connection, before or while it answered.
func targetGone(err error) bool {
	switch {
	case errors.Is(err, reverse.ErrRuntimeGone), errors.Is(err, counters.ErrStreamCut),
		errors.Is(err, stacks.ErrEndedEarly), errors.Is(err, gcdump.ErrEndedEarly),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// The connection closed before a single byte of the reply: a runtime
	// always answers, with an error at worst, unless it is gone.
	var pe *ipc.ProtocolError
	return errors.As(err, &pe) && pe.What == "reply header" && pe.Got == 0 && (errors.Is(pe.Err, io.EOF) || errors.Is(pe.Err, io.ErrUnexpectedEOF))
}
