package weighted

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"

	"github.com/clrdiag/clrdiag/internal/fastfmt"
)

// WriteFolded writes the profile as folded stacks: one line per distinct
// stack over all groups, "root;caller;...;leaf value", frames as
// Module!Namespace.Type.Method, the value of the default sample type (for a
// CPU profile, nanoseconds). Lines are sorted; stacks whose value is 0 are
// left out. Flame graph tools (flamegraph.pl, inferno, speedscope) read this
// format.
func WriteFolded(w io.Writer, wp *Profile) error {
	return writeFolded(w, wp, -1)
}

// writeFolded is WriteFolded with at most splits splits on one path of
// foldedSort (-1: its default; the tests try the ranges it then sorts by
// whole comparisons).
func writeFolded(w io.Writer, wp *Profile, splits int) error {
	// The lines are sorted in the order of their text without writing
	// them out (foldedSort): as their frames from the root, compared by
	// name, and lines that come out the same (frames whose names differ
	// only by the characters replaced) are merged. Each used frame's name
	// is written once; the lines are then written straight into the
	// output.
	merged := wp.merged()
	// The empty stack's name, NoFrames, is frame len(wp.Frames).
	empty := len(wp.Frames)
	if empty >= math.MaxInt32/2 {
		return fmt.Errorf("profile: folded: %d frames, more than it can sort", empty)
	}
	// The lines are counted first, then each one's stack index and tokens
	// are stored (see foldedSort) and each used frame's name length noted
	// (a span {0, -1-length} until written), to size the names' buffer
	// (growing it would allocate about twice its size) and the output.
	n, nTok, maxTok := 0, 0, 1
	var vMin, vMax int64
	for st, v := range merged {
		if v != 0 {
			n++
			vMin, vMax = min(vMin, v), max(vMax, v)
			l := max(len(wp.Stacks[st].Frames), 1)
			nTok += 1 + l
			maxTok = max(maxTok, l)
		}
	}
	if nTok > math.MaxInt32 || len(merged) > math.MaxInt32 {
		return fmt.Errorf("profile: folded: %d frames in stacks, more than it can sort", nTok)
	}
	names := foldedNames{frames: wp.Frames, span: make([][2]int32, empty+1)}
	fs := foldedSort{names: &names, tok: make([]int32, nTok), lines: make([]int32, 0, n), prefix: make([]int32, n)}
	tok, span := fs.tok, names.span
	size, maxLine, nameSize, k := 0, 0, 0, 0
	for st, v := range merged {
		if v == 0 {
			continue
		}
		tok[k] = int32(st)
		k++
		fs.lines = append(fs.lines, int32(k))
		frames := wp.Stacks[st].Frames
		if len(frames) == 0 {
			frames = []int{empty}
		}
		lineStart := size
		for i := len(frames) - 1; i >= 0; i-- {
			f := frames[i]
			tok[k] = int32(f)<<1 | 1
			k++
			sp := span[f][1]
			if sp == 0 {
				l := len(NoFrames)
				if f < empty {
					fr := &wp.Frames[f]
					l = len(fr.Name)
					if fr.Module != "" {
						l += len(fr.Module) + 1
					}
				}
				sp = int32(-1 - l)
				span[f][1] = sp
				nameSize += l + 1
			}
			size += int(-sp) // the name and ';' or ' '
		}
		tok[k-1] &^= 1 // the leaf
		maxLine = max(maxLine, size-lineStart)
	}
	names.enc = make([]byte, 0, nameSize)
	for f, sp := range span {
		if sp[1] < 0 {
			names.encode(f)
		}
	}
	if splits < 0 {
		splits = 2*bits.Len(uint(n)) + 8
	}
	fs.sort(0, n, 0, splits)
	// Each line ends with a space, its value and a newline: at most the
	// widest of the values' texts (merged lines' sums may grow it).
	var digits [24]byte
	size += n * (1 + max(len(fastfmt.AppendInt(digits[:0], vMin)), len(fastfmt.AppendInt(digits[:0], vMax))))
	// The output goes to w in chunks of foldedChunk bytes, from a buffer
	// that holds a chunk and a longest line (its value at most 20 digits
	// and a sign, and the newline), so that it never grows.
	out := make([]byte, 0, min(size, foldedChunk+maxLine+22))
	enc := names.enc
	// A line begins with the tokens it shares with the line before (as
	// sorted, most of them): they are copied from that line's text when it
	// is still in out, from prev, ends[k] the length of its first k+1
	// tokens.
	ends := make([]int, maxTok)
	prev := -1
	for i := 0; i < n; {
		line, shared := int(fs.lines[i]), int(fs.prefix[i])
		v := merged[tok[line-1]]
		for i++; i < n && fs.prefix[i] < 0; i++ {
			v += merged[tok[fs.lines[i]-1]]
		}
		start := len(out)
		if prev < 0 {
			shared = 0
		}
		if shared > 0 {
			out = append(out, out[prev:prev+ends[shared-1]]...)
		}
		// Every name is followed by ';' in enc: the leaf's becomes the
		// space before the value.
		for k := shared; ; k++ {
			t := tok[line+k]
			sp := span[t>>1]
			out = append(out, enc[sp[0]:sp[1]]...)
			ends[k] = len(out) - start
			if t&1 == 0 {
				break
			}
		}
		prev = start
		out[len(out)-1] = ' '
		out = append(fastfmt.AppendInt(out, v), '\n')
		if len(out) >= foldedChunk {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out, prev = out[:0], -1
		}
	}
	if len(out) == 0 {
		return nil
	}
	_, err := w.Write(out)
	return err
}

