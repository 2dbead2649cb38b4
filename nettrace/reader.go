package nettrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// ReaderConfig tunes a Reader. The zero value is the default.
type ReaderConfig struct {
	// MaxBlockSize bounds the size of one block (default 64 MiB). Larger
	// blocks are reported as damage rather than allocated.
	MaxBlockSize int
	// BufferSize is the size of the read buffer over the source (default
	// 4 KiB: it holds block headers and small blocks; the rest of a larger
	// block is read straight into the block buffer). The buffer starts at
	// 512 bytes (or BufferSize if less) and grows to BufferSize once the
	// stream has passed BufferSize bytes, so a stream smaller than that,
	// such as a trace of a few events, never allocates the full buffer.
	BufferSize int

	// The limits below bound what a Reader keeps between blocks. A file's
	// size bounds them already; a reader of a live session that may run
	// for days against a peer it does not trust (the monitor's counters
	// sessions) sets them, and a peer that exceeds one gets a *FormatError
	// instead of unbounded memory. Zero means no limit.

	// MaxMetadata bounds the metadata records kept.
	MaxMetadata int
	// MaxStackBytes bounds the stacks kept for one sequence-point region
	// (without it: 2 GiB).
	MaxStackBytes int
	// MaxThreads bounds the capture threads whose sequence numbers are
	// tracked to detect dropped events; when a new thread would exceed it
	// the tracked set starts over (gaps across the reset are not counted).
	MaxThreads int
}

// Stats counts what a Reader has read so far.
type Stats struct {
	Events         int64 // events delivered by ReadEvent
	Metadata       int64 // metadata records
	Stacks         int64 // stack records (interned stacks; inline NetPerf stacks count too)
	SequencePoints int64
	// LastSequencePoint is the timestamp (ticks) of the latest sequence
	// point: no event read after it is older.
	LastSequencePoint int64
	// DroppedEvents is the number of events the runtime assigned a sequence
	// number to but never wrote (buffers full), found from gaps in the
	// per-thread sequence numbers and from sequence points.
	DroppedEvents uint64
	Blocks        int64 // blocks (objects) read, including the trace header
	Bytes         int64 // bytes consumed from the source
	// Complete is true once the end-of-stream marker has been read.
	Complete bool
	// Skipped is the number of events read but not delivered because the
	// Reader's skip function (SetSkip) left them out; Events does not count
	// them. Without one it is 0.
	Skipped int64
}

// Reader decodes a nettrace or netperf stream event by event. It needs only
// an io.Reader, so it works on files, pipes and live session sockets alike.
//
// A Reader is not safe for concurrent use. Memory use is bounded by the
// largest block plus the stacks and label lists of one sequence-point
// region and the metadata of the trace.
type Reader struct {
	br  *bufio.Reader
	off int64 // bytes consumed from br
	// in is the source under br while br is its small starting buffer,
	// and after growBuffer when that buffer held bytes.
	in  startSource
	cfg ReaderConfig
	hdr Header

	v6      bool
	netperf bool
	done    bool // end-of-stream marker read
	// compressed: the current event block's headers are compressed
	// (here, in the padding of the bools above).
	compressed bool
	// small: br is the small starting buffer (see growBuffer).
	small bool
	err   error // sticky error (returned after pending events)

	goodEnd int64    // stream offset just past the last complete block
	buf     []byte   // reused block buffer
	scratch [64]byte // small reads (escapes through io.Reader, so kept here)

	// current event block
	blk    []byte
	blkOff int64 // stream offset of blk[0]
	pos    int
	blkErr error // error to return once blk is exhausted (partial block)
	st     evState

	// metadata by id: dense slice with a map for ids beyond it; the
	// records of the dense ids that SetSkip's function leaves out are in
	// skipMeta instead of meta (those in metaMap have Metadata.skip).
	meta    []*Metadata
	metaMap map[uint32]*Metadata

	// stacks of the current sequence-point region
	arena     []byte
	stacks    [][]byte // index = id - stackBase; slices of arena
	stackBase uint32
	stackMap  map[uint32][]byte // ids that do not extend stacks
	// stackRegion is Event.StackRegion: bumped whenever an id may change
	// meaning.
	stackRegion uint64

	// dropped-event tracking per capture thread: a direct-mapped cache in
	// front of a map, so interleaved threads rarely touch the map.
	seqs    map[uint64]uint32
	seqC    [seqCacheSize]seqEntry
	curCap  uint64
	curSeq  uint32
	curLive bool

	// V6 tables
	threads    map[uint64]*Thread
	labels     map[uint32]*LabelList
	lastThrIdx uint64
	lastThrOS  uint64
	lastThrOK  bool

	stats Stats

	// SetSkip's function; skipMeta holds the records of dense ids that it
	// leaves out, by id (nil in meta: ReadEvent's fast path tests for
	// them only when meta has no record); skipMin and skipMax are the
	// time range of the events left out (skipMin > skipMax: none), and
	// skipTS the timestamp of the event the general decoder last left out
	// (it returns errFiltered). They are fields of the Reader rather than
	// of a struct it points to: the fast path's extra pointer cost 0.4M
	// instructions per objver4 decode in register moves, skipped or not.
	skipFn           func(*Metadata) bool
	skipMeta         []*Metadata
	skipMin, skipMax int64
	skipTS           int64

	// metaIdx numbers metadata records (Metadata.Index); the readers of a
	// ReadParallel pipeline share their main Reader's counter.
	metaIdx    *atomic.Int64
	metaIdxOwn atomic.Int64

	// Parallel reading (parallel.go). role says what this Reader does in a
	// ReadParallel pipeline; the zero value is a plain serial Reader.
	role readerRole
	// splitter: actions for the merging goroutine, in stream order, and
	// the copy-on-write generations of the tables workers read: pubGen
	// counts the event blocks handed out, and a table whose generation is
	// behind it is shared, so it is copied before it changes.
	pending                                        []ordAction
	pubGen, metaGen, stackGen, labelGen, threadGen uint64
	// worker and replay: the first sequence number of each capture thread
	// in the block; needOrder is set when the block defines metadata.
	firsts    []seqMark
	needOrder bool
	// replay: metadata records defined inside the event block.
	newDefs []*Metadata
}

// seqCacheSize is the number of entries of the sequence-number cache. 32
// rather than 64 keeps the Reader in the 1,536-byte size class (the cache
// is half of it, allocated and cleared by every NewReader: a trace of a
// few events pays for it); the real captures' map accesses behind the
// cache are the same with 32 (net6.0.9, allocTrace, VoiceMemo: callgrind).
const seqCacheSize = 32

type seqEntry struct {
	ct   uint64
	seq  uint32
	used bool
}

func seqSlot(ct uint64) int { return int((ct>>2 ^ ct>>9 ^ ct) & (seqCacheSize - 1)) }

// evState is the running state of compressed event headers (reset per block).
type evState struct {
	metaID    uint32
	seq       uint32
	capThread uint64
	proc      uint32
	thread    uint64
	stackID   uint32
	ts        uint64
	act, rel  GUID
	label     uint32
	size      uint32
}

// Thread is an entry of a V6 trace's thread table.
type Thread struct {
	Index       uint64
	Name        string
	OSProcessID uint64
	OSThreadID  uint64
	KeyValues   map[string]string
}

// LabelList is a V6 label list; events point to one by LabelListID. It is
// valid until the next sequence point.
type LabelList struct {
	ActivityID        GUID
	RelatedActivityID GUID
	TraceID           [16]byte
	SpanID            uint64
	// Overrides of the metadata values for the events using this list;
	// nil when absent.
	Opcode   *uint8
	Keywords *uint64
	Level    *uint8
	Version  *uint8
	// Strings and Ints hold the key/value labels.
	Strings map[string]string
	Ints    map[string]int64
}

// NewReader reads and checks the stream header and the trace header block,
// and returns a Reader positioned before the first event. It returns an
// error wrapping ErrUnsupportedFormat for NetPerf V1/V2 and V7+ streams and a
// *FormatError for anything else it cannot read.
func NewReader(r io.Reader) (*Reader, error) {
	return NewReaderConfig(r, ReaderConfig{})
}

