package weighted

import (
	"cmp"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
	"github.com/clrdiag/clrdiag/internal/timeline"
	"github.com/clrdiag/clrdiag/nettrace"
)

// WriteChromium writes the groups' Runs as Chromium trace-event JSON, which
// Perfetto (https://ui.perfetto.dev) and Chrome DevTools' Performance panel
// open: per thread, a "B" event when a frame appears on the sampled stack
// and an "E" event with the same name and category (the frame's module)
// when it leaves it, timestamps in microseconds from the start of the trace
// and never going back on a thread. Gaps longer than four periods without
// samples close every frame, and so does the end of each run when
// wp.RunsApart. "M" events name the process and the threads
// and sort the busiest thread first. It needs Runs (a profile built with
// Config.Timeline) and returns ErrNoTimeline without them.
func WriteChromium(w io.Writer, wp *Profile) error {
	hasRuns := false
	size := 512
	for _, g := range wp.Groups {
		if g.Runs != nil {
			hasRuns = true
			size += chromiumChunk // B and E events per run
		}
	}
	if !hasRuns && len(wp.Groups) > 0 {
		return ErrNoTimeline
	}
	b := make([]byte, 0, min(size, chromiumChunk+4096))
	b = append(b, `{"displayTimeUnit":"ms","traceEvents":[`...)
	pid := strconv.Itoa(wp.ProcessID)
	b = append(b, `{"ph":"M","name":"process_name","pid":`...)
	b = append(b, pid...)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = fastfmt.AppendJSONString(b, wp.Title())
	b = append(b, `}}`...)
	if !hasRuns {
		b = append(b, "]}\n"...)
		_, err := w.Write(b)
		return err
	}
	// Threads sort by work, the busiest first.
	rank := make([]int, len(wp.Groups))
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(i, j int) int { return cmp.Compare(wp.Groups[j].Work, wp.Groups[i].Work) })
	sortIndex := make([]int, len(wp.Groups))
	for r, gi := range rank {
		sortIndex[gi] = r
	}
	cw := chromiumWriter{w: w, wp: wp, period: time.Duration(wp.Period),
		events: newChromiumEvents(wp.Frames)}
	var err error
	for gi := range wp.Groups {
		g := &wp.Groups[gi]
		if g.Runs == nil {
			continue
		}
		tid := strconv.FormatUint(g.ThreadID, 10)
		b = append(b, ",\n"...)
		b = append(b, `{"ph":"M","name":"thread_name","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"name":`...)
		b = fastfmt.AppendJSONString(b, g.Name)
		b = append(b, `}},`...)
		b = append(b, "\n"...)
		b = append(b, `{"ph":"M","name":"thread_sort_index","pid":`...)
		b = append(b, pid...)
		b = append(b, `,"tid":`...)
		b = append(b, tid...)
		b = append(b, `,"args":{"sort_index":`...)
		b = fastfmt.AppendInt(b, int64(sortIndex[gi]))
		b = append(b, `}}`...)
		cw.setSuffix(pid, tid)
		if b, err = cw.appendRuns(b, g); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	_, err = w.Write(b)
	return err
}

// chromiumChunk is the size at which WriteChromium hands its output to the
// writer: an eighth of the other exporters' flushAt, as the conversion's
// allocation drives the collector's work (as foldedChunk), and a chunk
// holds about 85 events (the CLI's writer buffers 64 KB). The buffer
// keeps 4 KB more, for the events of a run that starts below it.
const chromiumChunk = 8 << 10

// chromiumEvents holds each frame's B event up to its timestamp. Its E
// event is the same text with another phase, at phaseAt (the writers patch
// that byte after copying the B event).
type chromiumEvents struct {
	frames []Frame
	enc    []byte
	// span[i]: enc[span[i].lo:span[i].hi] opens frame i.
	span []eventSpan
	// copied is how many bytes of an event run copies (eventBlock): two
	// blocks, or more for a longer event, in steps of 32 bytes (copy32).
	copied int
	// cat is the category of the frame encoded last, and
	// enc[catAt[0]:catAt[1]] its text from ,"cat": to the timestamp: most
	// frames share it with the frame before, and copy it.
	cat   string
	catAt [2]int
}

