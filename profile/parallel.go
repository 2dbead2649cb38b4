package profile

import (
	"context"
	"errors"
	"io"
	"math"
	"runtime"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Reading on every core. A Builder needs its events in stream order
// (stacks are numbered as they are first seen, the rundown follows the
// samples it explains, GC suspensions pair up), so the work spread over the
// cores is the decoding: nettrace.ReadParallel's workers decode the event
// blocks, each into a convPart that keeps the events the Builder uses, and
// the merge, on the calling goroutine, adds them to the Builder in stream
// order. The Builder sees exactly the events, in the order, that a serial
// read gives it, so the profile is the same.

// parallelSerialBytes is how much of a stream Read decodes on the calling
// goroutine before it starts the workers, and maxParallelEventBytes the
// longest mean event (over those bytes) with which it starts them; it does
// not either when a quarter of the events or more were samples or
// allocation ticks. The workers take the decoding of the events off the
// calling goroutine, but not the reading of the bytes (the splitter copies
// the blocks), nor the Builder's work on the events it takes one by one,
// and they cost CPU. On 2 cores (BenchmarkReadParallel), decoding in
// parallel costs more CPU and saves no time on a trace where a third of
// the events are samples (objver4) or of large events (VoiceMemo), and
// saves about a third of the time or more on traces of millions of small
// events that the Builder skips or only counts.
const (
	parallelSerialBytes   = 8 << 20
	maxParallelEventBytes = 64
)

// maxKeptPartEvents bounds the events a part keeps the capacity for
// between runs (a run is one event block).
const maxKeptPartEvents = 1 << 14

// read is Read with the parallel reader's settings; it reads serially when
// only one core may run Go code (unless pcfg asks for workers).
func read(r io.Reader, cfg Config, pcfg nettrace.ParallelConfig) (*Profile, error) {
	tr, err := nettrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	b := NewBuilder(tr.Header(), cfg)
	// The events Add would drop at once (kindOther: on a wall profile the
	// allocation ticks, contention, exceptions and GC bookkeeping, half of
	// objver4's) are passed over by the Reader, which fills no Event for
	// them; Add would take only their time range, which the Reader keeps.
	// readParallel turns this off before the workers start.
	tr.SetSkip(b.skipsAll)
	if pcfg.Workers > 0 || runtime.GOMAXPROCS(0) > 1 {
		err = b.readParallel(tr, pcfg)
	} else {
		err = b.readAll(tr)
	}
	if lo, hi, ok := tr.SkippedTimeRange(); ok {
		b.minTS, b.maxTS = min(b.minTS, lo), max(b.maxTS, hi)
	}
	p := b.Finish()
	p.DroppedEvents = tr.Stats().DroppedEvents
	return p, err
}

// skipsAll reports whether Add does nothing with the events of md but take
// their time range (a kind is a function of the record and Config alone).
func (b *Builder) skipsAll(md *nettrace.Metadata) bool { return b.classify(md) == kindOther }

// readSerial adds tr's events with ReadEvent, to the end of the stream
// (done), or when limit is not negative until the reader has read past
// byte limit. err is the reader's error, nil at the end of the stream.
func (b *Builder) readSerial(tr *nettrace.Reader, limit int64) (done bool, err error) {
	if limit < 0 {
		return true, b.readAll(tr)
	}
	var ev nettrace.Event
	for i := 1; ; i++ {
		if err := tr.ReadEvent(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return true, nil
			}
			return true, err
		}
		if b.isSample(&ev) { // Add, inline
			b.addSample(&ev)
		} else {
			b.add(&ev)
		}
		if i&1023 == 0 && tr.Stats().Bytes >= limit {
			return false, nil
		}
	}
}

