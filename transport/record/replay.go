package record

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/transport"
)

// ReplayDialer serves a recording made by a Recorder: its Dial returns the
// recorded connections one after another, in the order they were dialed.
// It is safe for concurrent use.
//
// Connections are replayed in their recorded order across each other too: a
// reply that arrived, when recorded, after the client had written something
// on another connection (the rundown and end of an EventPipe session
// arrive after StopTracing, sent on a second connection) is delivered only
// once the client has written that again.
type ReplayDialer struct {
	dir   string
	files []string

	mu      sync.Mutex
	next    int
	started []int64       // time of each file's metadata record (Unix ns)
	written []int64       // client output so far on each dialed connection
	dialed  []bool        // which files have been dialed
	marks   [][]writeMark // per file, lazily: client output by time
	wake    chan struct{} // closed and replaced when written or dialed change
}

// writeMark is the client output of a recorded connection up to a time.
type writeMark struct {
	time  int64 // time of a 'W' record
	total int64 // client bytes written up to and including it
}

// Replay opens the recording in dir. Each connection's file is parsed only
// when it is dialed, and streamed, so a long trace recording is not loaded
// into memory at once.
func Replay(dir string) (*ReplayDialer, error) {
	names, err := listRecordings(dir)
	if err != nil {
		return nil, fmt.Errorf("transport: open recording: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("transport: %s holds no recorded connections (conn-*.rec files); record with a Recorder first", dir)
	}
	d := &ReplayDialer{dir: dir, files: names, started: make([]int64, len(names)), written: make([]int64, len(names)),
		dialed: make([]bool, len(names)), marks: make([][]writeMark, len(names)), wake: make(chan struct{})}
	for i, n := range names {
		d.started[i] = metaTime(filepath.Join(dir, n))
	}
	return d, nil
}

// metaTime returns the time of a recording's metadata record, or 0.
func metaTime(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	rr, err := newRecordReader(f, filepath.Base(path))
	if err != nil {
		return 0
	}
	rec, err := rr.next()
	if err != nil || rec.kind != recMeta {
		return 0
	}
	return rec.time
}

// scanWrites returns the client output marks of a recording, reading past
// the data of other records without keeping it.
func scanWrites(path string) []writeMark {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rr, err := newRecordReader(f, filepath.Base(path))
	if err != nil {
		return nil
	}
	var marks []writeMark
	var total int64
	for {
		kind, t, size, err := rr.nextHeader()
		if err != nil {
			return marks
		}
		if kind == recWrite {
			total += int64(size)
			marks = append(marks, writeMark{time: t, total: total})
		}
		if err := rr.skip(size); err != nil {
			return marks
		}
	}
}

// gate reports whether a reply recorded at time t on connection idx may be
// delivered: every other connection dialed before t must have been dialed
// again and its client must have written what it had written by t. When
// not, it returns a channel closed at the next change.
func (d *ReplayDialer) gate(idx int, t int64) (bool, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.files {
		if k == idx || d.started[k] == 0 || d.started[k] >= t {
			continue
		}
		if d.marks[k] == nil {
			d.marks[k] = scanWrites(filepath.Join(d.dir, d.files[k]))
			if d.marks[k] == nil {
				d.marks[k] = []writeMark{}
			}
		}
		var need int64
		for _, m := range d.marks[k] {
			if m.time >= t {
				break
			}
			need = m.total
		}
		if need > 0 && (!d.dialed[k] || d.written[k] < need) {
			return false, d.wake
		}
	}
	return true, nil
}

// progress records the client output of connection idx.
func (d *ReplayDialer) progress(idx int, written int64) {
	d.mu.Lock()
	d.written[idx] = written
	close(d.wake)
	d.wake = make(chan struct{})
	d.mu.Unlock()
}

// Len returns the number of recorded connections.
func (d *ReplayDialer) Len() int { return len(d.files) }

// Remaining returns how many recorded connections have not been dialed yet.
func (d *ReplayDialer) Remaining() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.files) - d.next
}

// Dial returns a net.Conn that replays the next recorded connection. Writes
// must match what the recorded client sent, else they fail with a
// *MismatchError naming the offset; reads return the recorded replies, each
// only after the client has sent what preceded it in the recording.
func (d *ReplayDialer) Dial(ctx context.Context) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, &transport.OpError{Op: "replay", Addr: d.dir, Err: err}
	}
	d.mu.Lock()
	if d.next >= len(d.files) {
		d.mu.Unlock()
		return nil, &transport.OpError{Op: "replay", Addr: d.dir, Err: fmt.Errorf(
			"dial number %d, but the recording holds only %d connections; the client makes more requests than it did when recorded",
			len(d.files)+1, len(d.files))}
	}
	idx := d.next
	name := d.files[idx]
	d.next++
	d.dialed[idx] = true
	close(d.wake)
	d.wake = make(chan struct{})
	d.mu.Unlock()

	path := filepath.Join(d.dir, name)
	f, err := os.Open(path)
	if err != nil {
		return nil, &transport.OpError{Op: "replay", Addr: path, Err: err}
	}
	rr, err := newRecordReader(f, name)
	if err == nil {
		var c *replayConn
		c, err = newReplayConn(f, rr, name)
		if err == nil {
			c.gate = func(t int64) (bool, <-chan struct{}) { return d.gate(idx, t) }
			c.progress = func(n int64) { d.progress(idx, n) }
			return c, nil
		}
	}
	f.Close()
	return nil, &transport.OpError{Op: "replay", Addr: path, Err: err}
}