// eventSpan is where an event is in chromiumEvents.enc (a struct, as the
// compiler keeps its fields in registers, those of an array in memory).
type eventSpan struct{ lo, hi int32 }

// phaseAt is the index of the phase ("B" or "E") in an encoded event.
const phaseAt = len(",\n{\"ph\":\"")

func newChromiumEvents(frames []Frame) chromiumEvents {
	// Room for the events of every frame, unless a name needs escaping
	// (appending frame by frame would allocate about as much again), and
	// to read the bytes run copies (copied) from the last.
	const quoted = len(",\n{\"ph\":\"B\",\"name\":\"\",\"cat\":\"\",\"ts\":")
	size, longest := 0, 0
	for i := range frames {
		n := len(frames[i].Name) + max(len(frames[i].Module), len(unknownModule))
		size, longest = size+n, max(longest, n)
	}
	size += len(frames)*quoted + max(2*eventBlock, longest+quoted+31)
	e := chromiumEvents{frames: frames, enc: make([]byte, 0, size), span: make([]eventSpan, len(frames))}
	// Every frame, at once: the loops that write the events call nothing
	// (a call spills their values, and reloads them after it), and the
	// frames of a time profile are those of its samples, which its runs
	// hold.
	e.copied = 2 * eventBlock
	for f := range frames {
		e.encode(f)
		e.copied = max(e.copied, (int(e.span[f].hi-e.span[f].lo)+31)&^31)
	}
	e.enc = slices.Grow(e.enc, e.copied) // when a name needed escaping
	return e
}

// encode appends frame f's B event and records its span.
func (e *chromiumEvents) encode(f int) {
	fr := &e.frames[f]
	cat := fr.Module
	if cat == "" {
		cat = unknownModule
	}
	begin := len(e.enc)
	e.enc = append(e.enc, ",\n{\"ph\":\"B\",\"name\":"...)
	e.enc = fastfmt.AppendJSONString(e.enc, fr.Name)
	if cat == e.cat { // never "" (unknownModule)
		e.enc = append(e.enc, e.enc[e.catAt[0]:e.catAt[1]]...)
	} else {
		lo := len(e.enc)
		e.enc = append(e.enc, `,"cat":`...)
		e.enc = fastfmt.AppendJSONString(e.enc, cat)
		e.enc = append(e.enc, `,"ts":`...)
		e.cat, e.catAt = cat, [2]int{lo, len(e.enc)}
	}
	e.span[f] = eventSpan{int32(begin), int32(len(e.enc))}
}

// eventBlock is how many bytes of an event (chromiumEvents.enc) the
// writers copy at once (copy32): most events are one or two blocks. An
// event is read past its end (into the next event or enc's spare
// capacity) and written past it (what follows it overwrites the rest). An
// append calls memmove, and the values of the loop around it are reloaded
// after the call, which cost more than the copy.
const eventBlock = 64

// copy32 copies s to d, 8 bytes at a time: a load and a store each,
// addressed from the slices' pointers and indexes (a copy of an array of
// more than 16 bytes is a call to memmove, as the arrays could overlap,
// and one of [16]byte computes each address first). Two copy32 are a
// block (eventBlock).
func copy32(d, s *[32]byte) {
	*(*[8]byte)(d[0:8]) = *(*[8]byte)(s[0:8])
	*(*[8]byte)(d[8:16]) = *(*[8]byte)(s[8:16])
	*(*[8]byte)(d[16:24]) = *(*[8]byte)(s[16:24])
	*(*[8]byte)(d[24:32]) = *(*[8]byte)(s[24:32])
}

// sixDigits is chromiumWriter.stampHigh for a timestamp of 100 ms to 1 s:
// one of six digits of microseconds and none above.
const sixDigits = ^uint64(0)

