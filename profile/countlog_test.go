package profile

import (
	"math"
	"testing"
)

// A countLog sums the counts of each key through its compactions, a count
// past 32 bits included, and stays within about twice its keys.
func TestCountLog(t *testing.T) {
	var c countLog
	want := map[int64]int64{}
	for i := range int64(5000) {
		k := i * 7919 % 100003 << 1
		c.add(k, i+1)
		c.add(k|1, 1)
		want[k] += i + 1
		want[k|1]++
	}
	// Few keys flushed many times, as a thread cycling through more
	// stacks than it remembers: compacted as it goes.
	for i := range int64(100000) {
		k := (i%7)<<1 | 1
		c.add(k, 3)
		want[k] += 3
	}
	if n := c.n + len(c.words); n > max(minCompact, 2*len(want))+1 {
		t.Errorf("%d words for %d keys", n, len(want))
	}
	big := int64(2)<<1 | 1
	for _, v := range []int64{math.MaxUint32 - 5, 10, math.MaxUint32, 1 << 40} {
		c.add(big, v)
		want[big] += v
	}
	c.add(big+2, math.MaxUint32+1) // past 32 bits at once
	want[big+2] += math.MaxUint32 + 1
	for range 3 { // sums past 32 bits kept through compactions
		for c.n+len(c.words) < max(minCompact, 2*c.compacted) {
			c.add(big, math.MaxUint32-1)
			want[big] += math.MaxUint32 - 1
		}
		c.add(big+2, 7)
		want[big+2] += 7
	}
	c.seal()
	got := map[int64]int64{}
	for _, ch := range c.chunks {
		for _, w := range ch {
			got[int64(w>>32)] += int64(w & math.MaxUint32)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("key %d: count %d, want %d", k, got[k], n)
		}
	}
}
