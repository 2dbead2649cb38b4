package nettrace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"
)

// ParallelConfig tunes ReadParallel. The zero value is the default.
type ParallelConfig struct {
	// Workers is the number of goroutines that decode event blocks
	// (default runtime.GOMAXPROCS(0)).
	Workers int
	// MaxInFlight bounds the blocks read ahead of the merge (default 4 per
	// worker, at least 4). Memory is about MaxInFlight times the largest
	// block, plus the parts.
	MaxInFlight int
	// SerialBytes is how much of the stream is read on the calling
	// goroutine before the workers start (default 1 MiB, so that small
	// traces do not pay for goroutines; negative: start them at once).
	SerialBytes int64
}

// A Part accumulates what a consumer computes from a run of consecutive
// events (usually those of one event block). ReadParallel decodes runs on
// several goroutines, each into its own Part, and hands the parts to the
// merge function one at a time, in stream order.
//
// Parts are written by different cores at the same time: keep what Event
// writes for each event out of the cache lines of other parts (pad a small
// part struct with 64 bytes on each side, start its slices with a capacity
// of at least 16 words). Two parts sharing a line halve the speed.
type Part interface {
	// Event receives the run's events, in stream order. The *Event and
	// its slices are valid only during the call (as after ReadEvent).
	Event(ev *Event)
	// Reset empties the part so that it can take another run.
	Reset()
}

// ReadParallel reads the rest of r's stream with several goroutines: one
// reads and frames the blocks and keeps the metadata, stack and thread
// tables (the blocks that are not events are few), cfg.Workers goroutines
// decode event blocks, each into a Part, and the calling goroutine calls
// merge with the parts in stream order. So a consumer whose results do not
// depend on the order of events across blocks (counts, time ranges,
// profiles built from stacks) gets every core.
//
// newPart is called on the calling goroutine, before decoding starts, for
// each part ReadParallel keeps (about cfg.MaxInFlight); after merge returns,
// the part is Reset and reused. Event is called on the worker goroutines,
// never on two at a time for one part.
//
// Two promises let a consumer that must see the events in stream order (a
// profile builder) replay them in merge without copying their bytes:
//   - The first part newPart returns is the calling goroutine's: it alone
//     takes the events decoded there (the rest of the current block, the
//     first cfg.SerialBytes, or the whole of a stream read serially), its
//     Event is called on the calling goroutine, and every one of its events
//     comes before (in the stream, and in time) those of the other parts.
//     So its Event may do the consumer's ordered work itself.
//   - In the other parts, an event's Payload and stack (Frame, AppendStack)
//     stay valid until merge returns for the part: a copy of the Event
//     struct made in Event can be read in merge. (Only the *Event itself is
//     reused for the next event.)
//
// The outcome is that of reading with ReadEvent: the merged parts hold
// exactly the events ReadEvent would deliver, the returned error is the one
// ReadEvent would return (nil instead of io.EOF at a clean end) and, once
// ReadParallel returns, r.Stats counts what ReadEvent would have counted,
// dropped events included. After it returns r is at its end (ReadEvent
// returns io.EOF or the same error). When ctx is cancelled or merge fails,
// ReadParallel stops at the next block and returns that error, which r then
// keeps. Like ReadEvent it does not interrupt a read that blocks: close the
// source to stop a live one.
//
// ReadParallel continues from where ReadEvent left off; the rest of the
// current block and the first cfg.SerialBytes of the stream are decoded on
// the calling goroutine. NetPerf streams, and readers with
// ReaderConfig.MaxMetadata or MaxThreads set or a skip function
// (Reader.SetSkip), are read on the calling goroutine alone, with the same
// results.
func ReadParallel[P Part](ctx context.Context, r *Reader, cfg ParallelConfig, newPart func() P, merge func(P) error) error {
	if r.role != roleSerial {
		return errors.New("nettrace: ReadParallel on a Reader that is already being read in parallel")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = max(4*cfg.Workers, 4)
	}
	limit := r.off + cfg.SerialBytes
	switch {
	case r.netperf || r.cfg.MaxMetadata > 0 || r.cfg.MaxThreads > 0 || r.skipFn != nil:
		limit = -1 // all of it here
	case cfg.SerialBytes == 0:
		limit = r.off + defaultSerialBytes
	case cfg.SerialBytes < 0:
		limit = 0
	}
	if done, err := readSerialParts(ctx, r, newPart(), merge, limit); done {
		return err
	}
	return runPipeline(ctx, r, cfg, newPart, merge)
}