// NewReaderConfig is NewReader with explicit settings.
func NewReaderConfig(r io.Reader, cfg ReaderConfig) (*Reader, error) {
	if cfg.MaxBlockSize <= 0 {
		cfg.MaxBlockSize = defaultMaxBlockSize
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = 4 << 10
	}
	rd := &Reader{
		cfg:     cfg,
		seqs:    make(map[uint64]uint32),
		metaMap: make(map[uint32]*Metadata),
		skipMin: math.MaxInt64, skipMax: math.MinInt64,
	}
	if cfg.BufferSize > startBufferSize {
		rd.in.src, rd.small = r, true
		rd.br = bufio.NewReaderSize(&rd.in, startBufferSize)
	} else {
		rd.br = bufio.NewReaderSize(r, cfg.BufferSize)
	}
	rd.metaIdx = &rd.metaIdxOwn
	if err := rd.readStreamHeader(); err != nil {
		return nil, err
	}
	rd.goodEnd = rd.off
	rd.stats.Bytes = rd.off
	return rd, nil
}

// Header returns the trace header.
func (r *Reader) Header() Header { return r.hdr }

// SetSkip makes ReadEvent (and All) pass over the events whose metadata
// record skip reports true for, and deliver the others as without it. A
// consumer that drops most kinds of events (a profile of CPU samples) so
// saves filling an Event and a call for each event it would drop.
//
// skip is called once per metadata record (when the record is read, or
// here for the records read already), never per event; nil skips nothing,
// the default. A skipped event is decoded as far as a delivered one is
// checked, so nothing else changes: Stats (except that Stats.Skipped
// counts it and Stats.Events does not), sequence numbers and dropped
// events, stack ids, and the errors and their offsets (a truncated or
// damaged trace yields every complete event it does not skip, then the
// same error). SkippedTimeRange gives the skipped events' time range.
//
// ReadParallel reads a Reader with a skip function on the calling
// goroutine alone.
func (r *Reader) SetSkip(skip func(md *Metadata) bool) {
	r.skipFn = skip
	r.ownMeta()
	for id := range max(len(r.meta), len(r.skipMeta)) {
		if md := r.lookupMeta(uint32(id)); md != nil {
			md.skip = skip != nil && skip(md)
			r.setMeta(md) // into meta or skipMeta
		}
	}
	for _, md := range r.metaMap {
		md.skip = skip != nil && skip(md)
	}
}

// SkippedTimeRange returns the least and the greatest timestamp (ticks) of
// the events SetSkip's function left out so far; ok is false when it left
// out none.
func (r *Reader) SkippedTimeRange() (minTS, maxTS int64, ok bool) {
	return r.skipMin, r.skipMax, r.skipMin <= r.skipMax
}

// skipped records the timestamp of an event left out.
func (r *Reader) skipped(ts int64) {
	r.stats.Skipped++
	if ts < r.skipMin {
		r.skipMin = ts
	}
	if ts > r.skipMax {
		r.skipMax = ts
	}
}

// Stats returns counters of what has been read so far.
func (r *Reader) Stats() Stats {
	s := r.stats
	s.Bytes = r.off
	return s
}

// InputOffset is the stream offset just past the last event returned by
// ReadEvent (useful to locate an event in a file when debugging).
func (r *Reader) InputOffset() int64 { return r.blkOff + int64(r.pos) }

// Thread returns an entry of the V6 thread table.
func (r *Reader) Thread(index uint64) (Thread, bool) {
	t, ok := r.threads[index]
	if !ok {
		return Thread{}, false
	}
	return *t, true
}

// Metadata returns the metadata record with the given id, or nil.
func (r *Reader) Metadata(id uint32) *Metadata { return r.lookupMeta(id) }

// All iterates over the remaining events. The yielded *Event is reused for
// every event (see Event for how long its slices stay valid). Iteration stops
// after yielding a non-nil error; a clean end yields no error.
func (r *Reader) All() iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		var ev Event
		for {
			err := r.ReadEvent(&ev)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(&ev, nil) {
				return
			}
		}
	}
}

// ---------------------------------------------------------------------------
// low-level input

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

// readBlock reads n bytes into r.buf, growing it no faster than data
// arrives, so a damaged length cannot make the reader allocate much more
// than the stream holds. On a short read it returns the bytes it got and a
// truncation error.
func (r *Reader) readBlock(n int, what, what2 string) ([]byte, error) {
	if r.small && r.off >= int64(r.cfg.BufferSize) {
		r.growBuffer()
	}
	// The buffer keeps fastMargin bytes of capacity past the block for
	// ReadEvent's fast path.
	if n+fastMargin <= cap(r.buf) {
		b := r.buf[:n]
		m, err := io.ReadFull(r.br, b)
		r.off += int64(m)
		if err != nil {
			return b[:m], r.ioErr(err, what+what2, n, m)
		}
		return b, nil
	}
	buf := r.buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), 1<<20))
		if cap(buf)-len(buf) < chunk+fastMargin {
			nb := make([]byte, len(buf), len(buf)+chunk+fastMargin)
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r.br, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		r.off += int64(m)
		if err != nil {
			r.buf = buf[:0]
			return buf, r.ioErr(err, what+what2, n, len(buf))
		}
	}
	r.buf = buf
	return buf, nil
}

// ---------------------------------------------------------------------------
// stream header

func (r *Reader) readStreamHeader() error {
	var m [8]byte
	if err := r.readSmall(m[:], "stream magic"); err != nil {
		return err
	}
	if string(m[:]) == magicNettrace {
		v, err := r.readU32("serialization header", "")
		if err != nil {
			return err
		}
		switch v {
		case 0:
			return r.readV6Header()
		case uint32(len(fastSerMagic)):
			var s [len(fastSerMagic)]byte
			if err := r.readSmall(s[:], "FastSerialization magic"); err != nil {
				return err
			}
			if string(s[:]) != fastSerMagic {
				return r.errAt(12, nil, "expected %q after the Nettrace magic, found %q", fastSerMagic, s[:])
			}
			r.hdr.Format = FormatNetTrace
			return r.readTraceObject()
		default:
			return r.errAt(8, nil, "expected 0 (V6) or 20 (V4) after the Nettrace magic, found %d", v)
		}
	}
	if binary.LittleEndian.Uint32(m[:4]) == uint32(len(fastSerMagic)) && string(m[4:]) == fastSerMagic[:4] {
		var s [len(fastSerMagic) - 4]byte
		if err := r.readSmall(s[:], "FastSerialization magic"); err != nil {
			return err
		}
		if string(s[:]) != fastSerMagic[4:] {
			return r.errAt(8, nil, "expected %q, found %q", fastSerMagic, append(m[4:], s[:]...))
		}
		r.hdr.Format = FormatNetPerf
		r.netperf = true
		return r.readTraceObject()
	}
	return r.errAt(0, nil, "not a nettrace or netperf stream: it starts with % x, expected \"Nettrace\" or a FastSerialization header; check that the file is an EventPipe trace (.nettrace/.netperf)", m[:])
}

// objectType reads a FastSerialization object header and its type and
// returns the type name and version. It returns io.EOF at the end tag.
func (r *Reader) readObjectHeader() (name string, version int32, err error) {
	start := r.off
	tag, err := r.br.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", 0, r.errAt(r.off, errTruncated, "expected the next block or the end-of-stream tag")
		}
		return "", 0, r.ioErr(err, "object tag", 1, 0)
	}
	r.off++
	if tag == tagNullReference {
		return "", 0, io.EOF
	}
	if tag != tagBeginObject && tag != tagBeginPrivateObject {
		return "", 0, r.errAt(start, nil, "expected an object start tag (4 or 5) or the end-of-stream tag (1), found %d", tag)
	}
	h := r.scratch[:14] // tag, null ref, version, min version, name length
	if err := r.readSmall(h, "object type header"); err != nil {
		return "", 0, err
	}
	if (h[0] != tagBeginObject && h[0] != tagBeginPrivateObject) || h[1] != tagNullReference {
		return "", 0, r.errAt(start+1, nil, "expected a type object (tags 4/5 then 1), found % x", h[:2])
	}
	version = int32(binary.LittleEndian.Uint32(h[2:]))
	n := int32(binary.LittleEndian.Uint32(h[10:]))
	if n < 0 || n > 256 {
		return "", 0, r.errAt(r.off-4, nil, "object type name length %d is out of range (0..256)", n)
	}
	// Known names fit the scratch buffer; a longer one (up to 256 bytes)
	// gets its own, rather than growing every Reader for it.
	var nb []byte
	if int(n) <= len(r.scratch) {
		nb = r.scratch[:n]
	} else {
		nb = make([]byte, n)
	}
	if err := r.readSmall(nb, "object type name"); err != nil {
		return "", 0, err
	}
	if err := r.expectEnd("type object"); err != nil {
		return "", 0, err
	}
	switch string(nb) { // known names without allocating
	case objEventBlock:
		return objEventBlock, version, nil
	case objMetadataBlock:
		return objMetadataBlock, version, nil
	case objStackBlock:
		return objStackBlock, version, nil
	case objSPBlock:
		return objSPBlock, version, nil
	}
	return string(nb), version, nil
}

