package nettrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// startBufferSize is the size of the read buffer a Reader starts with. The
// buffer grows to ReaderConfig.BufferSize once the stream has passed that
// many bytes: a trace of a few events is decoded in about the time it takes
// to allocate and zero a 4 KiB buffer, so it does not get one.
const startBufferSize = 512

// startSource is the source under the small starting buffer. It records
// the source's error, so the buffer is not replaced while it holds one
// the source returned with data, and after growBuffer it first returns
// the bytes the small buffer held.
type startSource struct {
	src  io.Reader
	held []byte
	err  error
}

func (s *startSource) Read(p []byte) (int, error) {
	if len(s.held) > 0 {
		n := copy(p, s.held)
		s.held = s.held[n:]
		return n, nil
	}
	n, err := s.src.Read(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// growBuffer replaces the small starting buffer by one of cfg.BufferSize
// once the stream has passed that size (called before each block). The
// bytes the small buffer holds are read first; a source that has returned
// an error keeps the small buffer, which returns that error in its turn.
func (r *Reader) growBuffer() {
	r.small = false
	if r.in.err != nil {
		return
	}
	r.in.held, _ = r.br.Peek(r.br.Buffered()) // the small buffer is dropped
	if len(r.in.held) == 0 {
		r.br = bufio.NewReaderSize(r.in.src, r.cfg.BufferSize)
		return
	}
	r.br = bufio.NewReaderSize(&r.in, r.cfg.BufferSize)
}

func (r *Reader) errAt(off int64, cause error, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// readFull reads exactly n bytes into a scratch buffer (not r.buf).
func (r *Reader) readSmall(dst []byte, what string) error {
	return r.readSmall2(dst, what, "")
}

// readSmall2 names what it reads with two strings, joined only on error.
func (r *Reader) readSmall2(dst []byte, what, what2 string) error {
	m, err := io.ReadFull(r.br, dst)
	r.off += int64(m)
	if err != nil {
		return r.ioErr(err, what+what2, len(dst), m)
	}
	return nil
}

func (r *Reader) ioErr(err error, what string, want, got int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.errAt(r.off, errTruncated, "reading %s: expected %d bytes, stream has %d", what, want, got)
	}
	return r.errAt(r.off, err, "reading %s", what)
}

func (r *Reader) readByte(what, what2 string) (byte, error) {
	b, err := r.br.ReadByte()
	if err != nil {
		return 0, r.ioErr(err, what+what2, 1, 0)
	}
	r.off++
	return b, nil
}

func (r *Reader) readU32(what, what2 string) (uint32, error) {
	b := r.scratch[:4]
	if err := r.readSmall2(b, what, what2); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *Reader) skip(n int, what, what2 string) error {
	m, err := r.br.Discard(n)
	r.off += int64(m)
	if err != nil {
		return r.ioErr(err, what+what2, n, m)
	}
	return nil
}