// defaultSerialBytes is ParallelConfig.SerialBytes' default: below it,
// starting goroutines costs more than they save.
const defaultSerialBytes = 1 << 20

// readSerialParts reads with ReadEvent on the calling goroutine, into part,
// merged once per block. It stops at the end of the stream (done, with the
// error ReadParallel returns), or, when limit is not negative, at the first
// block boundary at or past byte limit (not done: the pipeline takes over).
func readSerialParts[P Part](ctx context.Context, r *Reader, part P, merge func(P) error, limit int64) (bool, error) {
	var ev Event
	blk, n := r.blkOff, 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		n = 0
		err := merge(part)
		part.Reset()
		return err
	}
	for i := 1; ; i++ {
		if limit >= 0 && r.off >= limit && r.pos >= len(r.blk) && r.blkErr == nil && r.err == nil && !r.done {
			if err := flush(); err != nil {
				r.fail(err)
				return true, err
			}
			return false, nil
		}
		err := r.ReadEvent(&ev)
		if err != nil {
			if merr := flush(); merr != nil && err == io.EOF {
				r.fail(merr)
				return true, merr
			}
			if err == io.EOF {
				return true, nil
			}
			return true, err
		}
		if r.blkOff != blk {
			// The event starts a new block: the part is the last one's.
			if merr := flush(); merr != nil {
				r.fail(merr)
				return true, merr
			}
			blk = r.blkOff
		}
		part.Event(&ev)
		n++
		if i&0xffff == 0 && ctx.Err() != nil {
			r.fail(ctx.Err())
			return true, ctx.Err()
		}
	}
}

// readerRole is what a Reader does in a ReadParallel pipeline.
type readerRole uint8

const (
	roleSerial   readerRole = iota // a plain Reader
	roleSplitter                   // reads blocks, keeps the tables
	roleWorker                     // decodes one event block at a time
	roleReplay                     // the merge's own decoder, in stream order
)

// errNeedsOrder stops a worker at a metadata record inside an event block:
// only the merge may define metadata, in stream order.
var errNeedsOrder = errors.New("nettrace: metadata record in an event block")

// seqMark is a capture thread's sequence number.
type seqMark struct {
	ct  uint64
	seq uint32
}

// ordAction is something the splitter met that the merge must do in
// stream order: sequence-number bookkeeping and metadata definitions.
type ordAction struct {
	kind uint8
	ct   uint64 // capture thread, or the metadata id
	seq  uint32
	off  int64 // actMetaDef: where the record is
	st   Stats // actMetaDef: the splitter's counters after it
}

const (
	actCheckpoint = iota // a sequence point's (or removed thread's) last sequence number
	actForget            // a removed thread
	actForgetAll         // a sequence point that flushes the thread table
	actMetaDef           // a metadata record of a metadata block
	actFlushMeta         // a sequence point that flushes the metadata table
)

// seqCheckpoint applies (or, in the splitter, defers) a sequence point's
// sequence number for capture thread ct.
func (r *Reader) seqCheckpoint(ct uint64, seq uint32) {
	if r.role == roleSplitter {
		r.pending = append(r.pending, ordAction{kind: actCheckpoint, ct: ct, seq: seq})
		return
	}
	r.checkpoint(ct, seq)
}

