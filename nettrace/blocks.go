package nettrace

import (
	"encoding/binary"
	"slices"
)

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
	if int64(len(r.arena))+int64(len(b)) > 1<<31 {
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