func (r *Reader) expectEnd(what string) error {
	off := r.off
	b, err := r.readByte("end of ", what)
	if err != nil {
		return err
	}
	if b != tagEndObject {
		return r.errAt(off, nil, "expected the end-of-object tag (6) after the %s, found %d", what, b)
	}
	return nil
}

func (r *Reader) readTraceObject() error {
	start := r.off
	name, version, err := r.readObjectHeader()
	if err == io.EOF {
		return r.errAt(start, nil, "expected the Trace object, found the end-of-stream tag")
	}
	if err != nil {
		return err
	}
	switch {
	case name == objLegacyTrace:
		return fmt.Errorf("nettrace: NetPerf version %d (written by .NET Core 2.0) is an %w; only NetPerf V3 and NetTrace V4-V6 are decoded — record the trace again with .NET Core 2.1 or later", version, ErrUnsupportedFormat)
	case name != objTrace:
		return r.errAt(start, nil, "expected the Trace object first, found %q", name)
	case r.netperf && version != 3, !r.netperf && version != 4:
		// Every NetPerf V3 writes Trace version 3 and every NetTrace V4/V5
		// version 4 (V6 has its own header; NetPerf V1/V2 name the object
		// differently): another number is damage, not a format.
		kind, want := "NetTrace", int32(4)
		if r.netperf {
			kind, want = "NetPerf", 3
		}
		if version > want {
			// As TraceEvent, refuse what may be a newer writer.
			return fmt.Errorf("nettrace: the %s Trace object has version %d, newer than the %d every known writer puts (a damaged header, or a newer format): %w",
				kind, version, want, ErrUnsupportedFormat)
		}
		return r.errAt(start+3, nil, "the %s Trace object has version %d where every writer puts %d: the header is damaged", kind, version, want)
	}
	var b [traceObjectSize]byte
	if err := r.readSmall(b[:], "Trace object"); err != nil {
		return err
	}
	r.hdr.Version = int(version)
	r.parseTraceCommon(b[:])
	r.hdr.ProcessID = int(int32(binary.LittleEndian.Uint32(b[36:])))
	r.hdr.ProcessorCount = int(int32(binary.LittleEndian.Uint32(b[40:])))
	r.hdr.ExpectedCPUSamplingRate = int(int32(binary.LittleEndian.Uint32(b[44:])))
	if err := r.checkPointerSize(start); err != nil {
		return err
	}
	r.stats.Blocks++
	return r.expectEnd("Trace object")
}

// parseTraceCommon decodes the first 36 bytes shared by all trace headers.
func (r *Reader) parseTraceCommon(b []byte) {
	var f [8]int
	for i := range f {
		f[i] = int(int16(binary.LittleEndian.Uint16(b[i*2:])))
	}
	// year, month, day-of-week, day, hour, minute, second, millisecond;
	// clamp defensively: some writers produce out-of-range fields.
	ms := min(max(f[7], 0), 999)
	r.hdr.SyncTimeUTC = time.Date(f[0], time.Month(f[1]), f[3], f[4], f[5], f[6], ms*1e6, time.UTC)
	r.hdr.SyncTimeTicks = int64(binary.LittleEndian.Uint64(b[16:]))
	r.hdr.TickFrequency = int64(binary.LittleEndian.Uint64(b[24:]))
	r.hdr.PointerSize = int(int32(binary.LittleEndian.Uint32(b[32:])))
}

func (r *Reader) checkPointerSize(off int64) error {
	if r.hdr.PointerSize != 4 && r.hdr.PointerSize != 8 {
		return r.errAt(off, nil, "trace header gives pointer size %d; expected 4 or 8", r.hdr.PointerSize)
	}
	return nil
}

func (r *Reader) readV6Header() error {
	var b [8]byte
	if err := r.readSmall(b[:], "V6 version"); err != nil {
		return err
	}
	major := binary.LittleEndian.Uint32(b[:])
	minor := binary.LittleEndian.Uint32(b[4:])
	if major != 6 {
		if major > 6 {
			return fmt.Errorf("nettrace: NetTrace major version %d is an %w (this reader knows versions 3 to 6); update clrdiag", major, ErrUnsupportedFormat)
		}
		return r.errAt(12, nil, "V6-style header with major version %d; expected 6", major)
	}
	r.v6 = true
	r.hdr.Format = FormatNetTrace
	r.hdr.Version = 6
	r.hdr.MinorVersion = int(minor)
	r.threads = make(map[uint64]*Thread)
	start := r.off
	kind, body, err := r.readV6Block()
	if err != nil {
		return err
	}
	if kind != v6Trace {
		return r.errAt(start, nil, "expected the Trace block first, found block kind %d", kind)
	}
	return r.parseV6Trace(body, start+4)
}

func (r *Reader) parseV6Trace(b []byte, off int64) error {
	c := cursor{b: b}
	if c.need(36) {
		r.parseTraceCommon(b)
		c.p = 36
	}
	n := c.u32()
	if c.err == nil && int64(n)*2 > int64(c.remaining()) {
		return r.errAt(off+36, nil, "trace block claims %d key/value pairs in %d bytes", n, c.remaining())
	}
	kv := make(map[string]string, min(n, 64)) // grows with what is parsed
	for i := uint32(0); i < n && c.err == nil; i++ {
		k := c.str8()
		v := c.str8()
		kv[k] = v
	}
	if c.err != nil {
		return r.errAt(off+int64(c.p), c.err, "trace block")
	}
	r.hdr.KeyValues = kv
	atoi := func(k string) int {
		var v int
		fmt.Sscan(kv[k], &v)
		return v
	}
	r.hdr.ProcessID = atoi("ProcessId")
	r.hdr.ProcessorCount = atoi("HardwareThreadCount")
	r.hdr.ExpectedCPUSamplingRate = atoi("ExpectedCPUSamplingRate")
	r.stats.Blocks++
	return r.checkPointerSize(off)
}

// readV6Block reads one V6 block header and body.
func (r *Reader) readV6Block() (kind int, body []byte, err error) {
	start := r.off
	x, err := r.readU32("block header", "")
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && fe.Truncated() && r.off == start {
			fe.Msg = "expected the next block or the end-of-stream block"
		}
		return 0, nil, err
	}
	size := int(x & 0xFFFFFF)
	kind = int(x >> 24)
	if size > r.cfg.MaxBlockSize {
		return kind, nil, r.errAt(start, nil, "block of %d bytes exceeds the limit of %d", size, r.cfg.MaxBlockSize)
	}
	what := "unknown"
	if kind < len(v6BlockNames) {
		what = v6BlockNames[kind]
	}
	body, err = r.readBlock(size, what, " block")
	return kind, body, err
}

// ---------------------------------------------------------------------------
// block dispatch

