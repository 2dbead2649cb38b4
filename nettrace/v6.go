package nettrace

import "encoding/binary"

// This file holds the block parsers that only exist in NetTrace V6.

func (r *Reader) parseMetadataBlockV6(b []byte, off int64) error {
	if len(b) < 2 {
		return r.errAt(off, nil, "metadata block of %d bytes has no header", len(b))
	}
	p := 2 + int(binary.LittleEndian.Uint16(b))
	if p > len(b) {
		return r.errAt(off, nil, "metadata block header size %d exceeds the block (%d bytes)", p-2, len(b))
	}
	for p < len(b) {
		if p+2 > len(b) {
			return r.errAt(off+int64(p), nil, "metadata row size runs past the end of the block")
		}
		n := int(binary.LittleEndian.Uint16(b[p:]))
		p += 2
		if n > len(b)-p {
			return r.errAt(off+int64(p-2), nil, "metadata row of %d bytes runs past the end of the block (%d left)", n, len(b)-p)
		}
		md, err := parseMetadataRowV6(b[p : p+n])
		if err != nil {
			return r.errAt(off+int64(p), err, "metadata row")
		}
		if err := r.addMetadata(md, off+int64(p)); err != nil {
			return err
		}
		p += n
	}
	return nil
}

func (r *Reader) parseSPBlockV6(b []byte, off int64) error {
	c := newCursor(b)
	ts := c.U64("")
	flags := c.U32("")
	n := c.U32("")
	if c.err() == nil && int64(n)*2 > int64(c.remaining()) {
		return r.errAt(off+12, nil, "sequence point claims %d threads in %d bytes", n, c.remaining())
	}
	for i := uint32(0); i < n && c.err() == nil; i++ {
		t := c.Uvarint("")
		s := uint32(c.Uvarint(""))
		if c.err() == nil {
			r.seqCheckpoint(t, s)
		}
	}
	if c.err() != nil {
		return r.errAt(off+int64(c.Offset()), c.err(), "sequence point block")
	}
	r.stats.SequencePoints++
	r.stats.LastSequencePoint = int64(ts)
	r.resetStacks()
	r.ownLabels()
	clear(r.labels)
	if flags&spFlushThreads != 0 {
		r.seqForgetAll()
		r.ownThreads()
		clear(r.threads)
		r.lastThrOK = false
	}
	if flags&spFlushMetadata != 0 {
		r.ownMeta()
		clear(r.meta)
		clear(r.skipMeta)
		clear(r.metaMap)
		if r.role == roleSplitter {
			r.pending = append(r.pending, ordAction{kind: actFlushMeta})
		}
	}
	return nil
}

func (r *Reader) parseThreadBlock(b []byte, off int64) error {
	p := 0
	for p < len(b) {
		if p+2 > len(b) {
			return r.errAt(off+int64(p), nil, "thread row size runs past the end of the block")
		}
		n := int(binary.LittleEndian.Uint16(b[p:]))
		p += 2
		if n > len(b)-p {
			return r.errAt(off+int64(p-2), nil, "thread row of %d bytes runs past the end of the block", n)
		}
		c := newCursor(b[p : p+n])
		t := &Thread{Index: c.Uvarint("")}
		for c.remaining() > 0 {
			switch c.U8("") {
			case threadName:
				t.Name = c.str8()
			case threadOSProcessID:
				t.OSProcessID = c.Uvarint("")
			case threadOSThreadID:
				t.OSThreadID = c.Uvarint("")
			case threadKeyValue:
				k, v := c.str8(), c.str8()
				if t.KeyValues == nil {
					t.KeyValues = make(map[string]string)
				}
				t.KeyValues[k] = v
			default:
				c.Seek("", len(c.Bytes())) // unknown entry: its size is unknown
			}
		}
		if c.err() != nil {
			return r.errAt(off+int64(p), c.err(), "thread row")
		}
		if _, dup := r.threads[t.Index]; dup {
			return r.errAt(off+int64(p), nil, "thread index %d is defined twice", t.Index)
		}
		if len(r.threads) >= 1<<20 {
			return r.errAt(off+int64(p), nil, "more than %d threads in the thread table", 1<<20)
		}
		r.ownThreads()
		r.threads[t.Index] = t
		r.lastThrOK = false
		p += n
	}
	return nil
}

