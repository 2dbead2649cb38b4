package profile

import (
	"math"
	"slices"
)

// countLog records a thread's sample counts by key (stack<<1 | 1 for
// Managed) as its recent stacks are flushed: a word per flush, the key
// above the count (32 bits each: a stack index fits in 31, the stack store
// numbers them with int32), summed by stack in Finish, which sums the keys
// of a stack anyway. A thread flushes a key a few times; a hash table by
// key costs many times a word's append a flush, much of it in its growth.
// The words are kept
// in chunks, a first small one then chunks of logChunk words, so that
// growing copies nothing and leaves less room unused than doubling. A
// thread that cycles through more stacks than it remembers flushes at each
// sample: the log is then compacted (sorted, and summed by key) whenever it
// has doubled since the last compaction, so that it stays within about
// twice its keys, plus minCompact words.
type countLog struct {
	chunks    [][]uint64 // the full chunks
	words     []uint64   // the last chunk, filled in place
	n         int        // words in chunks
	compacted int        // words after the last compaction
}

const (
	// minCompact is the length under which a countLog is not compacted.
	minCompact = 1024
	// firstChunk and logChunk are the sizes of a countLog's first chunk
	// and of the others.
	firstChunk = 16
	logChunk   = 128
)

// add adds v (> 0) to the count of key k (0 <= k < 1<<32).
func (c *countLog) add(k, v int64) {
	if n := len(c.words); n < cap(c.words) && v <= math.MaxUint32 {
		c.words = c.words[:n+1]
		c.words[n] = uint64(k)<<32 | uint64(v)
		return
	}
	for ; v > math.MaxUint32; v -= math.MaxUint32 {
		c.push(uint64(k)<<32 | math.MaxUint32)
	}
	c.push(uint64(k)<<32 | uint64(v))
}

// push appends a word, starting a chunk when the last one is full, after
// compacting the log when it has doubled since the last compaction.
func (c *countLog) push(w uint64) {
	if len(c.words) == cap(c.words) {
		if c.n+len(c.words) >= max(minCompact, 2*c.compacted) {
			c.compact()
		}
		if len(c.words) == cap(c.words) {
			size := logChunk
			if c.words == nil {
				size = firstChunk
			} else {
				c.chunks = append(c.chunks, c.words)
				c.n += len(c.words)
			}
			c.words = make([]uint64, 0, size)
		}
	}
	c.words = append(c.words, w)
}

// compact sorts the log into one chunk and sums the words of each key,
// into more than one word when the sum does not fit in 32 bits. The chunk
// keeps the log's length as its capacity, room for the words to come.
func (c *countLog) compact() {
	all := make([]uint64, 0, c.n+len(c.words))
	for _, ch := range c.chunks {
		all = append(all, ch...)
	}
	all = append(all, c.words...)
	slices.Sort(all)
	out := all[:0]
	for _, w := range all {
		if m := len(out) - 1; m >= 0 && out[m]>>32 == w>>32 && out[m]&math.MaxUint32+w&math.MaxUint32 <= math.MaxUint32 {
			out[m] += w & math.MaxUint32
			continue
		}
		out = append(out, w)
	}
	c.chunks, c.words, c.n, c.compacted = nil, out, 0, len(out)
}

// seal puts the last chunk with the others: the log is then read from
// chunks.
func (c *countLog) seal() {
	if len(c.words) > 0 {
		c.chunks = append(c.chunks, c.words)
		c.n += len(c.words)
	}
	c.words = nil
}