// MismatchError reports that a client wrote, during replay, bytes that
// differ from what it wrote when the connection was recorded.
type MismatchError struct {
	File   string // recording file, e.g. conn-0002.rec
	Offset int64  // offset in the client's output of the first differing byte
	Want   []byte // recorded bytes from Offset (at most 16); empty: the recording ends there
	Got    []byte // bytes the client wrote from Offset (at most 16)
}

func (e *MismatchError) Error() string {
	if len(e.Want) == 0 {
		return fmt.Sprintf("transport: replay %s: client wrote more than the recording holds: extra bytes at offset %d start % x",
			e.File, e.Offset, e.Got)
	}
	return fmt.Sprintf("transport: replay %s: client output differs from the recording at offset %d: got % x, recorded % x",
		e.File, e.Offset, e.Got, e.Want)
}

type replayAddr string

func (a replayAddr) Network() string { return "replay" }
func (a replayAddr) String() string  { return string(a) }

// replayConn streams one recording. Records are read from the file on demand:
// 'W' data is queued as expected client output, 'R' data as replies, each
// reply tagged with how much client output must precede it.
type replayConn struct {
	f      io.Closer
	rr     *recordReader
	name   string
	remote replayAddr

	mu        sync.Mutex
	wake      chan struct{} // closed and replaced on every state change
	sendQ     []byte        // expected client output not yet written
	sendBase  int64         // client output offset of sendQ[0]
	recvQ     []reply
	lastKind  byte  // kind of the last record read
	fileDone  bool  // no more records
	fileErr   error // sticky parse error
	mismatch  error // sticky write mismatch
	writeFail *replayFailure
	closed    bool
	rdl, wdl  time.Time

	// gate, when set, holds back a reply recorded at a time until the
	// client's other connections have caught up with it (ReplayDialer.gate);
	// progress reports this connection's client output.
	gate     func(t int64) (bool, <-chan struct{})
	progress func(written int64)
}

type reply struct {
	after int64  // client output that precedes this reply
	time  int64  // when it was recorded (Unix ns)
	data  []byte // nil with eof or err set
	eof   bool
	err   string
}

type replayFailure struct {
	at  int64 // client output offset where the recorded write failed
	msg string
}

func newReplayConn(f io.Closer, rr *recordReader, name string) (*replayConn, error) {
	c := &replayConn{f: f, rr: rr, name: name, wake: make(chan struct{})}
	rec, err := rr.next()
	if err != nil || rec.kind != recMeta {
		if err == nil || err == io.EOF {
			err = &FormatError{File: name, Offset: int64(len(recMagic)), Msg: "first record is not metadata"}
		}
		return nil, err
	}
	var meta recordMeta
	if err := json.Unmarshal(rec.data, &meta); err != nil {
		return nil, &FormatError{File: name, Offset: int64(len(recMagic)), Msg: "bad metadata: " + err.Error()}
	}
	c.remote = replayAddr(meta.Network + ":" + meta.Address)
	return c, nil
}

// sentTotal is the client output offset at the end of everything queued.
func (c *replayConn) sentTotal() int64 { return c.sendBase + int64(len(c.sendQ)) }

// advanceLocked reads one more record into the queues. It returns false when
// the file is exhausted or broken.
func (c *replayConn) advanceLocked() bool {
	if c.fileDone || c.fileErr != nil {
		return false
	}
	rec, err := c.rr.next()
	if err == io.EOF {
		c.fileDone = true
		return false
	}
	if err != nil {
		c.fileErr = err
		return false
	}
	c.lastKind = rec.kind
	switch rec.kind {
	case recWrite:
		c.sendQ = append(c.sendQ, rec.data...)
	case recRead:
		c.recvQ = append(c.recvQ, reply{after: c.sentTotal(), time: rec.time, data: rec.data})
	case recEOF:
		c.recvQ = append(c.recvQ, reply{after: c.sentTotal(), time: rec.time, eof: true})
	case recReadErr:
		c.recvQ = append(c.recvQ, reply{after: c.sentTotal(), time: rec.time, err: string(rec.data)})
	case recWriteFail:
		if len(rec.data) < 4 {
			c.fileErr = &FormatError{File: c.name, Msg: "short write-failure record"}
			return false
		}
		// The preceding 'W' records hold the whole buffer; the last
		// `unsent` bytes of it never went out.
		unsent := int64(binary.LittleEndian.Uint32(rec.data))
		if unsent > int64(len(c.sendQ)) {
			c.fileErr = &FormatError{File: c.name, Msg: fmt.Sprintf(
				"write-failure record claims %d unsent bytes, more than the %d pending", unsent, len(c.sendQ))}
			return false
		}
		c.sendQ = c.sendQ[:int64(len(c.sendQ))-unsent]
		if c.writeFail == nil {
			c.writeFail = &replayFailure{at: c.sentTotal(), msg: string(rec.data[4:])}
		}
	case recClose, recMeta:
	}
	return true
}