// chromiumWriter writes the B and E events of groups' Runs.
type chromiumWriter struct {
	w      io.Writer
	wp     *Profile
	period time.Duration
	events chromiumEvents
	// stampBuf holds the current timestamp right-aligned in its first
	// fastfmt.MicrosLen bytes, then the group's suffix (,"pid":..,"tid":..}); ts
	// is the timestamp and the suffix, what ends every event at that time.
	stampBuf []byte
	ts       []byte
	// tsPad is ts and what follows it in stampBuf, tsCopy bytes.
	tsPad *[tsCopy]byte
	// stampHigh is the current timestamp's whole seconds (its digits
	// above the last six of microseconds); sixDigits when it has none but
	// six digits, 0 when it has fewer (or is negative).
	stampHigh uint64
	// The state of the group being written: open is the stack whose
	// frames are open (leaf first; nil for none; all of a stack's frames
	// are open once its run is written), openStack its index (-1 for
	// none), at the end of the last run.
	open      []int
	openStack int
	at        time.Duration
	// scratch holds the runs of a group without a timeline.
	scratch []Run
	// commons remembers commonRoot of pairs of stacks, by a hash of the
	// pair.
	commons [256]commonMemo
}

// setSuffix sets the end of every event of the next group.
func (c *chromiumWriter) setSuffix(pid, tid string) {
	c.stampBuf = append(append(append(append(append(c.stampBuf[:0], make([]byte, fastfmt.MicrosLen)...),
		`,"pid":`...), pid...), `,"tid":`...), tid...)
	c.stampBuf = append(c.stampBuf, '}')
	// Room for tsPad after any timestamp.
	c.stampBuf = slices.Grow(c.stampBuf, fastfmt.MicrosLen+tsCopy-len(c.stampBuf))
	c.stampHigh = 0
}

// appendRuns appends the events of a group's Runs: a frame opens when it
// appears on the sampled stack and closes when it leaves it, after a gap
// of more than four periods, or (RunsApart) at the end of its run.
func (c *chromiumWriter) appendRuns(b []byte, g *Group) ([]byte, error) {
	c.open, c.openStack, c.at = nil, -1, 0
	var err error
	runs := g.runList(&c.scratch)
	apart := c.wp.RunsApart
	var at int64 // the start of the run, in ticks
	var clock *nettrace.Header
	var base int64
	if runs.tl != nil {
		clock, base = runs.tl.Clock, runs.tl.Base // startOf, inline
	}
	for _, chunk := range runs.chunks {
		for i := 0; i < len(chunk); i++ {
			sk, n, delta, last := timeline.RunAt(chunk, i)
			i = last
			at += delta
			if runs.skip(sk) {
				continue
			}
			// run's most frequent case, inline: the stack of the run
			// before (of the other kind), with no gap, writes nothing.
			stack, start := runs.stacks[sk>>1], clock.DurationOf(at-base)
			if stack == c.openStack && start <= c.at+4*c.period && !apart {
				c.at = max(start, c.at) + time.Duration(n)*c.period
				continue
			}
			if b, err = c.run(b, stack, start, int64(n)); err != nil {
				return b, err
			}
		}
	}
	for _, r := range runs.runs {
		if b, err = c.run(b, r.Stack, r.Start, r.Count); err != nil {
			return b, err
		}
	}
	if len(c.open) > 0 {
		c.stamp(c.at)
		b = c.closeTo(b, 0)
	}
	return b, nil
}