// seqForget stops tracking capture thread ct.
func (r *Reader) seqForget(ct uint64) {
	if r.role == roleSplitter {
		r.pending = append(r.pending, ordAction{kind: actForget, ct: ct})
		return
	}
	r.syncSeqs()
	delete(r.seqs, ct)
}

// seqForgetAll stops tracking every capture thread.
func (r *Reader) seqForgetAll() {
	if r.role == roleSplitter {
		r.pending = append(r.pending, ordAction{kind: actForgetAll})
		return
	}
	r.syncSeqs()
	clear(r.seqs)
}

// The own* methods make a table private to the splitter before it changes
// it, when event blocks handed out since it was last copied may read it.

func (r *Reader) ownMeta() {
	if r.metaGen != r.pubGen {
		r.meta = slices.Clone(r.meta)
		r.metaMap = maps.Clone(r.metaMap)
		r.metaGen = r.pubGen
	}
}

func (r *Reader) ownStacks() {
	if r.stackGen != r.pubGen {
		// Appending to arena and stacks does not touch what workers
		// read; the map is copied.
		r.stackMap = maps.Clone(r.stackMap)
		r.stackGen = r.pubGen
	}
}

func (r *Reader) ownLabels() {
	if r.labelGen != r.pubGen {
		r.labels = maps.Clone(r.labels)
		r.labelGen = r.pubGen
	}
}

func (r *Reader) ownThreads() {
	if r.threadGen != r.pubGen {
		r.threads = maps.Clone(r.threads)
		r.threadGen = r.pubGen
	}
}

// tables are what decoding an event block reads.
type tables struct {
	meta        []*Metadata
	metaMap     map[uint32]*Metadata
	stacks      [][]byte
	stackBase   uint32
	stackMap    map[uint32][]byte
	stackRegion uint64
	labels      map[uint32]*LabelList
	threads     map[uint64]*Thread
}

func (r *Reader) tables() tables {
	return tables{r.meta, r.metaMap, r.stacks, r.stackBase, r.stackMap, r.stackRegion, r.labels, r.threads}
}

func (r *Reader) setTables(t *tables) {
	r.meta, r.metaMap, r.stacks, r.stackBase = t.meta, t.metaMap, t.stacks, t.stackBase
	r.stackMap, r.stackRegion, r.labels, r.threads = t.stackMap, t.stackRegion, t.labels, t.threads
}

// helper returns a Reader that decodes event blocks of r's stream.
func (r *Reader) helper(role readerRole) *Reader {
	return &Reader{cfg: r.cfg, hdr: r.hdr, v6: r.v6, done: true, role: role,
		seqs: make(map[uint64]uint32), metaIdx: r.metaIdx}
}

type jobKind uint8

const (
	jobEvents jobKind = iota // an event block
	jobEnd                   // the end of the stream, or why reading stopped
)

// pjob is one item of the pipeline, in stream order.
type pjob[P Part] struct {
	kind    jobKind
	actions []ordAction // done by the merge before the item
	stats   Stats       // the splitter's counters after the item
	err     error       // jobEnd: nil at the end-of-stream marker

	// jobEvents
	buf        []byte
	body       []byte
	off        int64
	compressed bool
	blkErr     error
	tab        tables
	part       P
	done       chan struct{}

	// decoding results
	werr      error
	needOrder bool
	events    int64
	dropped   uint64
	firsts    []seqMark
	lasts     []seqMark
}

