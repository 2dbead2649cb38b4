package ctxio

import (
	"context"
	"io"
	"os"
)

// Cancelable returns a reader of r whose Read returns ctx's error once ctx
// is done, for a reader that takes no context (profile.Read). A regular
// file's reads end, so it is read as it is with ctx checked before each
// Read: no goroutine, no buffers, no second copy of every byte (and none
// of Interruptible's 768 KiB to allocate and clear for a 1 KB trace).
// Anything else may block (a pipe, a terminal): it goes through
// Interruptible.
func Cancelable(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	if IsRegularFile(r) {
		return &ctxReader{ctx: ctx, r: r}
	}
	return Interruptible(ctx, r)
}

// IsRegularFile reports whether r is an *os.File of a regular file, whose
// reads end: it needs none of Interruptible's goroutine.
func IsRegularFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// ctxReader is Cancelable's reader of a regular file.
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

// Interruptible returns a reader of r whose Read returns ctx's error as
// soon as ctx is done, even while r blocks (standard input with nothing
// coming): a Ctrl-C stops a command reading a pipe (clrdiag's 'trace stats
// -' and the file converters), which a signal handler would otherwise leave
// running. A goroutine reads r ahead into three reused 256 KiB buffers;
// when ctx ends it is left blocked in r's Read, which ends with the
// process.
func Interruptible(ctx context.Context, r io.Reader) io.Reader {
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

// ReaderAt returns r whose ReadAt fails with ctx's error once ctx is done,
// for a reader that takes no context (gcdump.Read).
func ReaderAt(ctx context.Context, r io.ReaderAt) io.ReaderAt {
	return ctxReaderAt{ctx, r}
}

type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}
