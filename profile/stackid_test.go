package profile

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/internal/wire"
	"github.com/clrdiag/clrdiag/nettrace"
)

// readBothWays builds two profiles of a trace: one as Read does, the other
// with every event's StackID cleared, so that each stack is interned from
// its frames rather than found by (StackRegion, StackID).
func readBothWays(t *testing.T, data []byte, cfg Config) (byID, byFrames *Profile) {
	t.Helper()
	r, err := nettrace.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	a, b := NewBuilder(r.Header(), cfg), NewBuilder(r.Header(), cfg)
	var ev nettrace.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		a.Add(&ev)
		ev.StackID = 0
		b.Add(&ev)
	}
	return a.Finish(), b.Finish()
}

// Stack ids restart at each sequence point: the same id names another
// stack after it, and the same stack comes back under another id.
func TestStackIDsAcrossSequencePoints(t *testing.T) {
	var buf bytes.Buffer
	w, err := nettrace.NewWriter(&buf, nettrace.WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sample := &nettrace.Metadata{ID: 1, ProviderName: clrevents.ProviderSampleProfiler, EventID: uint32(clrevents.IDThreadSample)}
	other := &nettrace.Metadata{ID: 2, ProviderName: "App", EventID: 1}
	for _, md := range []*nettrace.Metadata{sample, other} {
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
	}
	managed := (&wire.Builder{}).U32(2).B
	ts := int64(0)
	seq := map[uint64]uint32{}
	write := func(md *nettrace.Metadata, thread uint64, stack uint32, n int) {
		for range n {
			ts++
			seq[thread]++
			if err := w.WriteEvent(&nettrace.Event{Metadata: md, ThreadID: thread, CaptureThreadID: thread,
				SequenceNumber: seq[thread], Timestamp: ts, StackID: stack, Payload: managed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b, c := []uint64{0xa1, 0xa2}, []uint64{0xb1}, []uint64{0xc1, 0xc2, 0xc3}
	if err := w.WriteStacks(1, [][]uint64{a, b}); err != nil {
		t.Fatal(err)
	}
	write(sample, 1, 1, 3)
	write(sample, 1, 2, 2)
	write(sample, 2, 1, 1)
	write(other, 2, 2, 1)
	if err := w.WriteSequencePoint(ts, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStacks(1, [][]uint64{b, c, a}); err != nil {
		t.Fatal(err)
	}
	// Thread 2's previous sample had id 1 too, a's then: b's now.
	write(sample, 2, 1, 1)
	write(sample, 1, 1, 4)
	write(sample, 1, 3, 1)
	write(sample, 2, 2, 1)
	write(other, 2, 3, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	p, byFrames := readBothWays(t, buf.Bytes(), Config{Timeline: true})
	if !reflect.DeepEqual(p, byFrames) {
		t.Errorf("profiles differ:\nby id:     %+v\nby frames: %+v", p, byFrames)
	}
	names := func(s int) string {
		var out string
		for _, f := range p.Stacks[s].Frames {
			out += p.Frames[f].Name + ";"
		}
		return out
	}
	want := map[uint64]map[string]int64{
		1: {"0xa1;0xa2;": 4, "0xb1;": 6},
		2: {"0xa1;0xa2;": 1, "0xb1;": 1, "0xc1;0xc2;0xc3;": 1},
	}
	if len(p.Stacks) != 3 {
		t.Errorf("%d stacks, want 3", len(p.Stacks))
	}
	for _, th := range p.Threads {
		got := map[string]int64{}
		for _, s := range th.Samples {
			got[names(s.Stack)] += s.Count()
		}
		if !reflect.DeepEqual(got, want[th.ID]) {
			t.Errorf("thread %d: samples %v, want %v", th.ID, got, want[th.ID])
		}
	}
	if f, n := p.Symbols.EventFrames-p.Symbols.SampleFrames, int64(len(b)+len(a)); f != n {
		t.Errorf("%d frames in non-sample events, want %d", f, n)
	}
}

// On real captures, finding stacks by id gives the same profile as
// comparing their frames.
func TestStackIDsMatchFrames(t *testing.T) {
	for _, rel := range []string{"perfview/only_managed_samples.nettrace.zip", "perfview/VoiceMemo.23092.nettrace.zip",
		"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip"} {
		for _, cfg := range []Config{{Timeline: true}, {ManagedOnly: true}} {
			p, byFrames := readBothWays(t, capture(t, rel), cfg)
			if len(p.Stacks) == 0 {
				t.Errorf("%s: no stacks: the test checks nothing", rel)
			}
			if !reflect.DeepEqual(p, byFrames) {
				t.Errorf("%s %+v: the profiles by stack id and by frames differ", rel, cfg)
			}
		}
	}
}