// foldedChunk is the size at which WriteFolded hands its output to the
// writer: a quarter of the other exporters' flushAt, as the conversion's
// allocation drives the collector's work, and a chunk of folded text holds
// several hundred lines (a writer of the CLI buffers it anyway).
const foldedChunk = 16 << 10

// foldedNames writes frames as folded stacks name them, Module!Name with
// the characters that would break a line (';', '\n', '\r') replaced by ','
// and spaces, each frame once, followed by ';'; frame len(frames) is the
// empty stack's NoFrames.
type foldedNames struct {
	frames []Frame
	enc    []byte
	span   [][2]int32 // enc[lo:hi] of each frame, name and ';'; hi 0 or below until written
}

// encode writes a frame's name and ';'.
func (n *foldedNames) encode(frame int) {
	lo := len(n.enc)
	if frame == len(n.frames) {
		n.enc = append(n.enc, NoFrames...)
	} else {
		f := &n.frames[frame]
		if f.Module != "" {
			n.enc = append(append(n.enc, f.Module...), '!')
		}
		n.enc = append(n.enc, f.Name...)
		// Most names hold none of the three: IndexByte looks for each
		// several bytes at a time.
		name := n.enc[lo:]
		if bytes.IndexByte(name, ';') >= 0 || bytes.IndexByte(name, '\n') >= 0 || bytes.IndexByte(name, '\r') >= 0 {
			for i, c := range name {
				switch c {
				case ';':
					name[i] = ','
				case '\n', '\r':
					name[i] = ' '
				}
			}
		}
	}
	n.enc = append(n.enc, ';')
	n.span[frame] = [2]int32{int32(lo), int32(len(n.enc))}
}

// name is a written frame's name.
func (n *foldedNames) name(frame int32) []byte {
	sp := n.span[frame]
	return n.enc[sp[0] : sp[1]-1]
}

// foldedSort sorts the lines of WriteFolded in the order of their text,
// "root;...;leaf", without writing it: a line is the sequence of its
// frames' names from the root (its tokens), each followed by ';' or, for
// the leaf, by the line's end, which sorts below every byte. No name holds
// a ';', so no such token begins another, and two lines compare as their
// first differing tokens do (compareFoldedToken). Stacks share most of
// their frames from the root, so the lines are sorted a token at a time
// (multikey quicksort: Bentley and Sedgewick, "Fast algorithms for sorting
// and searching strings", 1997): a range is split by its lines' token at
// one depth into those before, equal to and after a pivot's, and only the
// equal ones go on to the next token, so a common root is looked at once
// per split rather than once per comparison.
type foldedSort struct {
	names *foldedNames
	// tok holds each line's stack index and then its tokens, frame<<1
	// |1 where more follow; lines are the indexes of lines' first tokens.
	tok   []int32
	lines []int32
	// prefix[i] is, once sorted, how many tokens line i has in common with
	// line i-1 (0 for the first), or -1 if its text is line i-1's.
	prefix []int32
}

// compareToken compares two tokens as their text does.
func (fs *foldedSort) compareToken(a, b int32) int {
	switch {
	case a == b:
		return 0
	case a>>1 == b>>1:
		return int(a&1) - int(b&1) // the line's end before ';'
	}
	return compareFoldedToken(fs.names.name(a>>1), a&1 != 0, fs.names.name(b>>1), b&1 != 0)
}

