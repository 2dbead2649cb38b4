package nettrace

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/clrdiag/clrdiag/internal/wire"
)

var errShort = errors.New("unexpected end of data")

// cursor is the module's little-endian cursor (wire.Cursor: a sticky
// error, so callers check err once after a sequence of reads) with what
// the metadata of NetTrace adds: zigzag varints, V6's length-prefixed
// UTF-8 strings, failures of its own, and errors in the reader's words
// ("at offset N: ...", offsets from the start of the cursor's data).
type cursor struct {
	wire.Cursor
	// wrapped, when set, is the failure as a caller rewrote it (setErr).
	wrapped error
}

func newCursor(b []byte) cursor { return cursor{Cursor: wire.NewCursor(b)} }

// newCursorAt returns a cursor over b at offset off.
func newCursorAt(b []byte, off int) cursor {
	c := newCursor(b)
	c.Seek("", off)
	return c
}

// setErr replaces the failure a caller has seen with err, which wraps it
// in more context.
func (c *cursor) setErr(err error) { c.wrapped = err }

// fail records a failure described by format and args.
func (c *cursor) fail(format string, args ...any) {
	c.Fail("", fmt.Errorf(format, args...))
}

// err returns the first failure, or nil.
func (c *cursor) err() error {
	if c.wrapped != nil {
		return c.wrapped
	}
	e := c.Failure()
	if e == nil {
		return nil
	}
	switch e.Err {
	case wire.ErrShort:
		return fmt.Errorf("at offset %d: %w: need %d bytes, %d left", e.Offset, errShort, e.Need, e.Have)
	case wire.ErrUnterminated:
		return fmt.Errorf("at offset %d: %w: UTF-16 string without its NUL terminator", e.Offset, errShort)
	}
	return fmt.Errorf("at offset %d: %w", e.Offset, e.Err)
}

// remaining is the number of bytes not read yet, 0 after a failure.
func (c *cursor) remaining() int {
	if c.Failed() {
		return 0
	}
	return c.Remaining()
}

func (c *cursor) guid() GUID { return GUID(c.GUID("")) }

func (c *cursor) varint() int64 {
	u := c.Uvarint("")
	return int64(u>>1) ^ -int64(u&1)
}

// utf16z reads a NUL-terminated UTF-16LE string.
func (c *cursor) utf16z() string { return c.UTF16Z("") }

// str8 reads a V6 string: varuint32 byte length then UTF-8.
func (c *cursor) str8() string {
	n := c.Uvarint("")
	if !c.Failed() && n > uint64(c.Remaining()) {
		c.fail("%w: string of %d bytes, %d left", errShort, n, c.Remaining())
		return ""
	}
	b := c.Take("", int(n))
	if !utf8.Valid(b) {
		return string([]rune(string(b))) // replace invalid sequences
	}
	return string(b)
}
