package nettrace

import (
	"errors"
	"fmt"
	"io"
)

// ErrUnsupportedFormat is returned (wrapped) by NewReader for streams that are
// recognisably EventPipe traces but in a format this package does not decode:
// NetPerf V1/V2 (written by .NET Core 2.0) and NetTrace majors above 6.
var ErrUnsupportedFormat = errors.New("unsupported format")

// FormatError reports damaged or truncated input. Offset is the byte offset
// in the stream (counted from its first byte) at which the reader found the
// problem; Msg says what it expected there.
//
// A FormatError is returned only after every complete event before the damage
// has been delivered. Err, when set, is the underlying cause (for example
// io.ErrUnexpectedEOF for a stream that stops in the middle of a block).
type FormatError struct {
	Offset int64
	Msg    string
	Err    error
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("nettrace: at byte %d: %s", e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// Truncated reports whether the stream simply stopped early (the file was cut
// or the session socket closed before the end-of-stream marker), as opposed to
// containing bytes that contradict the format.
func (e *FormatError) Truncated() bool {
	return errors.Is(e.Err, errTruncated)
}

// errTruncated is the cause recorded in a FormatError when input ended early.
// It matches io.ErrUnexpectedEOF with errors.Is.
var errTruncated error = truncatedError{}

type truncatedError struct{}

func (truncatedError) Error() string {
	return "the stream ended early (file cut short, or the session was not stopped cleanly); the events before this point are intact"
}

func (truncatedError) Is(target error) bool { return target == io.ErrUnexpectedEOF }
