package profile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// methodRanking.top ranks as sorting every method does, ties included:
// values from small ranges (many equal), frames sharing names and modules
// (overloads, ranked equal when their values are too).
func TestMethodRankingTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shortcuts := 0
	for round := range 3000 {
		nFrames := 1 + rng.IntN(300)
		frames := make([]Frame, nFrames)
		names := 1 + rng.IntN(nFrames)
		for i := range frames {
			frames[i] = Frame{Name: fmt.Sprintf("N.M%d", rng.IntN(names)), Module: fmt.Sprintf("mod%d", rng.IntN(3))}
		}
		values := int64(1 + rng.IntN(1000))
		var ranked []methodRank
		for f := -1; f < nFrames; f++ {
			if rng.IntN(4) == 0 {
				continue
			}
			ranked = append(ranked, methodRank{frame: f, excl: rng.Int64N(values), incl: rng.Int64N(values)})
		}
		for _, n := range []int{1, 3, 20, 100} {
			inclusive := round%2 == 1
			want := slices.Clone(ranked)
			sort.Sort(methodRanking{ranked: want, frames: frames, inclusive: inclusive})
			want = want[:min(n, len(want))]
			got := methodRanking{ranked: slices.Clone(ranked), frames: frames, inclusive: inclusive}.top(n)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, top %d of %d (inclusive %v):\n got %v\nwant %v", round, n, len(ranked), inclusive, got, want)
			}
			if len(ranked) > 4*n {
				shortcuts++
			}
		}
	}
	if shortcuts < 1000 {
		t.Errorf("only %d rankings long enough for the shortcut", shortcuts)
	}
}