func (r *Reader) parseRemoveThreadBlock(b []byte, off int64) error {
	c := newCursor(b)
	for c.remaining() > 0 {
		idx := c.Uvarint("")
		seq := uint32(c.Uvarint(""))
		if c.err() != nil {
			break
		}
		r.seqCheckpoint(idx, seq)
		r.seqForget(idx)
		r.ownThreads()
		delete(r.threads, idx)
	}
	r.lastThrOK = false
	if c.err() != nil {
		return r.errAt(off+int64(c.Offset()), c.err(), "remove-thread block")
	}
	return nil
}

func (r *Reader) parseLabelListBlock(b []byte, off int64) error {
	c := newCursor(b)
	first := c.U32("")
	count := c.U32("")
	if c.err() != nil {
		return r.errAt(off, c.err(), "label list block")
	}
	if first == 0 || uint64(first)+uint64(count) > 1<<32 {
		return r.errAt(off, nil, "label list block starts at index %d with %d lists; indexes must be 1 to 2^32-1", first, count)
	}
	if int64(count) > int64(c.remaining()) {
		return r.errAt(off+4, nil, "label list block claims %d lists in %d bytes", count, c.remaining())
	}
	for i := uint32(0); i < count && c.err() == nil; i++ {
		l := &LabelList{}
		for c.err() == nil {
			k := c.U8("")
			switch k &^ labelLast {
			case labelActivityID:
				l.ActivityID = c.guid()
			case labelRelatedActivityID:
				l.RelatedActivityID = c.guid()
			case labelTraceID:
				l.TraceID = c.guid()
			case labelSpanID:
				l.SpanID = c.U64("")
			case labelKeyValueString:
				k, v := c.str8(), c.str8()
				if l.Strings == nil {
					l.Strings = make(map[string]string)
				}
				l.Strings[k] = v
			case labelKeyValueVarInt:
				k, v := c.str8(), c.varint()
				if l.Ints == nil {
					l.Ints = make(map[string]int64)
				}
				l.Ints[k] = v
			case labelOpCode:
				v := c.U8("")
				l.Opcode = &v
			case labelKeywords:
				v := c.U64("")
				l.Keywords = &v
			case labelLevel:
				v := c.U8("")
				l.Level = &v
			case labelVersion:
				v := c.U8("")
				l.Version = &v
			default:
				c.fail("unknown label kind %d", k&^labelLast)
			}
			if k&labelLast != 0 {
				break
			}
		}
		r.ownLabels()
		if r.labels == nil {
			r.labels = make(map[uint32]*LabelList)
		}
		r.labels[first+i] = l
	}
	if c.err() != nil {
		return r.errAt(off+int64(c.Offset()), c.err(), "label list block")
	}
	return nil
}

// fillV6 maps thread-table indexes to OS ids and applies label lists.
func (r *Reader) fillV6(ev *Event) {
	ev.ThreadIndex, ev.CaptureThreadIndex = ev.ThreadID, ev.CaptureThreadID
	ev.ThreadID = r.osThread(ev.ThreadIndex)
	ev.CaptureThreadID = r.osThread(ev.CaptureThreadIndex)
	ev.LabelListID = r.st.label
	if r.st.label == 0 {
		return
	}
	if ll := r.labels[r.st.label]; ll != nil {
		ev.Labels = ll
		ev.ActivityID = ll.ActivityID
		ev.RelatedActivityID = ll.RelatedActivityID
	}
}

func (r *Reader) osThread(idx uint64) uint64 {
	if r.lastThrOK && idx == r.lastThrIdx {
		return r.lastThrOS
	}
	os := idx
	if t, ok := r.threads[idx]; ok && t.OSThreadID != 0 {
		os = t.OSThreadID
	}
	r.lastThrIdx, r.lastThrOS, r.lastThrOK = idx, os, true
	return os
}