// decodeJob decodes j's block with w (a worker or replay Reader whose
// tables are set) into j.part.
func decodeJob[P Part](w *Reader, j *pjob[P], ev *Event) {
	w.err, w.needOrder = nil, false
	w.stats = Stats{}
	w.firsts = w.firsts[:0]
	clear(w.seqs)
	w.seqC = [seqCacheSize]seqEntry{}
	w.curLive, w.lastThrOK = false, false
	w.startBlock(j.body, j.off, j.compressed)
	w.blkErr = j.blkErr
	j.werr = nil
	for {
		err := w.ReadEvent(ev)
		if err != nil {
			if err != io.EOF {
				j.werr = err
			}
			break
		}
		j.part.Event(ev)
	}
	j.needOrder = w.needOrder
	j.events, j.dropped = w.stats.Events, w.stats.DroppedEvents
	j.firsts = append(j.firsts[:0], w.firsts...)
	w.syncSeqs()
	j.lasts = j.lasts[:0]
	for ct, s := range w.seqs {
		j.lasts = append(j.lasts, seqMark{ct, s})
	}
	w.blk = nil
}

// maxKeptBuffer is the largest block buffer kept for reuse.
const maxKeptBuffer = 4 << 20

func runPipeline[P Part](ctx context.Context, r *Reader, cfg ParallelConfig, newPart func() P, merge func(P) error) error {
	free := make(chan *pjob[P], cfg.MaxInFlight)
	for range cfg.MaxInFlight {
		free <- &pjob[P]{part: newPart(), done: make(chan struct{}, 1)}
	}
	work := make(chan *pjob[P], cfg.MaxInFlight)
	order := make(chan *pjob[P], cfg.MaxInFlight)
	quit := make(chan struct{})

	// The merge's view starts from what r has read so far.
	r.syncSeqs()
	m := &merger{acct: maps.Clone(r.seqs), vis: r.stats, v6: r.v6}
	m.vis.Bytes = r.off

	r.role = roleSplitter
	r.pending = r.pending[:0]
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		split(r, free, work, order, quit)
	}()
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.helper(roleWorker)
			var ev Event
			for j := range work {
				w.setTables(&j.tab)
				decodeJob(w, j, &ev)
				j.done <- struct{}{}
			}
		}()
	}

	var replay *Reader
	var ev Event
	var err error
	stopped := false
	stop := func(e error) {
		err, stopped = e, true
		close(quit)
	}
	for j := range order {
		if stopped {
			if j.kind == jobEvents {
				<-j.done
			}
			continue
		}
		if aerr := m.apply(j.actions); aerr != nil {
			stop(aerr)
			if j.kind == jobEvents {
				<-j.done
			}
			continue
		}
		if j.kind == jobEnd {
			m.see(j.stats)
			stop(j.err)
			continue
		}
		<-j.done
		if j.needOrder || (len(m.overlay) > 0 && (j.werr != nil || m.v6)) {
			// The block defines metadata, or may use metadata that an
			// earlier event block defined (or, in V6, redefined): decode
			// it again here, in stream order.
			if replay == nil {
				replay = r.helper(roleReplay)
			}
			replayJob(m, replay, j, &ev)
		}
		m.add(j.events, j.dropped, j.firsts, j.lasts)
		m.see(j.stats)
		if merr := merge(j.part); merr != nil {
			stop(merr)
		} else if j.werr != nil {
			stop(j.werr)
		} else if cerr := ctx.Err(); cerr != nil {
			stop(cerr)
		}
		j.part.Reset()
		if cap(j.buf) > maxKeptBuffer {
			j.buf = nil
		}
		free <- j
	}
	if !stopped {
		err = errors.New("nettrace: internal error: the block reader stopped without a reason")
	}
	wg.Wait()

	// r is at the end of what was merged.
	r.role = roleSerial
	r.pending = nil
	r.blk, r.pos, r.blkErr = nil, 0, nil
	r.stats = m.vis
	r.off = m.vis.Bytes
	if err == nil {
		r.done = true
		return nil
	}
	r.err = err
	return err
}

