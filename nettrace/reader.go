package nettrace

import (
	"bufio"
	"io"
	"iter"
	"math"
	"sync/atomic"
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
	// of a struct it points to: an extra pointer on the fast path costs
	// register moves on every event, skipped or not.
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
