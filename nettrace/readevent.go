package nettrace

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
)

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
