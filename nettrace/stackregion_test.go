package nettrace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
)

// TestStackRegion checks the promise of Event.StackRegion: within a region
// a stack id always resolves to the same stack, and the region changes
// where ids may change meaning (a sequence point, a stack block that
// redefines ids) but not where a block only extends them.
func TestStackRegion(t *testing.T) {
	for _, cfg := range []WriterConfig{{}, {Uncompressed: true, PointerSize: 4}, {Version: 6}, {Version: 6, Uncompressed: true}} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, cfg)
		if err != nil {
			t.Fatal(err)
		}
		md := &Metadata{ID: 1, ProviderName: "P", EventID: 1}
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
		ts := int64(0)
		// each step writes its stacks then one event per stack id listed;
		// want is the stack each event must resolve to and same whether
		// its region must equal the previous event's (1), must differ (-1)
		// or may do either (0).
		type step struct {
			sp     bool // sequence point first
			first  uint32
			stacks [][]uint64
			ids    []uint32
			want   [][]uint64
			same   []int8
		}
		a, b, c, d := []uint64{1, 2}, []uint64{3}, []uint64{4, 5, 6}, []uint64{7}
		steps := []step{
			{first: 1, stacks: [][]uint64{a, b}, ids: []uint32{1, 2, 1, 0}, want: [][]uint64{a, b, a, nil}, same: []int8{1, 1, 1, 1}},
			// extends the ids: same region
			{first: 3, stacks: [][]uint64{c}, ids: []uint32{3, 1}, want: [][]uint64{c, a}, same: []int8{1, 1}},
			// redefining an id of the contiguous range does not change it
			{first: 3, stacks: [][]uint64{d}, ids: []uint32{3}, want: [][]uint64{c}, same: []int8{0}},
			// ids out of the range, then redefined: a new region
			{first: 10, stacks: [][]uint64{d}, ids: []uint32{10, 1}, want: [][]uint64{d, a}, same: []int8{0, 1}},
			{first: 10, stacks: [][]uint64{b}, ids: []uint32{10, 3}, want: [][]uint64{b, c}, same: []int8{-1, 1}},
			// ids restart after a sequence point
			{sp: true, first: 1, stacks: [][]uint64{c, d}, ids: []uint32{1, 2}, want: [][]uint64{c, d}, same: []int8{-1, 1}},
		}
		var wantStacks [][]uint64
		var wantSame []int8
		for _, s := range steps {
			if s.sp {
				if err := w.WriteSequencePoint(ts, nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.WriteStacks(s.first, s.stacks); err != nil {
				t.Fatal(err)
			}
			for _, id := range s.ids {
				ts++
				ev := Event{Metadata: md, ThreadID: 1, CaptureThreadID: 1, ThreadIndex: 1, CaptureThreadIndex: 1,
					SequenceNumber: uint32(ts), StackID: id, Timestamp: ts}
				if err := w.WriteEvent(&ev); err != nil {
					t.Fatal(err)
				}
			}
			wantStacks = append(wantStacks, s.want...)
			wantSame = append(wantSame, s.same...)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		r, err := NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		type key struct {
			region uint64
			id     uint32
		}
		seen := map[key][]uint64{}
		var ev Event
		prev := uint64(0)
		for i := 0; ; i++ {
			err := r.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				if i != len(wantStacks) {
					t.Fatalf("%+v: %d events, want %d", cfg, i, len(wantStacks))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ev.Stack()
			if !slices.Equal(got, wantStacks[i]) {
				t.Errorf("%+v: event %d: stack %x, want %x", cfg, i, got, wantStacks[i])
			}
			if i > 0 && wantSame[i] != 0 && (ev.StackRegion == prev) != (wantSame[i] > 0) {
				t.Errorf("%+v: event %d: region %d after %d, want same=%v", cfg, i, ev.StackRegion, prev, wantSame[i] > 0)
			}
			if ev.StackRegion < prev {
				t.Errorf("%+v: event %d: region went down from %d to %d", cfg, i, prev, ev.StackRegion)
			}
			prev = ev.StackRegion
			k := key{ev.StackRegion, ev.StackID}
			if s, ok := seen[k]; ok && !slices.Equal(s, got) {
				t.Errorf("%+v: event %d: (region %d, id %d) is %x, earlier %x", cfg, i, k.region, k.id, got, s)
			}
			seen[k] = got
		}
	}
}

// TestStackRegionNetPerf checks that NetPerf events, whose stacks are
// inline, have neither a stack id nor a region.
func TestStackRegionNetPerf(t *testing.T) {
	data, err := os.ReadFile("testdata/netperf-v3-tracelogging.netperf")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	stacks := 0
	for r.ReadEvent(&ev) == nil {
		if ev.StackLen() > 0 {
			stacks++
		}
		if ev.StackID != 0 || ev.StackRegion != 0 {
			t.Fatalf("NetPerf event with StackID %d, StackRegion %d", ev.StackID, ev.StackRegion)
		}
	}
	if stacks == 0 {
		t.Fatal("no event with a stack: the test checks nothing")
	}
}