func (c *replayConn) broadcastLocked() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// wait blocks until the state changes (or other closes), the deadline
// passes or ctx-like close. It is called with c.mu held and returns with it
// held.
func (c *replayConn) waitLocked(deadline time.Time, other <-chan struct{}) error {
	ch := c.wake
	c.mu.Unlock()
	defer c.mu.Lock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-other:
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

func (c *replayConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.closed {
			return 0, net.ErrClosed
		}
		if !c.rdl.IsZero() && !time.Now().Before(c.rdl) {
			return 0, os.ErrDeadlineExceeded
		}
		if len(c.recvQ) == 0 && c.advanceLocked() {
			continue
		}
		if len(c.recvQ) == 0 && c.fileErr != nil {
			return 0, c.fileErr
		}
		if len(c.recvQ) > 0 && c.recvQ[0].after <= c.sendBase {
			r := &c.recvQ[0]
			if c.gate != nil {
				if ok, other := c.gate(r.time); !ok {
					if err := c.waitLocked(c.rdl, other); err != nil {
						return 0, err
					}
					continue
				}
			}
			switch {
			case r.eof:
				return 0, io.EOF
			case r.err != "":
				return 0, fmt.Errorf("transport: replayed read error: %s", r.err)
			}
			n := copy(b, r.data)
			r.data = r.data[n:]
			if len(r.data) == 0 {
				c.recvQ = c.recvQ[1:]
			}
			return n, nil
		}
		// Either the next reply waits for client output, or the recording
		// ends without EOF (the recorded client closed first): block, as the
		// real peer would, until Write, Close or the deadline.
		if err := c.waitLocked(c.rdl, nil); err != nil {
			return 0, err
		}
	}
}

func (c *replayConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if !c.wdl.IsZero() && !time.Now().Before(c.wdl) {
		return 0, os.ErrDeadlineExceeded
	}
	if c.mismatch != nil {
		return 0, c.mismatch
	}
	// Queue enough expected output, and read past the last 'W' record so
	// that a write-failure record that follows it is seen.
	for (len(c.sendQ) < len(b) || c.lastKind == recWrite) && c.advanceLocked() {
	}
	if c.fileErr != nil && len(c.sendQ) < len(b) {
		return 0, c.fileErr
	}
	n := min(len(c.sendQ), len(b))
	fail := c.writeFail != nil && c.writeFail.at <= c.sendBase+int64(n)
	if fail {
		n = int(c.writeFail.at - c.sendBase)
	}
	if i := mismatchAt(c.sendQ[:n], b[:n]); i >= 0 {
		c.mismatch = &MismatchError{File: c.name, Offset: c.sendBase + int64(i),
			Want: excerpt(c.sendQ[i:]), Got: excerpt(b[i:])}
		n = i
	} else if n < len(b) && !fail {
		c.mismatch = &MismatchError{File: c.name, Offset: c.sendBase + int64(n), Got: excerpt(b[n:])}
	}
	c.sendQ = c.sendQ[n:]
	c.sendBase += int64(n)
	c.broadcastLocked()
	if c.progress != nil && n > 0 {
		c.progress(c.sendBase)
	}
	switch {
	case c.mismatch != nil:
		return n, c.mismatch
	case fail:
		msg := c.writeFail.msg
		c.writeFail = nil
		return n, fmt.Errorf("transport: replayed write error: %s", msg)
	}
	return n, nil
}

// mismatchAt returns the index of the first differing byte of a and b (of
// equal length), or -1.
func mismatchAt(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	i := 0
	for a[i] == b[i] {
		i++
	}
	return i
}

func excerpt(b []byte) []byte { return slices.Clone(b[:min(len(b), 16)]) }

func (c *replayConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.closed = true
	c.broadcastLocked()
	return c.f.Close()
}

func (c *replayConn) LocalAddr() net.Addr  { return replayAddr("replay:" + c.name) }
func (c *replayConn) RemoteAddr() net.Addr { return c.remote }

func (c *replayConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl, c.wdl = t, t
	c.broadcastLocked()
	c.mu.Unlock()
	return nil
}

func (c *replayConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.broadcastLocked()
	c.mu.Unlock()
	return nil
}

func (c *replayConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.broadcastLocked()
	c.mu.Unlock()
	return nil
}

// sortByConnNumber sorts conn-N.rec names by N.
func sortByConnNumber(names []string) {
	num := func(s string) int {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, "conn-"), ".rec"))
		if err != nil {
			return -1
		}
		return n
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := num(a) - num(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
}
