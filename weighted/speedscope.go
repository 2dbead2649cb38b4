package weighted

import (
	"encoding/binary"
	"io"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
	"github.com/clrdiag/clrdiag/internal/timeline"
)

// SpeedscopeSchema is the $schema value of speedscope files.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// speedscopeUnit maps a ValueType unit to one of speedscope's.
func speedscopeUnit(unit string) string {
	switch unit {
	case "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes":
		return unit
	}
	return "none"
}

// WriteSpeedscope writes the profile in speedscope's JSON format
// (https://www.speedscope.app/file-format-schema.json), weighed by the
// default sample type, stacks root first: first an "All threads" profile
// merging every group by stack, then one "sampled" profile per group with
// weight (for a CPU profile, per thread). With Runs (complete ones: not
// RunsPartial) a group's samples are in time order (speedscope's Time Order
// view is then a timeline); without them each distinct stack appears once. activeProfileIndex points at the
// busiest group, so speedscope opens on the thread that did the most work.
func WriteSpeedscope(w io.Writer, wp *Profile) error {
	unit := "none"
	if wp.Default >= 0 && wp.Default < len(wp.Types) {
		unit = speedscopeUnit(wp.Types[wp.Default].Unit)
	}
	merged := wp.merged()
	// The groups with weight get a profile, after "All threads".
	var shown []int
	active := 0
	size := 512
	for i, g := range wp.Groups {
		size += 24 * len(g.Samples)
		if g.Runs != nil {
			size += flushAt // a timeline: a stack and a weight per run
		}
		for _, s := range g.Samples {
			if s.Values[wp.Default] != 0 {
				if i == wp.Active {
					active = len(shown) + 1
				}
				shown = append(shown, i)
				break
			}
		}
	}
	for i := range wp.Frames {
		size += 24 + len(wp.Frames[i].Name) + len(wp.Frames[i].Module)
	}
	b := exportBuf(size)
	b = append(b, `{"$schema":`...)
	b = fastfmt.AppendJSONString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"clrdiag","name":`...)
	b = fastfmt.AppendJSONString(b, wp.Title())
	b = append(b, `,"activeProfileIndex":`...)
	b = fastfmt.AppendInt(b, int64(active))
	b = append(b, `,"shared":{"frames":[`...)
	var err error
	for i := range wp.Frames {
		fr := &wp.Frames[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = fastfmt.AppendJSONString(b, fr.Name)
		if fr.Module != "" {
			b = append(b, `,"file":`...)
			b = fastfmt.AppendJSONString(b, fr.Module)
		}
		b = append(b, '}')
		if b, err = flushFull(w, b); err != nil {
			return err
		}
	}
	if len(wp.Frames) > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"name":`...)
	b = fastfmt.AppendJSONString(b, NoFrames)
	b = append(b, `}]},"profiles":[`...)
	// Each stack's JSON array is encoded once, when first needed.
	stacks := newStackArrays(len(wp.Frames), wp.Stacks, merged)
	var scratch []Run // the runs of a group without a timeline

	// All threads: the distinct stacks with weight.
	var total int64
	for _, v := range merged {
		total += v
	}
	b = appendSampledHeader(b, "All threads", unit, 0, total)
	if b, err = appendSampledBody(w, b, &stacks, len(merged), func(i int) (int, int64) { return i, merged[i] }); err != nil {
		return err
	}

	for _, gi := range shown {
		g := &wp.Groups[gi]
		b = append(b, ',')
		if g.Runs != nil && !wp.RunsPartial {
			if b, err = appendSpeedscopeRuns(w, b, g, unit, wp.Period, &stacks, &scratch); err != nil {
				return err
			}
			continue
		}
		var end int64
		for _, s := range g.Samples {
			end += s.Values[wp.Default]
		}
		b = appendSampledHeader(b, g.Name, unit, 0, end)
		if b, err = appendSampledBody(w, b, &stacks, len(g.Samples), func(i int) (int, int64) {
			return g.Samples[i].Stack, g.Samples[i].Values[wp.Default]
		}); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	_, err = w.Write(b)
	return err
}

// appendSampledBody appends the samples (stacks' arrays) and weights of a
// sampled profile of n stacks, at(i) giving the i-th stack and its weight
// (those of weight 0 are left out), and closes the profile.
func appendSampledBody(w io.Writer, b []byte, stacks *stackArrays, n int, at func(int) (int, int64)) ([]byte, error) {
	var err error
	sep := false
	for i := range n {
		st, v := at(i)
		if v == 0 {
			continue
		}
		b = append(b, stacks.get(st, sep)...)
		sep = true
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	b = append(b, `],"weights":[`...)
	sep = false
	for i := range n {
		_, v := at(i)
		if v == 0 {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = fastfmt.AppendInt(b, v)
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return append(b, "]}"...), nil
}

// appendSampledHeader appends the start of a speedscope "sampled" profile,
// up to its samples.
func appendSampledHeader(b []byte, name, unit string, start, end int64) []byte {
	b = append(b, `{"type":"sampled","name":`...)
	b = fastfmt.AppendJSONString(b, name)
	b = append(b, `,"unit":"`...)
	b = append(b, unit...)
	b = append(b, `","startValue":`...)
	b = fastfmt.AppendInt(b, start)
	b = append(b, `,"endValue":`...)
	b = fastfmt.AppendInt(b, end)
	return append(b, `,"samples":[`...)
}

// appendSpeedscopeRuns appends the speedscope profile of a group's Runs,
// each run a sample weighing Count × period.
func appendSpeedscopeRuns(w io.Writer, b []byte, g *Group, unit string, period int64, stacks *stackArrays, scratch *[]Run) ([]byte, error) {
	runs := g.runList(scratch)
	first := true
	var start, count, at int64
	if runs.samples >= 0 {
		// Every run of a timeline: its count, and the first's start.
		count = runs.samples
		if len(runs.chunks) > 0 {
			_, _, ticks, _ := timeline.RunAt(runs.chunks[0], 0)
			start, first = int64(runs.tl.StartOf(ticks)), false
		}
	} else {
		for _, chunk := range runs.chunks {
			for i := 0; i < len(chunk); i++ {
				sk, n, delta, last := timeline.RunAt(chunk, i)
				i = last
				at += delta
				if runs.skip(sk) {
					continue
				}
				if first {
					start, first = int64(runs.tl.StartOf(at)), false
				}
				count += int64(n)
			}
		}
	}
	for _, r := range runs.runs {
		if first {
			start, first = int64(r.Start), false
		}
		count += r.Count
	}
	b = appendSampledHeader(b, g.Name, unit, start, start+count*period)
	var err error
	sep := false
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, _, _, last := timeline.RunAt(chunk, i)
			i = last
			if runs.skip(sk) {
				continue
			}
			// stacks.get, inline
			stack := runs.stacks[sk>>1]
			sp := stacks.span[stack]
			if sp == 0 {
				sp = stacks.encode(stack)
			}
			lo := int(sp>>32) - 1
			if !sep {
				lo++
			}
			sep = true
			b = append(b, stacks.enc[lo:uint32(sp)]...)
			if b, err = flushFull(w, b); err != nil {
				return b, err
			}
		}
	}
	for _, r := range runs.runs {
		b = append(b, stacks.get(r.Stack, sep)...)
		sep = true
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	b = append(b, `],"weights":[`...)
	// Most runs weigh the same (one sample), so the last weight's digits
	// are kept, after a comma for every weight but the first.
	wt := newWeightText(period)
	// Consecutive runs of the same count (most weigh one sample) are
	// counted, then written at once (appendN).
	pend := 0
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, n, _, last := timeline.RunAt(chunk, i)
			i = last
			if runs.skip(sk) {
				continue
			}
			if c := int64(n); c != wt.count {
				if pend != 1 {
					if b, err = wt.appendN(w, b, pend); err != nil {
						return b, err
					}
				} else {
					// One run (the counts alternate): as appendN
					// would, inline. After the first element, the
					// whole of wt.buf is copied (a few moves, where
					// append calls memmove) and b cut after it.
					if n := len(b); wt.lo == 0 && cap(b)-n >= len(wt.buf) {
						*(*[len(wt.buf)]byte)(b[n : n+len(wt.buf)]) = wt.buf
						b = b[:n+wt.n]
					} else {
						b = append(b, wt.buf[wt.lo:wt.n]...)
					}
					wt.lo = 0
					if b, err = flushFull(w, b); err != nil {
						return b, err
					}
				}
				wt.set(c)
				pend = 0
			}
			pend++
		}
	}
	if b, err = wt.appendN(w, b, pend); err != nil {
		return b, err
	}
	for _, r := range runs.runs {
		b = append(b, wt.text(r.Count)...)
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return append(b, "]}"...), nil
}

// weightText writes the weights of runs, count × period, as the elements
// of a JSON list, keeping the text of the last one and of the small
// counts (a thread whose runs alternate between one and two samples would
// otherwise have every weight formatted).
type weightText struct {
	period, count int64
	// buf[lo:n] is the next element: a comma (lo 0; 1 for the first
	// element), then count × period.
	lo, n int
	buf   [24]byte
	// small[c] is buf for count c, smallN[c] its n (0 until written).
	small  [8][24]byte
	smallN [8]uint8
}

// newWeightText returns a weightText whose next element is the first,
// holding the text of count 0 ("0" for any period).
func newWeightText(period int64) weightText {
	return weightText{period: period, lo: 1, n: 2, buf: [24]byte{',', '0'}}
}

// text returns the next element: count × period, after a comma unless it
// is the first.
func (t *weightText) text(count int64) []byte {
	if count != t.count {
		t.set(count)
	}
	s := t.buf[t.lo:t.n]
	t.lo = 0
	return s
}

// appendN appends the next k elements, all of the current count, and
// hands b to w (flushFull) as it fills. After the first, the elements are
// copies of one text, written by doubling what is written of them: a copy
// per doubling rather than one per element.
func (t *weightText) appendN(w io.Writer, b []byte, k int) ([]byte, error) {
	var err error
	if k > 0 && t.lo != 0 { // the first element of the list: no comma
		b = append(b, t.buf[t.lo:t.n]...)
		t.lo = 0
		k--
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	el := t.buf[:t.n]
	for k > 0 {
		// As many as fit below flushAt (at least one): b grows no more
		// than element by element.
		m := min(k, max((flushAt-len(b))/len(el), 1))
		n := len(b)
		b = append(b, el...)
		for done := 1; done < m; {
			c := min(done, m-done)
			b = append(b, b[n:n+c*len(el)]...)
			done += c
		}
		k -= m
		if b, err = flushFull(w, b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// set makes count × period the text of the next elements.
func (t *weightText) set(count int64) {
	t.count = count
	if uint64(count) < uint64(len(t.small)) && t.smallN[count] != 0 {
		t.buf, t.n = t.small[count], int(t.smallN[count])
		return
	}
	t.n = len(fastfmt.AppendInt(t.buf[:1], count*t.period))
	if uint64(count) < uint64(len(t.small)) {
		t.small[count], t.smallN[count] = t.buf, uint8(t.n)
	}
}

// stackArrays encodes stacks as speedscope sample arrays (frame indexes,
// root first; the pseudo-frame after the last frame for an empty stack),
// each once, after a comma (the separator before the array in a list).
type stackArrays struct {
	frames int
	stacks []Stack
	enc    []byte
	// span[i] is enc[lo:hi] of stack i as lo<<32 | hi, 0 until encoded;
	// one entry per stack from the start, so that get, called for every
	// sample, inlines to a load and a test.
	span []uint64 // lo<<32 | hi
	// text[f] is the element of frame f, a comma and its index in decimal
	// (up to 7 bytes, little-endian), with its length in the top byte; 0
	// until made (frameText). Stacks share most frames: each index is
	// formatted once, and stored by one 8-byte write.
	text []uint64
}

// newStackArrays returns the arrays of stacks, with room for those whose
// weight is not 0 (the stacks of the All threads profile).
func newStackArrays(frames int, stacks []Stack, weights []int64) stackArrays {
	// Each frame index takes at most as many digits as the largest.
	digits := len(fastfmt.AppendInt(nil, int64(frames)))
	size := 0
	for st, v := range weights {
		if v != 0 {
			size += 3 + max(len(stacks[st].Frames), 1)*(digits+1)
		}
	}
	return stackArrays{frames: frames, stacks: stacks, enc: make([]byte, 0, size), span: make([]uint64, len(stacks)),
		text: make([]uint64, frames)}
}

// get returns the array of a stack, after a comma with sep.
func (s *stackArrays) get(stack int, sep bool) []byte {
	sp := s.span[stack]
	if sp == 0 {
		sp = s.encode(stack)
	}
	lo := int(sp >> 32)
	if sep {
		lo--
	}
	return s.enc[lo:uint32(sp)]
}

// frameText makes text[f]: a comma and f in decimal, packed, with its
// length in the top byte. An index of more than six digits (a profile of
// a million frames) is formatted each time instead.
func (s *stackArrays) frameText(f int) uint64 {
	var b [8]byte
	e := fastfmt.AppendInt(append(b[:0], ','), int64(f))
	if len(e) > 7 {
		return 0 // not cached; never stored into b (appendInt grew e)
	}
	t := binary.LittleEndian.Uint64(b[:]) | uint64(len(e))<<56
	s.text[f] = t
	return t
}

// encode writes the array of a stack and returns its span.
func (s *stackArrays) encode(stack int) uint64 {
	s.enc = append(s.enc, ',')
	lo := len(s.enc)
	frames := s.stacks[stack].Frames
	if len(frames) == 0 {
		s.enc = fastfmt.AppendInt(append(s.enc, '['), int64(s.frames))
	}
	// Every frame's element after a comma (frameText), the first one's
	// comma then made the opening bracket.
	enc := s.enc
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		t := s.text[f]
		if t == 0 {
			if t = s.frameText(f); t == 0 {
				enc = fastfmt.AppendInt(append(enc, ','), int64(f))
				continue
			}
		}
		n, l := len(enc), int(t>>56)
		if cap(enc)-n >= 8 {
			// All 8 bytes are written, the length byte past the
			// element into spare capacity (written over next).
			enc = enc[:n+8]
			binary.LittleEndian.PutUint64(enc[n:], t)
			enc = enc[:n+l]
		} else {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], t)
			enc = append(enc, b[:l]...)
		}
	}
	if len(frames) > 0 {
		enc[lo] = '['
	}
	s.enc = append(enc, ']')
	s.span[stack] = uint64(lo)<<32 | uint64(len(s.enc))
	return s.span[stack]
}
