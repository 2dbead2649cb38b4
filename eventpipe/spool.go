package eventpipe

import (
	"errors"
	"io"
	"os"
	"sync"
)

// ErrSpoolClosed is returned by a Spool's Write after Finish or Close, and
// by a ring spool's reader whose bytes were overwritten.
var ErrSpoolClosed = errors.New("eventpipe: the spool is closed")

// Spool writes a session stream into a file and lets readers follow the
// same bytes from that file as they arrive. Writing never waits for a
// reader (except in a full ring, see NewTempSpool): a slow decoder or
// display falls behind on disk, not in the runtime's buffers, so it cannot
// make the runtime drop events.
//
// A Spool is an io.Writer (Session.Drain writes into it); Finish ends it.
// Its methods are safe for concurrent use.
type Spool struct {
	f *os.File
	// ring, when positive, bounds the file: byte n of the stream is at
	// offset n%ring, and writing waits while the slowest reader is ring
	// bytes behind.
	ring int64
	// temp: the spool made the file and removes it on Close; unlinked:
	// the file was removed from its directory as soon as it was created.
	temp, unlinked bool

	mu      sync.Mutex
	cond    *sync.Cond
	written int64
	done    bool
	err     error // the error given to Finish; nil on a clean end
	readers map[*spoolReader]struct{}
}

// NewSpool returns a spool writing to f, which must be open for reading and
// writing (os.Create gives that). The file grows with the stream. The spool
// does not close f.
func NewSpool(f *os.File) *Spool {
	s := &Spool{f: f, readers: map[*spoolReader]struct{}{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// NewTempSpool returns a spool writing to a new temporary file in dir (""
// means os.TempDir()). Where the system allows it (Unix), the file is
// removed from the directory at once: it lives while the spool is open
// and nothing is left behind, not even when the process is killed.
// Elsewhere Close removes it.
//
// ring, when positive, bounds the file to ring bytes, used as a ring: the
// readers must be made (NewReader) before the first write, and Write waits
// while the slowest open reader is ring bytes behind (the runtime's own
// buffers then take the excess, and drop events when they are full). ring
// must be at least a few megabytes for a fast stream. 0 lets the file grow.
func NewTempSpool(dir string, ring int64) (*Spool, error) {
	f, err := os.CreateTemp(dir, "clrdiag-spool-*.nettrace")
	if err != nil {
		return nil, err
	}
	s := NewSpool(f)
	s.temp = true
	s.unlinked = os.Remove(f.Name()) == nil
	if ring > 0 {
		s.ring = ring
	}
	return s, nil
}

// Close ends the spool (as Finish(nil) if it was not finished) and, for a
// spool made by NewTempSpool, closes and removes its file. Readers must
// not be used after Close.
func (s *Spool) Close() error {
	s.Finish(nil)
	if !s.temp {
		return nil
	}
	err := s.f.Close()
	if !s.unlinked {
		if rerr := os.Remove(s.f.Name()); err == nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
	}
	return err
}

// Unlinked reports whether the spool's temporary file was removed from its
// directory when it was made (so that nothing can leave it behind).
func (s *Spool) Unlinked() bool { return s.unlinked }

// Write appends p to the file and wakes the readers. In a ring it waits
// for room; it returns ErrSpoolClosed once the spool is finished.
func (s *Spool) Write(p []byte) (int, error) {
	if s.ring == 0 {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done {
			return 0, ErrSpoolClosed
		}
		n, err := s.f.Write(p)
		s.publish(int64(n))
		return n, err
	}
	total := 0
	for len(p) > 0 {
		s.mu.Lock()
		for !s.done && s.written-s.slowest() >= s.ring {
			s.cond.Wait()
		}
		if s.done {
			s.mu.Unlock()
			return total, ErrSpoolClosed
		}
		pos := s.written % s.ring
		room := s.ring - (s.written - s.slowest())
		s.mu.Unlock()
		n := int(min(int64(len(p)), room, s.ring-pos))
		m, err := s.f.WriteAt(p[:n], pos)
		s.publish(int64(m))
		total += m
		if err != nil {
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// slowest is the offset of the slowest open reader (the written length
// when there is none). s.mu must be held.
func (s *Spool) slowest() int64 {
	low := s.written
	for r := range s.readers {
		low = min(low, r.off)
	}
	return low
}

func (s *Spool) publish(n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.written += n
	s.mu.Unlock()
	s.cond.Broadcast()
}

// Copy reads r until it ends or fails and writes everything to the spool,
// then finishes it with the error that ended the copy (nil for io.EOF). It
// returns the bytes copied and that error.
func (s *Spool) Copy(r io.Reader) (int64, error) {
	buf := make([]byte, copyChunk)
	var total int64
	var err error
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			m, werr := s.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				err = werr
				break
			}
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
	}
	s.Finish(err)
	return total, err
}

// Finish ends the spool: readers get io.EOF after the last byte written,
// and a waiting or later Write fails. err records why the stream ended
// (nil for a clean end); only the first call counts.
func (s *Spool) Finish(err error) {
	s.mu.Lock()
	if !s.done {
		s.done = true
		s.err = err
	}
	s.mu.Unlock()
	s.cond.Broadcast()
}

// Abort is Finish: it ends the spool with err as if the copy had failed.
func (s *Spool) Abort(err error) { s.Finish(err) }

// Written returns how many bytes have been written so far.
func (s *Spool) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// Done reports whether the spool has been finished, and with which error.
func (s *Spool) Done() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done, s.err
}

// NewReader returns a reader of the spooled bytes from the start. Read
// blocks until more bytes are written and returns io.EOF after the last
// byte once the spool is finished (whatever its error: readers see exactly
// the bytes written). Close the reader when done with it early: a ring
// waits for its open readers.
func (s *Spool) NewReader() io.ReadCloser {
	r := &spoolReader{s: s}
	s.mu.Lock()
	if s.ring > 0 && s.written > s.ring {
		r.lost = true // the start was overwritten
	} else {
		s.readers[r] = struct{}{}
	}
	s.mu.Unlock()
	return r
}

type spoolReader struct {
	s    *Spool
	off  int64
	lost bool
}

func (r *spoolReader) Read(p []byte) (int, error) {
	s := r.s
	if r.lost {
		return 0, ErrSpoolClosed
	}
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
	pos := r.off
	if s.ring > 0 {
		pos = r.off % s.ring
		if int64(len(p)) > s.ring-pos {
			p = p[:s.ring-pos]
		}
	}
	n, err := s.f.ReadAt(p, pos)
	if n > 0 {
		s.mu.Lock()
		r.off += int64(n)
		s.mu.Unlock()
		if s.ring > 0 {
			s.cond.Broadcast() // room for the writer
		}
	}
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// Close stops the reader: a ring no longer waits for it.
func (r *spoolReader) Close() error {
	r.s.mu.Lock()
	delete(r.s.readers, r)
	r.s.mu.Unlock()
	r.s.cond.Broadcast()
	return nil
}