// nextBlock reads blocks until an event block with data is current. It
// returns io.EOF after the end-of-stream marker.
func (r *Reader) nextBlock() error {
	if r.v6 {
		return r.nextBlockV6()
	}
	for {
		name, sz, ok := r.peekBlockHeader()
		if !ok {
			var err error
			if name, sz, err = r.readBlockHeader(); err != nil {
				return err
			}
		}
		boff := r.off
		body, rerr := r.readBlock(int(sz), name, "")
		r.stats.Blocks++
		if rerr != nil && name != objEventBlock {
			return rerr
		}
		var err error
		switch name {
		case objEventBlock:
			if r.netperf {
				r.startBlock(body, boff, false)
			} else if err := r.startEventBlock(body, boff, rerr); err != nil {
				return err
			}
			r.blkErr = rerr
			if rerr == nil {
				if err := r.expectEnd(name); err != nil {
					r.blkErr = err
				} else {
					r.goodEnd = r.off
				}
			}
			return nil
		case objMetadataBlock:
			err = r.parseMetadataBlock(body, boff)
		case objStackBlock:
			err = r.parseStackBlock(body, boff)
		case objSPBlock:
			err = r.parseSPBlockV4(body, boff)
		}
		if err != nil {
			return err
		}
		if err := r.expectEnd(name); err != nil {
			return err
		}
		r.goodEnd = r.off
	}
}

// peekBlockHeader reads the header of a well-formed V4 block (object and
// type tags, version, type name, size, padding) from the read buffer in one
// step, when the buffer holds it. It returns ok false, having consumed
// nothing, when it does not or anything is unusual; readBlockHeader then
// reads the header piece by piece and says what is wrong.
func (r *Reader) peekBlockHeader() (name string, size uint32, ok bool) {
	const fixed = 15 // object tag, type tags, version, minimum version, name length
	// The first byte is needed anyway (this may wait for it, as reading
	// piece by piece would); then only what the buffer holds.
	if _, err := r.br.Peek(1); err != nil {
		return "", 0, false
	}
	b, _ := r.br.Peek(min(r.br.Buffered(), 64))
	if len(b) < fixed || (b[0] != tagBeginObject && b[0] != tagBeginPrivateObject) ||
		(b[1] != tagBeginObject && b[1] != tagBeginPrivateObject) || b[2] != tagNullReference {
		return "", 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[11:]))
	if n < len("SPBlock") || n > len("MetadataBlock") || len(b) < fixed+n+5 {
		return "", 0, false
	}
	switch string(b[fixed : fixed+n]) {
	case objEventBlock:
		name = objEventBlock
	case objMetadataBlock:
		name = objMetadataBlock
	case objStackBlock:
		name = objStackBlock
	case objSPBlock:
		name = objSPBlock
	default:
		return "", 0, false
	}
	if b[fixed+n] != tagEndObject {
		return "", 0, false
	}
	size = binary.LittleEndian.Uint32(b[fixed+n+1:])
	end := r.off + int64(fixed+n+5)
	pad := int((4 - end%4) % 4)
	if int64(int32(size)) < 0 || int(size) > r.cfg.MaxBlockSize || len(b) < fixed+n+5+pad {
		return "", 0, false
	}
	k := fixed + n + 5 + pad
	r.br.Discard(k) // buffered: cannot fail
	r.off += int64(k)
	return name, size, true
}

// readBlockHeader reads a V4 block header piece by piece, checking each.
func (r *Reader) readBlockHeader() (string, uint32, error) {
	start := r.off
	name, _, err := r.readObjectHeader()
	if err == io.EOF {
		r.done = true
		r.stats.Complete = true
		return "", 0, io.EOF
	}
	if err != nil {
		return "", 0, err
	}
	switch name {
	case objEventBlock, objMetadataBlock, objStackBlock, objSPBlock:
	case objTrace:
		return "", 0, r.errAt(start, nil, "a second Trace object in the stream")
	default:
		return "", 0, r.errAt(start, nil, "unknown object type %q; expected EventBlock, MetadataBlock, StackBlock or SPBlock", name)
	}
	sz, err := r.readU32(name, " size")
	if err != nil {
		return "", 0, err
	}
	if int64(int32(sz)) < 0 || int(sz) > r.cfg.MaxBlockSize {
		return "", 0, r.errAt(r.off-4, nil, "%s size %d is out of range (0..%d)", name, int32(sz), r.cfg.MaxBlockSize)
	}
	if pad := int((4 - r.off%4) % 4); pad > 0 {
		if err := r.skip(pad, name, " padding"); err != nil {
			return "", 0, err
		}
	}
	return name, sz, nil
}

func (r *Reader) nextBlockV6() error {
	for {
		start := r.off
		kind, body, rerr := r.readV6Block()
		if rerr != nil && (kind != v6Event || body == nil) {
			return rerr
		}
		r.stats.Blocks++
		if rerr == nil {
			r.goodEnd = r.off
		}
		boff := start + 4
		var err error
		switch kind {
		case v6EndOfStream:
			r.done = true
			r.stats.Complete = true
			return io.EOF
		case v6Event:
			if err := r.startEventBlock(body, boff, rerr); err != nil {
				return err
			}
			r.blkErr = rerr
			return nil
		case v6Metadata:
			err = r.parseMetadataBlockV6(body, boff)
		case v6SequencePoint:
			err = r.parseSPBlockV6(body, boff)
		case v6Stack:
			err = r.parseStackBlock(body, boff)
		case v6Thread:
			err = r.parseThreadBlock(body, boff)
		case v6RemoveThread:
			err = r.parseRemoveThreadBlock(body, boff)
		case v6LabelList:
			err = r.parseLabelListBlock(body, boff)
		case v6Trace:
			err = r.errAt(start, nil, "a second Trace block in the stream")
		default:
			// Unknown kinds are skipped, as the format requires.
		}
		if err != nil {
			return err
		}
	}
}

// startEventBlock checks an event/metadata block header and makes the
// block's events current.
// truncErr is the read error when b is only the start of a cut block.
func (r *Reader) startEventBlock(b []byte, off int64, truncErr error) error {
	if len(b) < blockHeaderMinSize {
		if truncErr != nil {
			return truncErr
		}
		return r.errAt(off, nil, "event block of %d bytes is shorter than its %d-byte header", len(b), blockHeaderMinSize)
	}
	hs := int(binary.LittleEndian.Uint16(b))
	if hs > len(b) && hs >= blockHeaderMinSize && truncErr != nil {
		return truncErr
	}
	if hs < blockHeaderMinSize || hs > len(b) {
		return r.errAt(off, nil, "event block header size %d is out of range (%d..%d)", hs, blockHeaderMinSize, len(b))
	}
	flags := binary.LittleEndian.Uint16(b[2:])
	r.startBlock(b[hs:], off+int64(hs), flags&blockFlagCompressed != 0)
	return nil
}

func (r *Reader) startBlock(b []byte, off int64, compressed bool) {
	r.blk, r.blkOff, r.pos, r.compressed = b, off, 0, compressed
	r.st = evState{}
	r.blkErr = nil
}

// ---------------------------------------------------------------------------
// events

