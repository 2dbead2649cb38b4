package eventpipe

import (
	"errors"
	"io"
	"os"
	"sync"
)

// Spool copies a session stream into a file and lets any number of readers
// follow the same bytes from that file as they arrive. The copy never waits
// for a reader: a slow decoder or display falls behind on disk, not in the
// runtime's buffers, so it cannot make the runtime drop events.
type Spool struct {
	f *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	written int64
	done    bool
	err     error // the copy's error, nil on a clean end of stream
}

// NewSpool returns a spool writing to f, which must be open for reading and
// writing (os.Create gives that). The spool does not close f.
func NewSpool(f *os.File) *Spool {
	s := &Spool{f: f}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// spoolChunk is the read size of the copy loop: large enough that a fast
// stream costs few system calls.
const spoolChunk = 1 << 20

// Copy reads r until it ends or fails and appends everything to the file.
// Each chunk is published to the readers as soon as it is written (a
// splice-based copy was tried and dropped: it only returns once a whole
// chunk has arrived, which hides a slow stream's events from the readers).
// It returns the bytes copied and the error that ended the copy (nil for
// io.EOF). Readers are woken after every chunk and when Copy returns.
func (s *Spool) Copy(r io.Reader) (int64, error) {
	buf := make([]byte, spoolChunk)
	var total int64
	var err error
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, werr := s.f.Write(buf[:n]); werr != nil {
				err = werr
				break
			}
			total += int64(n)
			s.mu.Lock()
			s.written = total
			s.mu.Unlock()
			s.cond.Broadcast()
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
	}
	s.finish(err)
	return total, err
}

// Abort ends the spool with err as if the copy had failed; readers waiting
// for more bytes return.
func (s *Spool) Abort(err error) { s.finish(err) }

func (s *Spool) finish(err error) {
	s.mu.Lock()
	if !s.done {
		s.done = true
		s.err = err
	}
	s.mu.Unlock()
	s.cond.Broadcast()
}

// Written returns how many bytes the copy has written so far.
func (s *Spool) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// Done reports whether the copy has ended, and its error.
func (s *Spool) Done() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done, s.err
}

// NewReader returns a reader of the spooled bytes from the start. Read
// blocks until more bytes are written and returns io.EOF after the last
// byte once the copy has ended (whatever its error: readers see exactly the
// bytes in the file).
func (s *Spool) NewReader() io.Reader { return &spoolReader{s: s} }

type spoolReader struct {
	s   *Spool
	off int64
}

func (r *spoolReader) Read(p []byte) (int, error) {
	s := r.s
	s.mu.Lock()
	for s.written == r.off && !s.done {
		s.cond.Wait()
	}
	avail := s.written - r.off
	s.mu.Unlock()
	if avail == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > avail {
		p = p[:avail]
	}
	n, err := s.f.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}