// sort sorts lines[lo:hi], whose lines have the same d tokens first and at
// least one more. Past budget splits on one path (a pivot that split
// badly again and again), a range is sorted by whole comparisons.
func (fs *foldedSort) sort(lo, hi, d, budget int) {
	tok := fs.tok
	for hi-lo > 1 {
		s := fs.lines[lo:hi]
		if len(s) == 2 {
			c, k := fs.compare(s[0]+int32(d), s[1]+int32(d))
			if c > 0 {
				s[0], s[1] = s[1], s[0]
			}
			fs.prefix[lo+1] = fs.common(c, d+k)
			return
		}
		if budget == 0 {
			fs.sortFrom(lo, hi, d)
			return
		}
		budget--
		pivot := tok[int(s[len(s)/2])+d]
		// s[:lt] before the pivot's token, s[lt:i] equal, s[gt:] after.
		// Lines from a common root often all have the pivot's token.
		lt, i, gt := 0, 0, len(s)
		for i < gt && tok[int(s[i])+d] == pivot {
			i++
		}
		// Lines of a caller often have the same next token: the last
		// comparison is kept.
		last, lastC := pivot, 0
		for i < gt {
			t := tok[int(s[i])+d]
			if t != last {
				last, lastC = t, fs.compareToken(t, pivot)
			}
			c := lastC
			switch {
			case c < 0:
				s[lt], s[i] = s[i], s[lt]
				lt, i = lt+1, i+1
			case c > 0:
				gt--
				s[gt], s[i] = s[i], s[gt]
			default:
				i++
			}
		}
		// The blocks' first lines differ from the lines before at d.
		if lt > 0 && lt < len(s) {
			fs.prefix[lo+lt] = int32(d)
		}
		if gt > 0 && gt < len(s) {
			fs.prefix[lo+gt] = int32(d)
		}
		fs.sort(lo, lo+lt, d, budget)
		fs.sort(lo+gt, hi, d, budget)
		if pivot&1 == 0 {
			// The equal lines end here: their texts are the same.
			for k := lo + lt + 1; k < lo+gt; k++ {
				fs.prefix[k] = -1
			}
			return
		}
		lo, hi, d = lo+lt, lo+gt, d+1
	}
}

// sortFrom sorts lines[lo:hi], whose lines have the same d tokens first,
// by comparing them whole from depth d, and marks equal neighbours.
func (fs *foldedSort) sortFrom(lo, hi, d int) {
	s := fs.lines[lo:hi]
	slices.SortFunc(s, func(a, b int32) int {
		c, _ := fs.compare(a+int32(d), b+int32(d))
		return c
	})
	for k := 1; k < len(s); k++ {
		c, n := fs.compare(s[k-1]+int32(d), s[k]+int32(d))
		fs.prefix[lo+k] = fs.common(c, d+n)
	}
}

// common is prefix's value for a line that compares to the line before as
// c after n tokens in common.
func (fs *foldedSort) common(c, n int) int32 {
	if c == 0 {
		return -1
	}
	return int32(n)
}

// compare compares the lines whose tokens from a and from b are left, and
// returns how many of them are the same before the one that decides.
func (fs *foldedSort) compare(a, b int32) (c, n int) {
	tok := fs.tok
	for {
		ta, tb := tok[int(a)+n], tok[int(b)+n]
		if ta != tb {
			if c := fs.compareToken(ta, tb); c != 0 {
				return c, n
			}
		}
		if ta&1 == 0 {
			return 0, n // both end here
		}
		n++
	}
}

// compareFoldedToken compares two names of lines as their text does: each
// followed by ';' if more frames follow in its line (more), or by the
// line's end. Where one name begins the other, what follows the shorter
// decides against the longer's next byte (never ';'): the line's end is
// below it, ';' is above or below ("a" then ";x" sorts after "a.b").
func compareFoldedToken(a []byte, moreA bool, b []byte, moreB bool) int {
	m := min(len(a), len(b))
	if c := bytes.Compare(a[:m], b[:m]); c != 0 {
		return c
	}
	switch {
	case len(a) == len(b):
		switch {
		case moreA == moreB:
			return 0
		case moreA:
			return 1
		}
		return -1
	case len(a) < len(b):
		if !moreA {
			return -1
		}
		return cmp.Compare(';', b[m])
	}
	if !moreB {
		return 1
	}
	return cmp.Compare(a[m], ';')
}