// ReadEvent decodes the next event into ev, overwriting all of its fields.
// It returns io.EOF after the last event of a cleanly ended stream, and a
// *FormatError (after all complete events) for damaged or truncated input.
// Errors are sticky. It passes over the events SetSkip's function leaves
// out.
func (r *Reader) ReadEvent(ev *Event) error {
	// Fast path: the next event of the current compressed block, decoded
	// in this one function, whose only calls are in tail position or after
	// the last use of a local (the Go ABI saves no register across a call,
	// so a call in the middle would spill everything live). The relative
	// fields (sequence number, timestamp) stay in locals until the event
	// is known to be good; the absolute ones are stored as decoded, which
	// is harmless when the general decoder in readEventSlow starts the
	// blob over: it stores the same values again. It takes over for blobs
	// near the end of the block, metadata records, unknown or sparse ids,
	// long payload sizes and errors.
	//
	// Events that SetSkip's function leaves out are passed over (goto
	// next) without filling ev.
next:
	b := r.blk
	p := r.pos
	n := len(b)
	if !r.compressed || p >= n || cap(b)-p < fastMargin {
		return r.readEventSlow(ev)
	}
	// Read headers up to the block buffer's capacity (readBlock keeps
	// fastMargin bytes there): a header cut by the block's end reads
	// leftover bytes, but then its payload ends past n and the general
	// decoder takes the blob over and reports it.
	b = b[:cap(b)]
	st := &r.st
	flags := b[p]
	q := p + 1
	// Each varint: one or two bytes inline, up to eight branch-free,
	// longer ones (only legal in the timestamp) by the general decoder.
	if flags&flagMetadataID != 0 {
		if c := b[q]; c < 0x80 {
			st.metaID = uint32(c)
			q++
		} else if c1 := b[q+1]; c1 < 0x80 {
			st.metaID = uint32(c&0x7f) | uint32(c1)<<7
			q += 2
		} else {
			x, n := uvarint8(binary.LittleEndian.Uint64(b[q:]))
			if n == 0 {
				return r.readEventSlow(ev)
			}
			st.metaID = uint32(x)
			q += n
		}
	}
	seq := st.seq
	if flags&(flagCaptureThread|flagThreadID) != 0 {
		if flags&flagCaptureThread != 0 {
			var v [3]uint64 // sequence delta, capture thread, processor
			for i := range v {
				if c := b[q]; c < 0x80 {
					v[i] = uint64(c)
					q++
				} else if c1 := b[q+1]; c1 < 0x80 {
					v[i] = uint64(c&0x7f) | uint64(c1)<<7
					q += 2
				} else {
					x, n := uvarint8(binary.LittleEndian.Uint64(b[q:]))
					if n == 0 {
						return r.readEventSlow(ev)
					}
					v[i] = x
					q += n
				}
			}
			seq += uint32(v[0]) + 1
			st.capThread = v[1]
			st.proc = uint32(v[2])
		} else if st.metaID != 0 {
			seq++
		}
		if flags&flagThreadID != 0 {
			if c := b[q]; c < 0x80 {
				st.thread = uint64(c)
				q++
			} else if c1 := b[q+1]; c1 < 0x80 {
				st.thread = uint64(c&0x7f) | uint64(c1)<<7
				q += 2
			} else {
				x, n := uvarint8(binary.LittleEndian.Uint64(b[q:]))
				if n == 0 {
					return r.readEventSlow(ev)
				}
				st.thread = x
				q += n
			}
		}
	} else if st.metaID != 0 {
		seq++
	}
	if flags&flagStackID != 0 {
		if c := b[q]; c < 0x80 {
			st.stackID = uint32(c)
			q++
		} else if c1 := b[q+1]; c1 < 0x80 {
			st.stackID = uint32(c&0x7f) | uint32(c1)<<7
			q += 2
		} else {
			x, n := uvarint8(binary.LittleEndian.Uint64(b[q:]))
			if n == 0 {
				return r.readEventSlow(ev)
			}
			st.stackID = uint32(x)
			q += n
		}
	}
	// The timestamp delta: often one to three bytes, ten when negative.
	ts := st.ts
	if c := b[q]; c < 0x80 {
		ts += uint64(c)
		q++
	} else if c1 := b[q+1]; c1 < 0x80 {
		ts += uint64(c&0x7f) | uint64(c1)<<7
		q += 2
	} else if c2 := b[q+2]; c2 < 0x80 {
		ts += uint64(c&0x7f) | uint64(c1&0x7f)<<7 | uint64(c2)<<14
		q += 3
	} else {
		x, n := uvarint8(binary.LittleEndian.Uint64(b[q:]))
		if n == 0 {
			x, n = uvarint10(binary.LittleEndian.Uint64(b[q:]), b[q+8], b[q+9])
			if n == 0 {
				return r.readEventSlow(ev)
			}
		}
		ts += x
		q += n
	}
	if flags&(flagActivityID|flagRelatedActivity|flagPayloadSize) != 0 {
		if flags&flagActivityID != 0 {
			if r.v6 {
				if b[q] >= 0x80 {
					return r.readEventSlow(ev)
				}
				st.label = uint32(b[q])
				q++
			} else {
				st.act = GUID(b[q : q+16])
				q += 16
			}
		}
		if flags&flagRelatedActivity != 0 && !r.v6 {
			st.rel = GUID(b[q : q+16])
			q += 16
		}
		if flags&flagPayloadSize != 0 {
			c := b[q]
			if c < 0x80 {
				st.size = uint32(c)
				q++
			} else if c1 := b[q+1]; c1 < 0x80 {
				st.size = uint32(c&0x7f) | uint32(c1)<<7
				q += 2
			} else {
				return r.readEventSlow(ev)
			}
		}
	}
	end := q + int(st.size)
	id := st.metaID
	if end > n || id == 0 || id >= uint32(len(r.meta)) {
		return r.readEventSlow(ev)
	}
	md := r.meta[id]
	if md == nil {
		// Not defined, or left out: the records SetSkip's function
		// leaves out are in r.skipMeta, so that delivered events pay
		// no test for them.
		if id >= uint32(len(r.skipMeta)) || r.skipMeta[id] == nil {
			return r.readEventSlow(ev)
		}
		// All but filling ev, then the next event, with no call (a
		// call here would make every event pay for saving registers).
		if sid := st.stackID; sid != 0 && sid-r.stackBase >= uint32(len(r.stacks)) {
			return r.readEventSlow(ev) // or its error
		}
		st.seq, st.ts = seq, ts
		r.pos = end
		if !r.curLive || r.curCap != st.capThread {
			// checkSeq's tables; the general decoder reads on.
			return r.skipSlow(ev)
		}
		// checkSeq's case of the same thread, inline.
		if d := int32(seq - r.curSeq - 1); flags&flagCaptureThread != 0 && d > 0 && r.curSeq != 0 {
			r.stats.DroppedEvents += uint64(d)
		}
		r.curSeq = seq
		r.stats.Skipped++
		if t := int64(ts); t > r.skipMax {
			r.skipMax = t
		}
		if t := int64(ts); t < r.skipMin {
			r.skipMin = t
		}
		goto next
	}
	var stack []byte
	if sid := st.stackID; sid != 0 {
		j := sid - r.stackBase
		if j >= uint32(len(r.stacks)) {
			return r.readEventSlow(ev)
		}
		stack = r.stacks[j]
	}
	// Commit.
	st.seq, st.ts = seq, ts
	r.pos = end
	r.stats.Events++
	// A pointer is stored only when it changes: while the collector marks,
	// every pointer store runs its write barrier, which on a conversion
	// cost more than decoding (the builder's garbage keeps it marking).
	if ev.Metadata != md {
		ev.Metadata = md
	}
	ev.SequenceNumber = seq
	ev.ThreadID = st.thread
	ev.CaptureThreadID = st.capThread
	ev.ProcessorNumber = st.proc
	ev.StackID = st.stackID
	ev.StackRegion = r.stackRegion
	ev.Timestamp = int64(ts)
	ev.ActivityID = st.act
	ev.RelatedActivityID = st.rel
	ev.IsSorted = flags&flagSorted != 0
	ev.LabelListID = 0
	if ev.Labels != nil {
		ev.Labels = nil
	}
	ev.ThreadIndex = 0
	ev.CaptureThreadIndex = 0
	ev.Payload = b[q:end:end]
	if ev.header != &r.hdr {
		ev.header = &r.hdr
	}
	// Consecutive events often share a stack (half of them in a trace of
	// allocation ticks and samples): the same slice of r.stacks.
	if len(stack) != len(ev.stack) || len(stack) > 0 && &stack[0] != &ev.stack[0] {
		ev.stack = stack
	}
	ev.pointerSize = r.hdr.PointerSize
	if r.v6 {
		// Thread-table indexes to OS thread ids: inline when both are
		// the thread last looked up and there is no label list.
		if st.label != 0 || !r.lastThrOK || st.thread != r.lastThrIdx || st.capThread != r.lastThrIdx {
			return r.finishEvent(ev, flags, true)
		}
		ev.ThreadIndex, ev.CaptureThreadIndex = st.thread, st.capThread
		ev.ThreadID, ev.CaptureThreadID = r.lastThrOS, r.lastThrOS
	}
	if flags&flagCaptureThread != 0 || !r.curLive || r.curCap != st.capThread {
		return r.finishEvent(ev, flags, false)
	}
	r.curSeq = seq
	return nil
}

// skipSlow is the end of ReadEvent's fast path for a skipped event whose
// sequence number needs checking; the general decoder reads on.
func (r *Reader) skipSlow(ev *Event) error {
	r.skipped(int64(r.st.ts))
	r.checkSeq(r.st.capThread, r.st.seq)
	return r.readEventSlow(ev)
}

