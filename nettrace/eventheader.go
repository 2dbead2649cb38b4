package nettrace

import (
	"encoding/binary"

	"github.com/clrdiag/clrdiag/internal/wire"
)

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
		if v, p = wire.UvarintAt(b, p); p < 0 {
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
		if v, p = wire.UvarintAt(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad metadata id varint in event header")
		}
		st.metaID = uint32(v)
	}
	if flags&flagCaptureThread != 0 {
		if v, p = wire.UvarintAt(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad sequence number varint in event header")
		}
		st.seq += uint32(v) + 1
		if st.capThread, p = wire.UvarintAt(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad capture thread varint in event header")
		}
		if v, p = wire.UvarintAt(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad processor number varint in event header")
		}
		st.proc = uint32(v)
	} else if st.metaID != 0 {
		st.seq++
	}
	if flags&flagThreadID != 0 {
		if st.thread, p = wire.UvarintAt(b, p); p < 0 {
			return p, r.blobErr(r.pos, "bad thread id varint in event header")
		}
	}
	if flags&flagStackID != 0 {
		if v, p = wire.UvarintAt(b, p); p < 0 {
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
			if v, p = wire.UvarintAt(b, p); p < 0 {
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
		if v, p = wire.UvarintAt(b, p); p < 0 {
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
