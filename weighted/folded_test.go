package weighted

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// foldedByText is WriteFolded done the plain way: every line written out,
// the lines sorted by their bytes, equal ones merged.
func foldedByText(wp *Profile) string {
	repl := strings.NewReplacer(";", ",", "\n", " ", "\r", " ")
	type line struct {
		text string
		v    int64
	}
	var lines []line
	for st, v := range wp.merged() {
		if v == 0 {
			continue
		}
		frames := wp.Stacks[st].Frames
		var parts []string
		for i := len(frames) - 1; i >= 0; i-- {
			parts = append(parts, repl.Replace(wp.Frames[frames[i]].String()))
		}
		if len(frames) == 0 {
			parts = []string{NoFrames}
		}
		lines = append(lines, line{strings.Join(parts, ";"), v})
	}
	slices.SortFunc(lines, func(a, b line) int { return strings.Compare(a.text, b.text) })
	var out strings.Builder
	for i := 0; i < len(lines); {
		l := lines[i]
		for i++; i < len(lines) && lines[i].text == l.text; i++ {
			l.v += lines[i].v
		}
		out.WriteString(l.text + " " + strconv.FormatInt(l.v, 10) + "\n")
	}
	return out.String()
}

// WriteFolded compares stacks frame by frame; the lines must come out in
// the order of their text all the same, with names that are prefixes of
// others (followed by characters below and above ';'), names that differ
// only by the characters folded stacks replace, frames with one name, and
// the empty stack.
func TestFoldedOrder(t *testing.T) {
	names := []string{"A", "A.B", "A,", "A;", "A!x", "A\n", "A\r", "B", "", "[no managed frames]", "[no", "A<B>", "Ab", "A ", "A+",
		"Z" + NoFrames, "A:", "A<", "A.B.C", "A\x00", "A\xff"}
	modules := []string{"", "", "M", "M!", "M;"}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		var frames []Frame
		for range 1 + rng.IntN(12) {
			frames = append(frames, Frame{Name: names[rng.IntN(len(names))], Module: modules[rng.IntN(len(modules))]})
		}
		var stacks []Stack
		var samples []Sample
		for st := range 1 + rng.IntN(40) {
			var fr []int
			for range rng.IntN(6) {
				fr = append(fr, rng.IntN(len(frames)))
			}
			stacks = append(stacks, Stack{Frames: fr})
			samples = append(samples, Sample{Stack: st, Values: []int64{int64(rng.IntN(3))}})
		}
		wp := &Profile{Types: []ValueType{{"samples", "count"}}, Frames: frames, Stacks: stacks,
			Groups: []Group{{Name: "g", Samples: samples}}}
		checkFolded(t, wp, fmt.Sprint("iteration ", iter))
	}
}

// checkFolded fails unless WriteFolded writes what foldedByText does, and
// so does its sort when it splits ranges of lines no more than 0, 1 or 2
// times before comparing their lines whole.
func checkFolded(t *testing.T, wp *Profile, what string) {
	t.Helper()
	want := foldedByText(wp)
	for _, splits := range []int{-1, 0, 1, 2} {
		var got bytes.Buffer
		if err := writeFolded(&got, wp, splits); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Fatalf("%s, splits %d: WriteFolded\n%s\nwant (sorted by text)\n%s", what, splits, got.String(), want)
		}
	}
}

// FuzzFoldedOrder holds WriteFolded to foldedByText on frames named by
// the fuzzer: names is the frames' names separated by '|' (a name with a
// '^' has the module before it), each byte of shape a frame of the
// current stack (its index modulo the frames), 0xff ends a stack.
func FuzzFoldedOrder(f *testing.F) {
	f.Add("A|A.B|A,|A;|B|", []byte{0, 1, 2, 0xff, 1, 0, 0xff, 3, 0xff, 0xff, 2, 4})
	f.Add("M^a|M^a.b|M!a|a:|a<|a.b.c", []byte{0, 1, 0xff, 1, 2, 0xff, 3, 0, 0xff, 4, 5, 0xff, 5, 0, 1, 2})
	f.Add("[no managed frames]|[no|x\ny|x\ry|x y", []byte{0xff, 0, 0xff, 1, 0xff, 2, 3, 0xff, 4, 2})
	f.Fuzz(func(t *testing.T, names string, shape []byte) {
		var frames []Frame
		for _, s := range strings.Split(names, "|") {
			fr := Frame{Name: s}
			if m, name, ok := strings.Cut(s, "^"); ok {
				fr = Frame{Module: m, Name: name}
			}
			frames = append(frames, fr)
		}
		stacks := []Stack{{}}
		for _, b := range shape {
			if b == 0xff {
				stacks = append(stacks, Stack{})
				continue
			}
			last := &stacks[len(stacks)-1]
			last.Frames = append(last.Frames, int(b)%len(frames))
		}
		var samples []Sample
		for st := range stacks {
			samples = append(samples, Sample{Stack: st, Values: []int64{int64(st%3) + 1}})
		}
		wp := &Profile{Types: []ValueType{{"samples", "count"}}, Frames: frames, Stacks: stacks,
			Groups: []Group{{Name: "g", Samples: samples}}}
		checkFolded(t, wp, "fuzz")
	})
}