// finishEvent is the end of ReadEvent's fast path for V6 events that need
// fillV6 and events whose sequence number needs checking.
func (r *Reader) finishEvent(ev *Event, flags byte, v6 bool) error {
	if v6 {
		r.fillV6(ev)
	}
	if flags&flagCaptureThread != 0 || !r.curLive || r.curCap != r.st.capThread {
		r.checkSeq(r.st.capThread, r.st.seq)
	} else {
		r.curSeq = r.st.seq
	}
	return nil
}

// fastMargin is the number of bytes ReadEvent's fast path wants readable
// from an event's start: more than the longest compressed header (1 flags
// byte, varints of at most 5+5+10+5+10+5+10 bytes, two GUIDs, a 5-byte
// size), so that it never runs off the buffer while decoding one.
const fastMargin = 96

// uvarint8 decodes a LEB128 varint of at most 8 bytes from the first bytes
// of u (little-endian), branch-free. It returns the value and its length,
// or length 0 when the varint is longer.
func uvarint8(u uint64) (uint64, int) {
	m := ^u & 0x8080808080808080 // stop bits
	if m == 0 {
		return 0, 0
	}
	n := bits.TrailingZeros64(m) + 1
	x := u & (1<<uint(n) - 1) & 0x7f7f7f7f7f7f7f7f
	x = x&0x007f007f007f007f | (x&0x7f007f007f007f00)>>1
	x = x&0x00003fff00003fff | (x&0x3fff00003fff0000)>>2
	x = x&0x000000000fffffff | (x&0x0fffffff00000000)>>4
	return x, n >> 3
}

// uvarint10 decodes a 9- or 10-byte LEB128 varint from its first 8 bytes
// (little-endian u) and bytes 8 and 9. It returns length 0 when it is
// longer or overflows 64 bits.
func uvarint10(u uint64, c8, c9 byte) (uint64, int) {
	x := u & 0x7f7f7f7f7f7f7f7f
	x = x&0x007f007f007f007f | (x&0x7f007f007f007f00)>>1
	x = x&0x00003fff00003fff | (x&0x3fff00003fff0000)>>2
	x = x&0x000000000fffffff | (x&0x0fffffff00000000)>>4
	if c8 < 0x80 {
		return x | uint64(c8)<<56, 9
	}
	if c9 > 1 {
		return 0, 0
	}
	return x | uint64(c8&0x7f)<<56 | uint64(c9)<<63, 10
}

// errSkipped tells that a blob was consumed without producing an event (a
// metadata record inside an event block).
var errSkipped = errors.New("nettrace: blob skipped")

// errFiltered tells that a blob was an event that SetSkip's function leaves
// out, decoded and checked but not delivered (its timestamp in skipTS).
var errFiltered = errors.New("nettrace: event left out")

// readEventSlow is ReadEvent for everything but a compressed event in the
// current block: other encodings, metadata blobs, block boundaries, errors
// and the end of the stream.
func (r *Reader) readEventSlow(ev *Event) error {
	for {
		if r.pos < len(r.blk) {
			var err error
			switch {
			case r.compressed:
				err = r.decodeCompressed(ev)
			case r.netperf:
				err = r.decodeNetPerf(ev)
			default:
				err = r.decodeUncompressed(ev)
			}
			if err == nil {
				r.stats.Events++
				return nil
			}
			if err == errFiltered {
				r.skipped(r.skipTS)
				continue
			}
			if err != errSkipped {
				return r.blobFailed(err)
			}
			continue
		}
		if r.err != nil {
			return r.err
		}
		if r.blkErr != nil {
			r.fail(r.blkErr)
			return r.err
		}
		if r.done {
			return io.EOF
		}
		if err := r.nextBlock(); err != nil {
			if err == io.EOF {
				return io.EOF
			}
			r.fail(err)
			return err
		}
	}
}

// blobFailed makes err (from decoding a blob of the current block) sticky;
// in a block that was cut short the truncation is what gets reported.
func (r *Reader) blobFailed(err error) error {
	if r.blkErr != nil {
		err = r.blkErr
	}
	r.fail(err)
	return err
}

func (r *Reader) fail(err error) {
	r.err = err
	r.blk, r.pos = nil, 0
	r.blkErr = nil
}

func (r *Reader) blobErr(p int, format string, args ...any) error {
	return r.errAt(r.blkOff+int64(p), nil, format, args...)
}

// decodeCompressed decodes the compressed blob at r.pos into ev. It returns
// errSkipped for a metadata blob (consumed, not delivered).
//
// This is the decoder's hot path: the flags of a typical event ask for few
// fields (often only the timestamp delta), so rare fields are decoded out of
// line and the one- and two-byte varints the common fields use are decoded
// inline.
func (r *Reader) decodeCompressed(ev *Event) error {
	b := r.blk
	p := r.pos
	if uint(p) >= uint(len(b)) {
		return r.blobErr(p, "event header runs past the end of the block")
	}
	st := &r.st
	flags := b[p]
	p++
	if flags&(flagMetadataID|flagCaptureThread|flagThreadID|flagStackID) != 0 {
		var err error
		if p, err = r.decodeIDs(b, p, flags); err != nil {
			return err
		}
	} else if st.metaID != 0 {
		st.seq++
	}
	// Timestamp delta (wrapping: negative deltas are encoded as huge values).
	if p+1 < len(b) && b[p] < 0x80 {
		st.ts += uint64(b[p])
		p++
	} else if p+1 < len(b) && b[p+1] < 0x80 {
		st.ts += uint64(b[p]&0x7f) | uint64(b[p+1])<<7
		p += 2
	} else {
		var v uint64
		if v, p = uvarint(b, p); p < 0 {
			return r.blobErr(r.pos, "bad timestamp varint in event header")
		}
		st.ts += v
	}
	if flags&(flagActivityID|flagRelatedActivity|flagPayloadSize) != 0 {
		var err error
		if p, err = r.decodeActivityAndSize(b, p, flags); err != nil {
			return err
		}
	}
	end := p + int(st.size)
	if end > len(b) || end < p {
		return r.blobErr(r.pos, "event payload of %d bytes runs past the end of the block (%d bytes left)", st.size, len(b)-p)
	}
	payload := b[p:end:end]
	r.pos = end
	if st.metaID == 0 {
		if err := r.addMetadataBlob(payload, r.blkOff+int64(p)); err != nil {
			return err
		}
		return errSkipped
	}
	if flags&flagCaptureThread != 0 || !r.curLive || r.curCap != st.capThread {
		r.checkSeq(st.capThread, st.seq)
	} else {
		r.curSeq = st.seq
	}
	return r.fill(ev, payload, flags&flagSorted != 0)
}

// decodeIDs decodes the metadata id, sequence/capture thread/processor,
// thread id and stack id fields that flags announce.
func (r *Reader) decodeIDs(b []byte, p int, flags byte) (int, error) {
	st := &r.st
	var v uint64
	if flags&flagMetadataID != 0 {
		if v, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad metadata id varint in event header")
		}
		st.metaID = uint32(v)
	}
	if flags&flagCaptureThread != 0 {
		if v, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad sequence number varint in event header")
		}
		st.seq += uint32(v) + 1
		if st.capThread, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad capture thread varint in event header")
		}
		if v, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad processor number varint in event header")
		}
		st.proc = uint32(v)
	} else if st.metaID != 0 {
		st.seq++
	}
	if flags&flagThreadID != 0 {
		if st.thread, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad thread id varint in event header")
		}
	}
	if flags&flagStackID != 0 {
		if v, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad stack id varint in event header")
		}
		st.stackID = uint32(v)
	}
	return p, nil
}

// decodeActivityAndSize decodes the activity ids (V6: label list id) and
// payload size fields that flags announce.
func (r *Reader) decodeActivityAndSize(b []byte, p int, flags byte) (int, error) {
	st := &r.st
	var v uint64
	if flags&flagActivityID != 0 {
		if r.v6 {
			if v, p = uvarint(b, p); p < 0 {
				return p, r.blobErr(r.pos, "bad label list id varint in event header")
			}
			st.label = uint32(v)
		} else {
			if p+16 > len(b) {
				return p, r.blobErr(r.pos, "activity id runs past the end of the block")
			}
			st.act = GUID(b[p : p+16])
			p += 16
		}
	}
	if flags&flagRelatedActivity != 0 && !r.v6 {
		if p+16 > len(b) {
			return p, r.blobErr(r.pos, "related activity id runs past the end of the block")
		}
		st.rel = GUID(b[p : p+16])
		p += 16
	}
	if flags&flagPayloadSize != 0 {
		if v, p = uvarint(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad payload size varint in event header")
		}
		st.size = uint32(v)
	}
	return p, nil
}

