package record

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clrdiag/clrdiag/transport"
)

// Recording file format, one file per connection named conn-NNNN.rec:
//
//	magic "clrdiag-rec1\n"
//	records: kind u8, time i64 (Unix ns), length u32, data[length]
//
// All integers are little-endian. The first record is a 'M' record holding
// JSON metadata. Kinds:
//
//	'M' metadata (JSON)       'W' bytes the client wrote
//	'R' bytes the client read 'E' the client's read hit EOF
//	'X' a read failed (text)  'w' a write failed: u32 bytes not sent, then text
//	'C' the client closed the connection
const (
	recMagic     = "clrdiag-rec1\n"
	recHeaderLen = 1 + 8 + 4
	// maxRecord bounds one record's data; larger reads and writes are
	// split. A parser rejects longer lengths before allocating.
	maxRecord = 1 << 20
)

const (
	recMeta      = 'M'
	recWrite     = 'W'
	recRead      = 'R'
	recEOF       = 'E'
	recReadErr   = 'X'
	recWriteFail = 'w'
	recClose     = 'C'
)

type record struct {
	kind byte
	time int64
	data []byte
}

// recordMeta is the JSON in a recording's 'M' record.
type recordMeta struct {
	Network string    `json:"network"`
	Address string    `json:"address"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
}

// FormatError reports a malformed recording file.
type FormatError struct {
	File   string
	Offset int64 // byte offset of the bad record in the file
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("transport: recording %s: offset %d: %s", e.File, e.Offset, e.Msg)
}

// recordReader parses records from a recording, bounding every length.
type recordReader struct {
	r    *bufio.Reader
	file string
	off  int64
	hdr  [recHeaderLen]byte
}

func newRecordReader(r io.Reader, file string) (*recordReader, error) {
	rr := &recordReader{r: bufio.NewReader(r), file: file}
	var m [len(recMagic)]byte
	if _, err := io.ReadFull(rr.r, m[:]); err != nil || string(m[:]) != recMagic {
		return nil, &FormatError{File: file, Msg: "not a clrdiag recording (bad magic)"}
	}
	rr.off = int64(len(recMagic))
	return rr, nil
}

// next returns the next record, or io.EOF at a clean end of file. The data
// slice is freshly allocated.
func (rr *recordReader) next() (record, error) {
	start := rr.off
	n, err := io.ReadFull(rr.r, rr.hdr[:])
	if err == io.EOF {
		return record{}, io.EOF
	}
	if err != nil {
		return record{}, &FormatError{File: rr.file, Offset: start, Msg: fmt.Sprintf("truncated record header (%d of %d bytes)", n, recHeaderLen)}
	}
	rec := record{kind: rr.hdr[0], time: int64(binary.LittleEndian.Uint64(rr.hdr[1:9]))}
	size := binary.LittleEndian.Uint32(rr.hdr[9:13])
	switch rec.kind {
	case recMeta, recWrite, recRead, recEOF, recReadErr, recWriteFail, recClose:
	default:
		return record{}, &FormatError{File: rr.file, Offset: start, Msg: fmt.Sprintf("unknown record kind 0x%02x", rec.kind)}
	}
	if size > maxRecord {
		return record{}, &FormatError{File: rr.file, Offset: start, Msg: fmt.Sprintf("record length %d exceeds the %d limit", size, maxRecord)}
	}
	rec.data = make([]byte, size)
	if n, err := io.ReadFull(rr.r, rec.data); err != nil {
		return record{}, &FormatError{File: rr.file, Offset: start, Msg: fmt.Sprintf("truncated record data (%d of %d bytes)", n, size)}
	}
	rr.off += recHeaderLen + int64(size)
	return rec, nil
}

// nextHeader reads the next record's header only: its kind, time and data
// length (bounded). The data must then be read or skipped.
func (rr *recordReader) nextHeader() (kind byte, t int64, size uint32, err error) {
	start := rr.off
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		return 0, 0, 0, err
	}
	kind, t, size = rr.hdr[0], int64(binary.LittleEndian.Uint64(rr.hdr[1:9])), binary.LittleEndian.Uint32(rr.hdr[9:13])
	if size > maxRecord {
		return 0, 0, 0, &FormatError{File: rr.file, Offset: start, Msg: fmt.Sprintf("record length %d exceeds the %d limit", size, maxRecord)}
	}
	rr.off += recHeaderLen
	return kind, t, size, nil
}

// skip discards n bytes of record data.
func (rr *recordReader) skip(n uint32) error {
	m, err := rr.r.Discard(int(n))
	rr.off += int64(m)
	return err
}

// Recorder saves the traffic of every connection dialed through a transport.Dialer
// whose Recorder field points to it, one file per connection in its
// directory. It is safe for concurrent use by many connections.
//
// Recording never breaks a connection: if the file cannot be written, the
// connection keeps working and the error is returned by the connection's
// Close and by Err.
type Recorder struct {
	dir  string
	next atomic.Int64

	mu  sync.Mutex
	err error
}

// NewRecorder creates dir if needed and returns a Recorder writing to it.
// The directory must not already hold a recording.
func NewRecorder(dir string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transport: create recording directory: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "conn-*.rec"))
	if err != nil {
		return nil, fmt.Errorf("transport: recording directory %s: %w", dir, err)
	}
	if len(old) > 0 {
		return nil, fmt.Errorf("transport: recording directory %s already holds a recording (%d connections); choose an empty directory", dir, len(old))
	}
	return &Recorder{dir: dir}, nil
}

// Dir returns the directory the recorder writes to.
func (r *Recorder) Dir() string { return r.dir }

// Err returns the first error met while writing any recording file.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// Wrap records conn, a connection to ep: a transport.Dialer whose Recorder
// is r calls it for each connection it opens, and so can a caller for
// connections not made by a transport.Dialer. The returned conn must be closed
// instead of conn.
func (r *Recorder) Wrap(conn net.Conn, ep transport.Endpoint) (net.Conn, error) {
	return r.wrap(conn, ep)
}

func (r *Recorder) wrap(conn net.Conn, ep transport.Endpoint) (*recordingConn, error) {
	id := r.next.Add(1)
	name := filepath.Join(r.dir, fmt.Sprintf("conn-%04d.rec", id))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create recording file: %w", err)
	}
	meta, err := json.Marshal(recordMeta{Network: ep.Network, Address: ep.Address, PID: ep.PID, Started: time.Now().UTC()})
	if err != nil {
		f.Close()
		return nil, err
	}
	c := &recordingConn{Conn: conn, rec: r, f: f, name: name}
	c.mu.Lock()
	c.writeLocked([]byte(recMagic))
	c.recordLocked(recMeta, meta)
	err = c.err
	c.mu.Unlock()
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// recordingConn is a net.Conn that appends everything it reads and writes
// to a recording file.
type recordingConn struct {
	net.Conn
	rec  *Recorder
	name string

	mu     sync.Mutex // guards f, buf, err, closed
	f      *os.File
	buf    []byte
	err    error
	closed bool
}

func (c *recordingConn) writeLocked(b []byte) {
	if c.err != nil || c.closed {
		return
	}
	if _, err := c.f.Write(b); err != nil {
		c.err = fmt.Errorf("write recording %s: %w", c.name, err)
		c.rec.fail(c.err)
	}
}

// recordLocked appends one record per maxRecord chunk of data (at least one).
func (c *recordingConn) recordLocked(kind byte, data []byte) {
	now := time.Now().UnixNano()
	for first := true; first || len(data) > 0; first = false {
		chunk := data[:min(len(data), maxRecord)]
		data = data[len(chunk):]
		c.buf = c.buf[:0]
		c.buf = append(c.buf, kind)
		c.buf = binary.LittleEndian.AppendUint64(c.buf, uint64(now))
		c.buf = binary.LittleEndian.AppendUint32(c.buf, uint32(len(chunk)))
		c.buf = append(c.buf, chunk...)
		c.writeLocked(c.buf)
	}
}

func (c *recordingConn) record(kind byte, data []byte) {
	c.mu.Lock()
	c.recordLocked(kind, data)
	c.mu.Unlock()
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.record(recRead, b[:n])
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		c.record(recEOF, nil)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, net.ErrClosed):
		// The client's own choices, not the peer's behaviour.
	default:
		c.record(recReadErr, []byte(err.Error()))
	}
	return n, err
}

func (c *recordingConn) Write(b []byte) (int, error) {
	// Record before writing, so that a reply read by another goroutine is
	// never recorded ahead of the request that caused it.
	c.record(recWrite, b)
	n, err := c.Conn.Write(b)
	if n < len(b) && err != nil {
		msg := binary.LittleEndian.AppendUint32(nil, uint32(len(b)-n))
		c.record(recWriteFail, append(msg, err.Error()...))
	}
	return n, err
}

func (c *recordingConn) Close() error {
	err := c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return err
	}
	c.recordLocked(recClose, nil)
	c.closed = true
	if cerr := c.f.Close(); cerr != nil && c.err == nil {
		c.err = fmt.Errorf("close recording %s: %w", c.name, cerr)
		c.rec.fail(c.err)
	}
	if c.err != nil {
		return errors.Join(err, c.err)
	}
	return err
}

// listRecordings returns the conn-*.rec files of dir in connection order.
func listRecordings(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "conn-") && strings.HasSuffix(n, ".rec") && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	// conn-%04d sorts by name until 9999; sort by the number to be safe.
	sortByConnNumber(names)
	return names, nil
}