// run appends the events of one run of count samples of stack from start.
func (c *chromiumWriter) run(b []byte, stack int, start time.Duration, count int64) ([]byte, error) {
	if len(b) >= chromiumChunk {
		if _, err := c.w.Write(b); err != nil {
			return b, err
		}
		b = b[:0]
	}
	rs := max(start, c.at) // keep each thread's timestamps monotonic
	if rs > c.at+4*c.period || (c.wp.RunsApart && len(c.open) > 0) {
		if len(c.open) > 0 {
			c.stamp(c.at)
			b = c.closeTo(b, 0)
		}
		c.openStack = -1
	}
	c.at = rs + time.Duration(count)*c.period
	if stack == c.openStack {
		return b, nil // no frame starts or ends
	}
	prev := c.openStack // the stack of open, or -1 for none
	c.openStack = stack
	// The timestamp first, though a run may write no event (a stack of
	// the frames open, rare): values loaded before a call are spilled
	// and loaded again after it.
	c.stamp(rs)
	frames := c.wp.Stacks[stack].Frames
	open := c.open
	// The frames both stacks start with (from the root) stay open: how
	// many is remembered per pair of stacks, as a thread's runs go back
	// and forth between a few.
	common := 0
	if prev >= 0 {
		m := &c.commons[(uint(prev)*0x9e3779b1^uint(stack))%uint(len(c.commons))]
		if m.from == prev && m.to == stack {
			common = m.common
		} else {
			common = commonRoot(open, frames)
			*m = commonMemo{from: prev, to: stack, common: common}
		}
	}
	j := len(frames) - 1 - common
	if len(open) == common && len(frames) == common {
		c.open = frames
		return b, nil
	}
	closing, opening := open[:len(open)-common], frames[:j+1]
	// An event is copied in blocks (eventBlock) and ends with pad (see
	// tsCopy) when its end is at most tsCopy bytes and b has room for
	// every event of the run copied so; otherwise the events are
	// appended. So the loops below call nothing: a call spills their
	// values, and reloads them after it.
	need := (len(closing) + len(opening)) * (c.events.copied + tsCopy)
	if cap(b)-len(b) < need && len(b) > 0 {
		if _, err := c.w.Write(b); err != nil {
			return b, err
		}
		b = b[:0]
	}
	if cap(b)-len(b) < need || len(c.ts) > tsCopy {
		b = c.appendEvents(b, closing, opening)
		c.open = frames
		return b, nil
	}
	ts, pad := c.ts, *c.tsPad
	span, enc := c.events.span, c.events.enc
	// closeTo(b, common), inline (a call per run is about as much as
	// an event).
	for _, f := range closing {
		sp := span[f]
		n, l := len(b), int(sp.hi-sp.lo)
		d := (*[2 * eventBlock]byte)(b[n : n+2*eventBlock])
		e := (*[2 * eventBlock]byte)(enc[sp.lo : int(sp.lo)+2*eventBlock])
		copy32((*[32]byte)(d[0:32]), (*[32]byte)(e[0:32]))
		copy32((*[32]byte)(d[32:64]), (*[32]byte)(e[32:64]))
		if l > eventBlock {
			copy32((*[32]byte)(d[64:96]), (*[32]byte)(e[64:96]))
			copy32((*[32]byte)(d[96:128]), (*[32]byte)(e[96:128]))
			for k := 2 * eventBlock; k < l; k += 32 { // rare
				copy32((*[32]byte)(b[n+k:n+k+32]), (*[32]byte)(enc[int(sp.lo)+k:int(sp.lo)+k+32]))
			}
		}
		*(*[tsCopy]byte)(b[n+l : n+l+tsCopy]) = pad
		d[phaseAt] = 'E'
		b = b[:n+l+len(ts)]
	}
	for j := len(opening) - 1; j >= 0; j-- {
		sp := span[opening[j]]
		n, l := len(b), int(sp.hi-sp.lo)
		d := (*[2 * eventBlock]byte)(b[n : n+2*eventBlock])
		e := (*[2 * eventBlock]byte)(enc[sp.lo : int(sp.lo)+2*eventBlock])
		copy32((*[32]byte)(d[0:32]), (*[32]byte)(e[0:32]))
		copy32((*[32]byte)(d[32:64]), (*[32]byte)(e[32:64]))
		if l > eventBlock {
			copy32((*[32]byte)(d[64:96]), (*[32]byte)(e[64:96]))
			copy32((*[32]byte)(d[96:128]), (*[32]byte)(e[96:128]))
			for k := 2 * eventBlock; k < l; k += 32 { // rare
				copy32((*[32]byte)(b[n+k:n+k+32]), (*[32]byte)(enc[int(sp.lo)+k:int(sp.lo)+k+32]))
			}
		}
		*(*[tsCopy]byte)(b[n+l : n+l+tsCopy]) = pad
		b = b[:n+l+len(ts)]
	}
	c.open = frames
	return b, nil
}