// fill completes ev from r.st.
func (r *Reader) fill(ev *Event, payload []byte, sorted bool) error {
	st := &r.st
	var md *Metadata
	if id := st.metaID; id < uint32(len(r.meta)) {
		md = r.meta[id]
	}
	if md == nil {
		if md = r.lookupMeta(st.metaID); md == nil {
			return r.blobErr(r.pos, "event refers to metadata id %d, which the trace never defined", st.metaID)
		}
	}
	var stack []byte
	if id := st.stackID; id != 0 {
		var err error
		if stack, err = r.resolveStack(id); err != nil {
			return err
		}
	}
	if md.skip {
		r.skipTS = int64(st.ts)
		return errFiltered
	}
	ev.Metadata = md
	ev.SequenceNumber = st.seq
	ev.ThreadID = st.thread
	ev.CaptureThreadID = st.capThread
	ev.ProcessorNumber = st.proc
	ev.StackID = st.stackID
	ev.StackRegion = r.stackRegion
	ev.Timestamp = int64(st.ts)
	ev.ActivityID = st.act
	ev.RelatedActivityID = st.rel
	ev.IsSorted = sorted
	ev.LabelListID = 0
	ev.Labels = nil
	ev.ThreadIndex = 0
	ev.CaptureThreadIndex = 0
	ev.Payload = payload
	ev.header = &r.hdr
	ev.stack = stack
	ev.pointerSize = r.hdr.PointerSize
	if r.v6 {
		r.fillV6(ev)
	}
	return nil
}

func (r *Reader) lookupMeta(id uint32) *Metadata {
	if id < 1<<16 {
		if int(id) < len(r.meta) && r.meta[id] != nil {
			return r.meta[id]
		}
		if int(id) < len(r.skipMeta) {
			return r.skipMeta[id]
		}
		return nil
	}
	return r.metaMap[id]
}

// checkSeq records sequence number seq on capture thread ct (an event that
// carries its capture thread) and counts any gap as dropped events.
func (r *Reader) checkSeq(ct uint64, seq uint32) {
	if r.curLive && ct == r.curCap {
		if d := int32(seq - r.curSeq - 1); d > 0 && r.curSeq != 0 {
			r.stats.DroppedEvents += uint64(d)
		}
		r.curSeq = seq
		return
	}
	r.flushCur()
	last, ok := r.loadSeq(ct)
	if !ok && r.cfg.MaxThreads > 0 && len(r.seqs) >= r.cfg.MaxThreads {
		clear(r.seqs)
	}
	if ok && last != 0 {
		if d := int32(seq - last - 1); d > 0 {
			r.stats.DroppedEvents += uint64(d)
		}
	} else if !ok && r.role >= roleWorker {
		// The gap before it is counted in stream order by the merge.
		r.firsts = append(r.firsts, seqMark{ct, seq})
	}
	r.curCap, r.curSeq, r.curLive = ct, seq, true
}

// loadSeq returns the last sequence number seen for ct, from the cache or
// the map (moving it into the cache).
func (r *Reader) loadSeq(ct uint64) (uint32, bool) {
	e := &r.seqC[seqSlot(ct)]
	if e.used && e.ct == ct {
		return e.seq, true
	}
	if e.used {
		r.seqs[e.ct] = e.seq
		e.used = false
	}
	last, ok := r.seqs[ct]
	return last, ok
}

// flushCur stores the current thread's sequence number in the cache.
func (r *Reader) flushCur() {
	if !r.curLive {
		return
	}
	e := &r.seqC[seqSlot(r.curCap)]
	if e.used && e.ct != r.curCap {
		r.seqs[e.ct] = e.seq
	}
	*e = seqEntry{ct: r.curCap, seq: r.curSeq, used: true}
	r.curLive = false
}

// syncSeqs moves every cached sequence number to the map.
func (r *Reader) syncSeqs() {
	r.flushCur()
	for i := range r.seqC {
		if e := &r.seqC[i]; e.used {
			r.seqs[e.ct] = e.seq
			e.used = false
		}
	}
}

// checkpoint applies a sequence point or final sequence number for ct.
func (r *Reader) checkpoint(ct uint64, seq uint32) {
	r.syncSeqs()
	if last, ok := r.seqs[ct]; ok && last != 0 {
		if d := int32(seq - last); d > 0 {
			r.stats.DroppedEvents += uint64(d)
		}
	}
	r.seqs[ct] = seq
}

func (r *Reader) decodeUncompressed(ev *Event) error {
	b := r.blk[r.pos:]
	hl := v4EventHeaderLen
	if r.v6 {
		hl = v6EventHeaderLen
	}
	if len(b) < hl {
		return r.blobErr(r.pos, "event header needs %d bytes, block has %d left", hl, len(b))
	}
	size := int(binary.LittleEndian.Uint32(b))
	if size < hl-4 || size > len(b)-4 {
		return r.blobErr(r.pos, "event size %d is out of range (%d..%d)", size, hl-4, len(b)-4)
	}
	st := &r.st
	mid := binary.LittleEndian.Uint32(b[4:])
	st.metaID = mid &^ (1 << 31)
	st.seq = binary.LittleEndian.Uint32(b[8:])
	st.thread = binary.LittleEndian.Uint64(b[12:])
	st.capThread = binary.LittleEndian.Uint64(b[20:])
	st.proc = binary.LittleEndian.Uint32(b[28:])
	st.stackID = binary.LittleEndian.Uint32(b[32:])
	st.ts = binary.LittleEndian.Uint64(b[36:])
	var psz int
	if r.v6 {
		st.label = binary.LittleEndian.Uint32(b[44:])
		psz = int(binary.LittleEndian.Uint32(b[48:]))
	} else {
		st.act = GUID(b[44:60])
		st.rel = GUID(b[60:76])
		psz = int(binary.LittleEndian.Uint32(b[76:]))
	}
	if psz < 0 || psz > size+4-hl {
		return r.blobErr(r.pos, "event payload size %d exceeds the event size %d", psz, size)
	}
	payload := b[hl : hl+psz : hl+psz]
	poff := r.blkOff + int64(r.pos+hl)
	r.pos += 4 + size
	if st.metaID == 0 {
		if err := r.addMetadataBlob(payload, poff); err != nil {
			return err
		}
		return errSkipped
	}
	r.checkSeq(st.capThread, st.seq)
	return r.fill(ev, payload, mid&(1<<31) != 0)
}

// decodeNetPerf decodes one NetPerf V3 event (fixed header, inline stack).
func (r *Reader) decodeNetPerf(ev *Event) error {
	b := r.blk[r.pos:]
	if len(b) < netperfEventHeaderLen {
		return r.blobErr(r.pos, "event header needs %d bytes, block has %d left", netperfEventHeaderLen, len(b))
	}
	size := int(int32(binary.LittleEndian.Uint32(b)))
	if size < netperfEventHeaderLen || size > len(b)-4 {
		return r.blobErr(r.pos, "event size %d is out of range (%d..%d)", size, netperfEventHeaderLen, len(b)-4)
	}
	end := 4 + size
	mid := binary.LittleEndian.Uint32(b[4:])
	psz := int(int32(binary.LittleEndian.Uint32(b[52:])))
	if psz < 0 || netperfEventHeaderLen+psz+4 > end {
		return r.blobErr(r.pos, "event payload size %d does not fit the event size %d", psz, size)
	}
	pe := netperfEventHeaderLen + psz
	payload := b[netperfEventHeaderLen:pe:pe]
	ss := int(int32(binary.LittleEndian.Uint32(b[pe:])))
	if ss < 0 || pe+4+ss > end || ss%r.hdr.PointerSize != 0 {
		return r.blobErr(r.pos+pe, "inline stack of %d bytes does not fit the event (%d bytes left) or is not a multiple of the pointer size", ss, end-pe-4)
	}
	poff := r.blkOff + int64(r.pos+netperfEventHeaderLen)
	stack := b[pe+4 : pe+4+ss : pe+4+ss]
	r.pos += end
	if mid == 0 {
		if err := r.addMetadataBlob(payload, poff); err != nil {
			return err
		}
		return errSkipped
	}
	md := r.lookupMeta(mid)
	if md == nil {
		return r.blobErr(r.pos-end, "event refers to metadata id %d, which the trace never defined", mid)
	}
	if ss > 0 {
		r.stats.Stacks++
	}
	if md.skip {
		r.skipTS = int64(binary.LittleEndian.Uint64(b[12:]))
		return errFiltered
	}
	*ev = Event{
		Metadata:          md,
		ThreadID:          uint64(binary.LittleEndian.Uint32(b[8:])),
		Timestamp:         int64(binary.LittleEndian.Uint64(b[12:])),
		ActivityID:        GUID(b[20:36]),
		RelatedActivityID: GUID(b[36:52]),
		Payload:           payload,
		header:            &r.hdr,
		stack:             stack,
		pointerSize:       r.hdr.PointerSize,
	}
	ev.CaptureThreadID = ev.ThreadID
	return nil
}

