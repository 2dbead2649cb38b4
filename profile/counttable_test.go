package profile

import (
	"math"
	"testing"
)

// A countTable sums the counts of each key through its growth, a count
// past 32 bits included.
func TestCountTable(t *testing.T) {
	var c countTable
	want := map[int64]int64{}
	for i := range int64(5000) {
		k := i * 7919 % 100003 << 1
		c.add(k, i+1)
		c.add(k|1, 1)
		want[k] += i + 1
		want[k|1]++
	}
	big := int64(2)<<1 | 1
	for _, v := range []int64{math.MaxUint32 - 5, 10, math.MaxUint32, 1 << 40} {
		c.add(big, v)
		want[big] += v
	}
	c.add(big+2, math.MaxUint32+1) // past 32 bits at once
	want[big+2] += math.MaxUint32 + 1
	got := map[int64]int64{}
	for i := range c.keys {
		if k, n, ok := c.count(i); ok {
			got[k] += n
		}
	}
	if len(got) != len(want) || c.n != len(want) {
		t.Fatalf("%d keys (n %d), want %d", len(got), c.n, len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("key %d: count %d, want %d", k, got[k], n)
		}
	}
}
