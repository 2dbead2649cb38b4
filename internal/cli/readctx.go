package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// cancelable returns a reader of r whose Read returns ctx's error once ctx
// is done, for a reader that takes no context (profile.Read). A regular
// file's reads end, so it is read as it is with ctx checked before each
// Read: no goroutine, no buffers, no second copy of every byte (and none
// of interruptible's 768 KiB to allocate and clear for a 1 KB trace).
// Anything else may block (a pipe, a terminal): it goes through
// interruptible.
func cancelable(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	if isRegularFile(r) {
		return &ctxReader{ctx: ctx, r: r}
	}
	return interruptible(ctx, r)
}

// isRegularFile reports whether r is an *os.File of a regular file, whose
// reads end: it needs none of interruptible's goroutine.
func isRegularFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// ctxReader is cancelable's reader of a regular file.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// interruptible returns a reader of r whose Read returns ctx's error as
// soon as ctx is done, even while r blocks (standard input with nothing
// coming): a Ctrl-C stops 'trace stats -' and the file converters, which
// Main's signal handling would otherwise leave running. A goroutine reads r
// ahead into three reused 256 KiB buffers; when ctx ends it is left blocked
// in r's Read, which ends with the process.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	ir := &interruptReader{ctx: ctx, chunks: make(chan chunk, 2), free: make(chan []byte, 3)}
	for range 3 {
		ir.free <- make([]byte, 256<<10)
	}
	go ir.pump(r)
	return ir
}

type chunk struct {
	buf []byte // the whole buffer, returned to free once read
	n   int
	err error
}

type interruptReader struct {
	ctx    context.Context
	chunks chan chunk
	free   chan []byte
	cur    chunk
	off    int
	err    error
}

func (ir *interruptReader) pump(r io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-ir.free:
		case <-ir.ctx.Done():
			return
		}
		n, err := r.Read(buf)
		select {
		case ir.chunks <- chunk{buf, n, err}:
		case <-ir.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (ir *interruptReader) Read(p []byte) (int, error) {
	for ir.off == ir.cur.n {
		if ir.cur.buf != nil {
			ir.free <- ir.cur.buf // never blocks: three buffers, three slots
			ir.cur = chunk{}
		}
		if ir.err != nil {
			return 0, ir.err
		}
		if err := ir.ctx.Err(); err != nil {
			return 0, err
		}
		select {
		case c := <-ir.chunks:
			ir.cur, ir.off, ir.err = c, 0, c.err
		case <-ir.ctx.Done():
			return 0, ir.ctx.Err()
		}
	}
	n := copy(p, ir.cur.buf[ir.off:ir.cur.n])
	ir.off += n
	return n, nil
}

// interruptedError is the error of a file command cut short by a signal:
// exitInterrupted, with what was done so far.
func interruptedError(ctx context.Context, name string, err error) error {
	if ctx == nil || ctx.Err() == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		return nil
	}
	return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("%s: interrupted before the end of the trace", name)}
}