// ---------------------------------------------------------------------------
// metadata

func (r *Reader) addMetadataBlob(payload []byte, off int64) error {
	md, err := parseMetadataV4(payload)
	if err != nil {
		return r.errAt(off, err, "metadata record")
	}
	return r.addMetadata(md, off)
}

func (r *Reader) addMetadata(md *Metadata, off int64) error {
	if r.role == roleWorker {
		// Only the merge, in stream order, may define metadata.
		r.needOrder = true
		return errNeedsOrder
	}
	if md.ID == 0 {
		return r.errAt(off, nil, "metadata record defines id 0, which is reserved")
	}
	if !r.v6 && r.lookupMeta(md.ID) != nil {
		return r.errAt(off, nil, "metadata id %d is defined twice", md.ID)
	}
	if r.cfg.MaxMetadata > 0 && r.stats.Metadata >= int64(r.cfg.MaxMetadata) && r.lookupMeta(md.ID) == nil {
		return r.errAt(off, nil, "more than %d metadata records (ReaderConfig.MaxMetadata)", r.cfg.MaxMetadata)
	}
	md.index = int(r.metaIdx.Add(1))
	if r.skipFn != nil {
		md.skip = r.skipFn(md)
	}
	r.ownMeta()
	r.setMeta(md)
	r.stats.Metadata++
	switch r.role {
	case roleSplitter:
		r.pending = append(r.pending, ordAction{kind: actMetaDef, ct: uint64(md.ID), off: off, st: r.stats})
	case roleReplay:
		r.newDefs = append(r.newDefs, md)
	}
	return nil
}

// setMeta stores md in the metadata table.
func (r *Reader) setMeta(md *Metadata) {
	if md.ID < 1<<16 {
		id := md.ID
		if int(id) < len(r.skipMeta) {
			r.skipMeta[id] = nil // a V6 record redefined
		}
		if md.skip {
			if int(id) >= cap(r.skipMeta) {
				// Room for 16 ids at least (or as many as meta holds)
				// rather than append's growth from 1: a trace's dozen
				// skipped ids took five allocations.
				r.skipMeta = slices.Grow(r.skipMeta, max(int(id)+1, len(r.meta), 16)-len(r.skipMeta))
			}
			for int(id) >= len(r.skipMeta) {
				r.skipMeta = append(r.skipMeta, nil)
			}
			r.skipMeta[id] = md
			md = nil // in meta: nil
		}
		for int(id) >= len(r.meta) {
			r.meta = append(r.meta, nil)
		}
		r.meta[id] = md
	} else {
		if r.metaMap == nil {
			r.metaMap = make(map[uint32]*Metadata)
		}
		r.metaMap[md.ID] = md
	}
}

func (r *Reader) parseMetadataBlock(b []byte, off int64) error {
	if err := r.startEventBlock(b, off, nil); err != nil {
		return err
	}
	defer func() { r.blk, r.pos = nil, 0 }()
	var ev Event
	for r.pos < len(r.blk) {
		var err error
		if r.compressed {
			err = r.decodeCompressed(&ev)
		} else {
			err = r.decodeUncompressed(&ev)
		}
		if err == nil || err == errFiltered {
			return r.blobErr(r.pos, "metadata block holds an event with metadata id %d; expected only metadata records (id 0)", r.st.metaID)
		}
		if err != errSkipped {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// stacks and sequence points

func (r *Reader) parseStackBlock(b []byte, off int64) error {
	if len(b) < 8 {
		return r.errAt(off, nil, "stack block of %d bytes is shorter than its 8-byte header", len(b))
	}
	first := binary.LittleEndian.Uint32(b)
	count := binary.LittleEndian.Uint32(b[4:])
	if int64(count)*4 > int64(len(b)-8) {
		return r.errAt(off+4, nil, "stack block claims %d stacks in %d bytes", count, len(b)-8)
	}
	base := uint32(len(r.arena))
	if len(r.arena)+len(b) > 1<<31 {
		return r.errAt(off, nil, "more than 2 GiB of stacks without a sequence point")
	}
	if r.cfg.MaxStackBytes > 0 && len(r.arena)+len(b) > r.cfg.MaxStackBytes {
		return r.errAt(off, nil, "more than %d bytes of stacks without a sequence point (ReaderConfig.MaxStackBytes)", r.cfg.MaxStackBytes)
	}
	r.ownStacks()
	r.arena = append(r.arena, b...)
	blk := r.arena[base:]
	contiguous := len(r.stacks) == 0 || first == r.stackBase+uint32(len(r.stacks))
	if len(r.stacks) == 0 && r.stackMap == nil {
		r.stackBase = first
	}
	if !contiguous || r.stackMap != nil {
		// The block may redefine ids: start a new region.
		r.stackRegion++
	}
	p := 8
	for i := uint32(0); i < count; i++ {
		if p+4 > len(b) {
			return r.errAt(off+int64(p), nil, "stack %d of %d: size field runs past the end of the block", i, count)
		}
		n := int(binary.LittleEndian.Uint32(b[p:]))
		p += 4
		if n < 0 || n > len(b)-p || n%r.hdr.PointerSize != 0 {
			return r.errAt(off+int64(p-4), nil, "stack %d of %d: %d bytes does not fit the block (%d left) or is not a multiple of the pointer size %d", i, count, n, len(b)-p, r.hdr.PointerSize)
		}
		s := blk[p : p+n : p+n]
		if contiguous && r.stackMap == nil {
			r.stacks = append(r.stacks, s)
		} else {
			if r.stackMap == nil {
				r.stackMap = make(map[uint32][]byte)
			}
			r.stackMap[first+i] = s
		}
		p += n
	}
	r.stats.Stacks += int64(count)
	return nil
}

func (r *Reader) resolveStack(id uint32) ([]byte, error) {
	if id == 0 {
		return nil, nil
	}
	if i := id - r.stackBase; i < uint32(len(r.stacks)) {
		return r.stacks[i], nil
	}
	if s, ok := r.stackMap[id]; ok {
		return s, nil
	}
	return nil, r.blobErr(r.pos, "event refers to stack id %d, which is not defined in the current sequence-point region", id)
}

func (r *Reader) resetStacks() {
	if r.stackGen != r.pubGen {
		// Workers still read them: start new ones.
		r.arena, r.stacks = nil, nil
		r.stackGen = r.pubGen
	}
	r.arena = r.arena[:0]
	r.stacks = r.stacks[:0]
	r.stackMap = nil
	r.stackRegion++
}

func (r *Reader) parseSPBlockV4(b []byte, off int64) error {
	if len(b) < 12 {
		return r.errAt(off, nil, "sequence point block of %d bytes is shorter than its 12-byte header", len(b))
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if int64(n)*12 != int64(len(b)-12) {
		return r.errAt(off+8, nil, "sequence point block claims %d threads but has %d bytes for them (12 each)", n, len(b)-12)
	}
	for i := 0; i < int(n); i++ {
		e := b[12+i*12:]
		r.seqCheckpoint(binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]))
	}
	r.stats.SequencePoints++
	r.stats.LastSequencePoint = int64(binary.LittleEndian.Uint64(b))
	r.resetStacks()
	return nil
}