// split is the splitter goroutine: it reads blocks into the jobs' buffers,
// keeps the tables, and hands out the event blocks and the end.
func split[P Part](r *Reader, free, work, order chan *pjob[P], quit chan struct{}) {
	defer close(order)
	defer close(work)
	for {
		var j *pjob[P]
		select {
		case j = <-free:
		case <-quit:
			return
		}
		r.buf = j.buf[:0]
		err := r.nextBlock()
		j.buf, r.buf = r.buf, nil
		j.actions = append(j.actions[:0], r.pending...)
		r.pending = r.pending[:0]
		j.stats = r.stats
		j.stats.Bytes = r.off
		if err != nil {
			if err == io.EOF {
				err = nil
			} else {
				r.fail(err)
			}
			j.kind, j.err = jobEnd, err
			order <- j
			return
		}
		j.kind = jobEvents
		j.body, j.off, j.compressed, j.blkErr = r.blk, r.blkOff, r.compressed, r.blkErr
		j.tab = r.tables()
		r.pubGen++
		r.blk, r.pos, r.blkErr = nil, 0, nil
		order <- j
		work <- j
		if j.blkErr != nil {
			return // the stream stops inside or after this block
		}
	}
}

// merger keeps, in stream order, what depends on it: dropped events,
// metadata defined inside event blocks, and the counters.
type merger struct {
	acct    map[uint64]uint32 // last sequence number per capture thread
	overlay map[uint32]*Metadata
	defs    int64 // metadata records defined inside event blocks
	vis     Stats // what r.Stats says once the merge is done
	v6      bool
}

func (m *merger) apply(acts []ordAction) error {
	for i := range acts {
		a := &acts[i]
		switch a.kind {
		case actCheckpoint:
			if last, ok := m.acct[a.ct]; ok && last != 0 {
				if d := int32(a.seq - last); d > 0 {
					m.vis.DroppedEvents += uint64(d)
				}
			}
			m.acct[a.ct] = a.seq
		case actForget:
			delete(m.acct, a.ct)
		case actForgetAll:
			clear(m.acct)
		case actFlushMeta:
			clear(m.overlay)
		case actMetaDef:
			id := uint32(a.ct)
			if _, ok := m.overlay[id]; !ok {
				continue
			}
			if m.v6 {
				delete(m.overlay, id) // redefined: the tables have the new one
				continue
			}
			// What the serial reader reports: the second definition
			// is not counted.
			m.see(a.st)
			m.vis.Metadata--
			return &FormatError{Offset: a.off, Msg: fmt.Sprintf("metadata id %d is defined twice", id)}
		}
	}
	return nil
}

// see takes the splitter's counters after an item.
func (m *merger) see(st Stats) {
	ev, dr := m.vis.Events, m.vis.DroppedEvents
	m.vis = st
	m.vis.Events, m.vis.DroppedEvents = ev, dr
	m.vis.Metadata += m.defs
}

// add counts a decoded block's events and dropped events.
func (m *merger) add(events int64, dropped uint64, firsts, lasts []seqMark) {
	for _, f := range firsts {
		if last, ok := m.acct[f.ct]; ok && last != 0 {
			if d := int32(f.seq - last - 1); d > 0 {
				m.vis.DroppedEvents += uint64(d)
			}
		}
	}
	for _, l := range lasts {
		m.acct[l.ct] = l.seq
	}
	m.vis.Events += events
	m.vis.DroppedEvents += dropped
}

// replayJob decodes j again with w, in stream order, with the metadata that
// earlier event blocks defined, and keeps what j defines.
func replayJob[P Part](m *merger, w *Reader, j *pjob[P], ev *Event) {
	j.part.Reset()
	w.setTables(&j.tab)
	// Every table is shared: the first change copies it.
	w.pubGen++
	if len(m.overlay) > 0 {
		w.ownMeta()
		for _, md := range m.overlay {
			w.setMeta(md)
		}
	}
	w.newDefs = w.newDefs[:0]
	decodeJob(w, j, ev)
	for _, md := range w.newDefs {
		if m.overlay == nil {
			m.overlay = make(map[uint32]*Metadata)
		}
		m.overlay[md.ID] = md
		m.defs++
	}
	w.newDefs = w.newDefs[:0]
}