// readAll adds the rest of tr's events with ReadEvent; err is the reader's
// error, nil at the end of the stream. It is readSerial without a limit,
// in a loop of its own: readSerial's loop with a negative limit costs a
// few instructions more per event.
func (b *Builder) readAll(tr *nettrace.Reader) error {
	var ev nettrace.Event
	for {
		err := tr.ReadEvent(&ev)
		if err == nil {
			if b.isSample(&ev) { // Add, inline
				b.addSample(&ev)
			} else {
				b.add(&ev)
			}
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

// readParallel adds tr's events with nettrace.ReadParallel after the first
// pcfg.SerialBytes, which it reads itself (by default parallelSerialBytes,
// and then the rest too when the events are longer than
// maxParallelEventBytes on average).
func (b *Builder) readParallel(tr *nettrace.Reader, pcfg nettrace.ParallelConfig) error {
	limit := pcfg.SerialBytes
	if limit == 0 {
		limit = parallelSerialBytes
	}
	if limit > 0 {
		if done, err := b.readSerial(tr, limit); done {
			return err
		}
		// The events read so far: those added and those skipped.
		if st := tr.Stats(); pcfg.SerialBytes == 0 && (st.Bytes > maxParallelEventBytes*(st.Events+st.Skipped) || b.orderedEvents()*4 > st.Events+st.Skipped) {
			// Few events in many bytes, or many that the Builder takes
			// one by one: the workers would not pay.
			_, err := b.readSerial(tr, -1)
			return err
		}
	}
	// The rest of the current block goes to the first part, on this
	// goroutine, straight to the Builder; then the workers take over.
	// ReadParallel reads a Reader that skips on this goroutine alone, so
	// skipping stops here: the workers classify every event (the time
	// range of those skipped so far stays with the Reader).
	tr.SetSkip(nil)
	pcfg.SerialBytes = -1
	if pcfg.MaxInFlight <= 0 {
		// The merge is the slower side: blocks read far ahead only
		// take memory (each part is allocated per Read).
		pcfg.MaxInFlight = max(2*max(pcfg.Workers, runtime.GOMAXPROCS(0)), 3)
	}
	parts := 0
	return nettrace.ReadParallel(context.Background(), tr, pcfg,
		func() *convPart {
			parts++
			p := &convPart{}
			if parts == 1 {
				p.direct = b // ReadParallel's promise: the first part's events come first, on this goroutine
			} else {
				p.cls = NewBuilder(b.hdr, b.cfg)
			}
			p.Reset()
			return p
		},
		b.mergePart)
}

// orderedEvents is the number of events added so far that a convPart
// passes on one by one to the Builder, whose work on them is not spread
// over the cores: the samples and allocation ticks kept (the others are
// few).
func (b *Builder) orderedEvents() int64 {
	var n int64
	if b.ev != nil { // nil until the first allocation tick, exception or lock wait
		n = b.ev.alloc.Ticks
	}
	for _, t := range b.order {
		n += t.all
	}
	return n
}

// convPart keeps, for one event block decoded by a worker, what the
// Builder reads of the events it uses: a small record per event (the
// timestamp, the thread, the metadata record's slot, the payload's end in
// one buffer of copied payloads), and, per distinct stack, a copy of one
// Event struct that carries it (StackID, StackRegion and the stack, whose
// bytes ReadParallel keeps valid until the merge; nettrace has no other way
// to set an Event's stack). The merge sets the carrier's other fields from
// the record and adds it. Of the events the Builder does not use it keeps
// the time range. The records hold no pointers: the collector does not
// scan them, and keeping them runs no write barrier.
//
// The Builder reads Metadata, Timestamp, ThreadID, Payload, StackID,
// StackRegion and the stack of an event, nothing else: code of the Builder
// that reads another field must keep it here too.
//
// The first part adds its events to the Builder directly instead.
type convPart struct {
	_ [64]byte // off the cache lines of other parts (nettrace.Part)

	direct *Builder
	// cls classifies the events as the Builder does (a kind is a function
	// of the metadata record and Config alone), with its own caches, on
	// the worker.
	cls          *Builder
	kinds        []eventKind // cls.byIndex
	recs         []eventRec
	payload      []byte
	long         [][]byte // payloads longer than maxCopiedPayload
	mds          []*nettrace.Metadata
	carriers     []nettrace.Event
	userRec      []uint32 // per carrier: the record+1 of its user events, 0: none yet
	minTS, maxTS int64
	// mdCache and stackCache find recent metadata slots (by
	// Metadata.Index) and carriers (by StackID): slot+1, checked.
	mdCache    [64]uint32
	stackCache [256]uint32

	_ [64]byte
}

// eventRec is an event the Builder uses (see convPart).
type eventRec struct {
	ts         int64
	thread     uint64
	md         uint32 // in convPart.mds
	carrier    uint32 // in convPart.carriers
	payloadEnd uint32 // in convPart.payload, from the previous record's end
	// user: an event of another provider, standing for n of them on its
	// stack (see Event).
	user bool
	// long: the payload is the next of convPart.long.
	long bool
	n    uint32
}

// Event keeps ev unless the Builder would only take its timestamp.
func (p *convPart) Event(ev *nettrace.Event) {
	if b := p.direct; b != nil {
		if b.isSample(ev) { // Add, inline
			b.addSample(ev)
		} else {
			b.add(ev)
		}
		return
	}
	md := ev.Metadata
	if md == nil {
		return // Add ignores it
	}
	ts := ev.Timestamp
	if ts > p.maxTS {
		p.maxTS = ts
	}
	if ts < p.minTS {
		p.minTS = ts
	}
	mi := md.Index()
	kind := kindUnknown
	if uint(mi) < uint(len(p.kinds)) {
		kind = p.kinds[mi]
	}
	if kind == kindUnknown {
		kind = p.cls.classify(md)
		p.kinds = p.cls.byIndex
	}
	user := false
	switch kind {
	case kindOther:
		return // addEvent does nothing with them
	case kindUser:
		if ev.StackLen() == 0 {
			return // only the stack of a user event counts
		}
		user = true
	}
	mdSlot := p.mdCache[uint(mi)%uint(len(p.mdCache))] - 1
	if int(mdSlot) >= len(p.mds) || p.mds[mdSlot] != md {
		mdSlot = uint32(len(p.mds))
		p.mds = append(p.mds, md)
		p.mdCache[uint(mi)%uint(len(p.mdCache))] = mdSlot + 1
	}
	id := ev.StackID
	c := p.stackCache[id%uint32(len(p.stackCache))] - 1
	if int(c) >= len(p.carriers) || p.carriers[c].StackID != id || p.carriers[c].StackRegion != ev.StackRegion ||
		id == 0 && (ev.StackLen() > 0 || p.carriers[c].StackLen() > 0) {
		// A new stack, or an inline one (without an id: NetPerf's
		// events, which are read serially, have them).
		c = uint32(len(p.carriers))
		p.carriers = append(p.carriers, *ev)
		p.userRec = append(p.userRec, 0)
		p.stackCache[id%uint32(len(p.stackCache))] = c + 1
	}
	if user {
		// All an event of another provider does is count its stack: the
		// part's first one on a stack counts for the others (its place
		// in the stream is where the Builder may intern the stack).
		if i := p.userRec[c]; i > 0 && id != 0 {
			p.recs[i-1].n++
			return
		}
		p.userRec[c] = uint32(len(p.recs) + 1)
	}
	r := eventRec{ts: ts, thread: ev.ThreadID, md: mdSlot, carrier: c, user: user, n: 1}
	if pl := ev.Payload; len(pl) <= maxCopiedPayload {
		p.payload = append(p.payload, pl...)
	} else {
		// Longer payloads (method and module events) are not copied:
		// their slices stay valid until the merge.
		r.long = true
		p.long = append(p.long, pl)
	}
	r.payloadEnd = uint32(len(p.payload))
	p.recs = append(p.recs, r)
}

// maxCopiedPayload is the longest payload a convPart copies (a sample's is
// 4 bytes, an allocation tick's 30-90); a longer one's slice is kept.
const maxCopiedPayload = 128

// Reset empties the part; a large one lets its buffers go.
func (p *convPart) Reset() {
	if cap(p.recs) > maxKeptPartEvents {
		p.recs, p.payload = nil, nil
	}
	p.recs, p.payload = p.recs[:0], p.payload[:0]
	if cap(p.carriers) > maxKeptPartEvents {
		p.carriers = nil
	}
	clear(p.carriers) // no references to blocks and stacks read long ago
	clear(p.mds)
	clear(p.long)
	p.long = p.long[:0]
	p.carriers, p.mds, p.userRec = p.carriers[:0], p.mds[:0], p.userRec[:0]
	p.minTS, p.maxTS = math.MaxInt64, math.MinInt64
}

// mergePart adds a part's events to the Builder, in stream order.
func (b *Builder) mergePart(p *convPart) error {
	if p.direct != nil {
		return nil
	}
	// The time range of the events not kept (Add takes the kept ones').
	if p.minTS < b.minTS {
		b.minTS = p.minTS
	}
	if p.maxTS > b.maxTS {
		b.maxTS = p.maxTS
	}
	start, long := uint32(0), 0
	for i := range p.recs {
		r := &p.recs[i]
		ev := &p.carriers[r.carrier]
		// The metadata pointer is stored only when it changes (a store
		// runs the collector's write barrier while it marks).
		if md := p.mds[r.md]; ev.Metadata != md {
			ev.Metadata = md
		}
		ev.Timestamp, ev.ThreadID = r.ts, r.thread
		if r.long {
			ev.Payload = p.long[long]
			long++
		} else {
			ev.Payload = p.payload[start:r.payloadEnd:r.payloadEnd]
			start = r.payloadEnd
		}
		if r.user {
			b.countEventStack(ev, int64(r.n))
			continue
		}
		if b.isSample(ev) { // Add, inline
			b.addSample(ev)
		} else {
			b.add(ev)
		}
	}
	return nil
}