// appendEvents appends the E events of the frames closing, then the B
// events of the frames opening from the last (leaf first, both), ending
// each with ts (stamp).
func (c *chromiumWriter) appendEvents(b []byte, closing, opening []int) []byte {
	ts, ev := c.ts, &c.events
	for _, f := range closing {
		sp := ev.span[f]
		n := len(b)
		b = append(append(b, ev.enc[sp.lo:sp.hi]...), ts...)
		b[n+phaseAt] = 'E'
	}
	for j := len(opening) - 1; j >= 0; j-- {
		sp := ev.span[opening[j]]
		b = append(append(b, ev.enc[sp.lo:sp.hi]...), ts...)
	}
	return b
}

// commonRoot returns how many frames stacks a and b (leaf first) start
// with from the root.
func commonRoot(a, b []int) int {
	// k frames of each, aligned at the root (their last), then the index
	// d of the last that differ.
	k := min(len(a), len(b))
	ra, rb := a[len(a)-k:], b[len(b)-k:]
	rb = rb[:len(ra)]
	d := k - 1
	// Deep stacks share many frames: four compared at a time first.
	for d >= 3 && *(*[4]int)(ra[d-3 : d+1]) == *(*[4]int)(rb[d-3 : d+1]) {
		d -= 4
	}
	for d >= 0 && ra[d] == rb[d] {
		d--
	}
	return k - 1 - d
}

// commonMemo is chromiumWriter's memo of commonRoot for the stacks from
// and to (a zero value, from and to 0, is never looked up: a run of the
// stack open writes nothing).
type commonMemo struct{ from, to, common int }

// stamp sets ts to the end of an event at t: its timestamp then the
// group's suffix.
//
// A thread's timestamps grow, and most share their seconds (the digits
// above the last six of microseconds) with the one before: those digits
// are left in place and only the last six and the decimals are written
// (putMicros writes every digit, two at a time, with a division by 100
// for each pair). So are those of the first second that have six digits
// (from 100 ms), after one that had.
func (c *chromiumWriter) stamp(t time.Duration) {
	buf := (*[fastfmt.MicrosLen]byte)(c.stampBuf)
	if t >= 0 {
		us := uint64(t) / 1000
		high := us / 1e6
		if high == 0 && us >= 1e5 {
			high = sixDigits
		}
		if high != 0 && high == c.stampHigh {
			low, frac := us%1e6, uint64(t)%1000
			p, q := low/1e4, low/100%100
			r, f := low%100, frac%100
			buf[fastfmt.MicrosLen-10], buf[fastfmt.MicrosLen-9] = fastfmt.DigitPairs[2*p], fastfmt.DigitPairs[2*p+1]
			buf[fastfmt.MicrosLen-8], buf[fastfmt.MicrosLen-7] = fastfmt.DigitPairs[2*q], fastfmt.DigitPairs[2*q+1]
			buf[fastfmt.MicrosLen-6], buf[fastfmt.MicrosLen-5] = fastfmt.DigitPairs[2*r], fastfmt.DigitPairs[2*r+1]
			buf[fastfmt.MicrosLen-3] = byte('0' + frac/100)
			buf[fastfmt.MicrosLen-2], buf[fastfmt.MicrosLen-1] = fastfmt.DigitPairs[2*f], fastfmt.DigitPairs[2*f+1]
			return
		}
		c.stampHigh = high
	} else {
		c.stampHigh = 0
	}
	lo := fastfmt.PutMicros(buf, int64(t))
	c.ts = c.stampBuf[lo:]
	c.tsPad = (*[tsCopy]byte)(c.stampBuf[lo : lo+tsCopy])
}

// closeTo appends the E events of the open frames beyond the first n from
// the root, leaf first, ending each with ts (stamp), and leaves none open.
func (c *chromiumWriter) closeTo(b []byte, n int) []byte {
	b = c.appendEvents(b, c.open[:len(c.open)-n], nil)
	c.open = nil
	return b
}

// tsCopy is how many bytes of the end of an event (chromiumWriter.stamp:
// ts and what follows it in its buffer, tsPad) run copies: more than the
// end of most events (a timestamp of 10-13 characters, pid and tid of up
// to 10 digits each). The copy of a local array of a fixed size compiles
// to a few moves where append calls memmove (so would a copy from a
// pointer, which could overlap b): with room in b, the tsCopy bytes are
// copied whole and b is cut after ts (the rest is in b's spare capacity,
// overwritten next).
const tsCopy = 48
