package clrevents

import (
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by a DecodeError when a payload ends before a
// field that its version requires.
var ErrTruncated = errors.New("payload too short")

// ErrUnterminatedString is wrapped by a DecodeError when a UTF-16 string
// field has no NUL terminator before the end of the payload.
var ErrUnterminatedString = errors.New("string not NUL-terminated")

// ErrPointerSize is returned (wrapped) when a decoder that reads
// pointer-sized fields is given a pointer size other than 4 or 8.
var ErrPointerSize = errors.New("pointer size must be 4 or 8")

// ErrUnknownEvent is returned (wrapped) by Decode and DecodeFields for a
// (provider, event id) pair that is not in the table.
var ErrUnknownEvent = errors.New("unknown event")

// ErrCountTooLarge is wrapped by a DecodeError when an element count read
// from a payload needs more bytes than the payload has left.
var ErrCountTooLarge = errors.New("element count exceeds payload")

// DecodeError reports a payload that does not match the layout of its event
// and version. Offset is the byte offset in the payload at which the field
// starts.
type DecodeError struct {
	Event   string
	Version uint8
	Field   string
	Offset  int
	Err     error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("clrevents: decode %s v%d: field %s at offset %d: %v",
		e.Event, e.Version, e.Field, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
