package weighted

import (
	"strconv"
	"strings"
	"testing"
)

// TestStackArrays checks the speedscope sample arrays against the text
// strconv gives, for frame indexes of every length (those of seven digits
// and more are not cached), an empty stack, and a buffer sized for the
// stacks (8-byte writes into its spare capacity) or for none (appends).
func TestStackArrays(t *testing.T) {
	const frames = 2_000_000
	stacks := []Stack{
		{Frames: []int{0}},
		{Frames: []int{5, 42, 999, 1000, 99999, 123456, 999999}},
		{Frames: []int{1000000, 1999999, 7, 1000000}},
		{},
		{Frames: []int{42, 5, 42, 999999, 1234567}},
	}
	want := func(st int, sep bool) string {
		fr := stacks[st].Frames
		var b strings.Builder
		if sep {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		if len(fr) == 0 {
			b.WriteString(strconv.Itoa(frames))
		}
		for i := len(fr) - 1; i >= 0; i-- {
			b.WriteString(strconv.Itoa(fr[i]))
			if i > 0 {
				b.WriteByte(',')
			}
		}
		b.WriteByte(']')
		return b.String()
	}
	for _, sized := range []bool{true, false} {
		weights := make([]int64, len(stacks))
		if sized {
			for i := range weights {
				weights[i] = 1
			}
		}
		s := newStackArrays(frames, stacks, weights)
		// Twice: the second time from the encoded spans and cached texts.
		for range 2 {
			for st := range stacks {
				for _, sep := range []bool{false, true} {
					if got := string(s.get(st, sep)); got != want(st, sep) {
						t.Errorf("sized %v: stack %d sep %v: %s, want %s", sized, st, sep, got, want(st, sep))
					}
				}
			}
		}
	}
}
