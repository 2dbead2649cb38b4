package nettrace

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
