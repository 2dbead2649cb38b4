// Package timeline is the compact encoding of a thread's samples in time
// order: the profile builder writes it in place as samples stream in, and
// the exporters of package weighted read its chunks in place (a loop over
// a chunk costs a few instructions a run, a call per run several times
// that). Nothing outside those two packages needs it: weighted.Timeline is
// the public face.
package timeline

import (
	"time"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Word is 8 bytes of a timeline: the head of a run, or the extension word
// that follows the head of a run that needs one.
//
// A head's A is the run's stack (the builder's, see Data.Stacks) shifted
// left twice, with bit 1 set for Managed and bit 0 for a head followed by
// its extension (stackKind is A >> 1; a timeline of more than 2^30 stacks
// stops, as Config.MaxTimelineRuns stops it); its B is the low 32 bits of
// delta, the run's start in ticks minus the start of the run before (the
// start itself for the first run). An extension's A is the run's sample
// count, its B the high 32 bits of delta. A run without an extension has
// one sample and a delta that fits in an int32 (B sign-extended). The
// starts stay in ticks (Data.StartOf converts them): a delta in
// nanoseconds could need more bits than the same one in ticks, and the
// conversion is made once per run that a writer reads the start of
// anyway.
//
// Most runs are one sample a period after the one before: 8 bytes, where
// a run of stack, count and start took 16 (objver4's timelines of 30 000
// runs, 490 KB per conversion, were a quarter of what a chromium or
// speedscope conversion allocated).
type Word struct {
	A, B uint32
}

// Chunk sizes, in words: the first chunk holds MinChunk, each next one
// twice as many, up to MaxChunk (2 KB): a thread's last chunk is half
// empty on average, and with chunks of up to 8192 runs the slack was a
// fifth of objver4's timeline; with 128 to 512 words, a third of
// counters-truncated's (15 threads of 80 to 676 runs), which these sizes
// make a seventh. A run's head and its extension are always in the same
// chunk.
const (
	MinChunk = 64
	MaxChunk = 256
)

// Data is a timeline: runs in chunks that are never copied as it grows.
type Data struct {
	Chunks [][]Word
	// Samples counts the runs' samples.
	Samples int64
	// The runs hold the builder's stacks (those of the trace, before
	// symbolising); Stacks maps them to the profile's Stacks. They are
	// mapped as the runs are read (a load a run) rather than rewritten
	// when the profile is finished (a pass over every run).
	Stacks []int
	// The runs' starts are in ticks: a run's start, as an offset from the
	// profile's start, is Clock.DurationOf(ticks - Base) (its ticks the
	// sum of the deltas up to it).
	Clock *nettrace.Header
	Base  int64
}

// StartOf returns the offset from the profile's start of ticks.
func (d *Data) StartOf(ticks int64) time.Duration { return d.Clock.DurationOf(ticks - d.Base) }

// Count returns the number of runs of chunks and of their samples.
func Count(chunks [][]Word) (runs int, samples int64) {
	for _, c := range chunks {
		for i := 0; i < len(c); i++ {
			_, n, _, last := RunAt(c, i)
			i = last
			runs++
			samples += int64(n)
		}
	}
	return runs, samples
}

// RunAt decodes the run whose head is c[i]: its stackKind (its stack, see
// Data.Stacks, shifted left once, the low bit set for Managed), sample
// count and delta, and the index of its last word (i, or i+1 for a run
// with an extension), from which a loop's i++ moves to the next run.
func RunAt(c []Word, i int) (sk, count uint32, delta int64, last int) {
	h := c[i]
	if h.A&1 == 0 {
		return h.A >> 1, 1, int64(int32(h.B)), i
	}
	x := c[i+1]
	return h.A >> 1, x.A, int64(uint64(x.B)<<32 | uint64(h.B)), i + 1
}

// A builder fills a timeline's last chunk in place, through its own copy
// of the chunk's slice: a sample then costs no lookup of the chunk, and a
// new run stores only a length. The timeline learns the chunk's length
// when the next chunk starts (Grow) and at the end (Sync).

// Grow starts the next chunk, with the words of a run (its head, and its
// extension unless x is nil), after last (the last chunk as filled in
// place), and returns it.
func (d *Data) Grow(last []Word, h Word, x *Word) []Word {
	d.Sync(last)
	size := MinChunk
	if len(d.Chunks) > 0 {
		size = min(2*cap(last), MaxChunk)
	}
	c := make([]Word, 1, size)
	c[0] = h
	if x != nil {
		c = append(c, *x)
	}
	d.Chunks = append(d.Chunks, c)
	return c
}

// Sync records the length of the last chunk, filled in place as last.
func (d *Data) Sync(last []Word) {
	if k := len(d.Chunks) - 1; k >= 0 {
		d.Chunks[k] = last
	}
}
