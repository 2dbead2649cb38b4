package profile

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// foldedByText is WriteFolded done the plain way: every line written out,
// the lines sorted by their bytes, equal ones merged.
func foldedByText(wp *Weighted) string {
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
			parts = []string{noFrames}
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
		"Z" + noFrames}
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
		wp := &Weighted{Types: []ValueType{{"samples", "count"}}, Frames: frames, Stacks: stacks,
			Groups: []Group{{Name: "g", Samples: samples}}}
		var got bytes.Buffer
		if err := WriteFolded(&got, wp); err != nil {
			t.Fatal(err)
		}
		if want := foldedByText(wp); got.String() != want {
			t.Fatalf("iteration %d: WriteFolded\n%s\nwant (sorted by text)\n%s", iter, got.String(), want)
		}
	}
}
