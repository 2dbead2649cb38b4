package nettrace

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/clrdiag/clrdiag/internal/wire"
)

// readAllWith decodes data with next (ReadEvent or the general decoder) and
// returns a description of every event, the final error and the stats.
func readAllWith(data []byte, next func(*Reader, *Event) error) ([]string, Stats, error) {
	r, err := NewReaderConfig(bytes.NewReader(data), ReaderConfig{BufferSize: 4096})
	if err != nil {
		return nil, Stats{}, err
	}
	var out []string
	var ev Event
	for {
		err = next(r, &ev)
		if err != nil {
			break
		}
		out = append(out, describeEvent(&ev))
	}
	return out, r.Stats(), err
}

// checkFastPath fails if ReadEvent's fast path and the general decoder
// (readEventSlow) disagree on anything about data: events, error, stats.
func checkFastPath(t *testing.T, data []byte) {
	t.Helper()
	fast, fst, ferr := readAllWith(data, (*Reader).ReadEvent)
	slow, sst, serr := readAllWith(data, (*Reader).readEventSlow)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) {
		t.Fatalf("fast path ends with %v, general decoder with %v", ferr, serr)
	}
	if fst != sst {
		t.Fatalf("stats differ:\nfast    %+v\ngeneral %+v", fst, sst)
	}
	if len(fast) != len(slow) {
		t.Fatalf("fast path reads %d events, general decoder %d", len(fast), len(slow))
	}
	for i := range fast {
		if fast[i] != slow[i] {
			t.Fatalf("event %d differs:\nfast    %s\ngeneral %s", i, fast[i], slow[i])
		}
	}
}

// varietyStream writes events whose header fields take every varint length:
// metadata and stack ids above 127 and 16383, OS-sized thread ids, capture
// thread switches with timestamps going back (10-byte deltas), large
// payloads, activity ids, dropped sequence numbers and sequence points.
func varietyStream(t *testing.T, cfg WriterConfig, n int, seed uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.Grow(n * 3600) // a sixth of the events carry 20,000 bytes
	w, err := NewWriter(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(seed, 1))
	var mds []*Metadata
	for _, id := range []uint32{1, 2, 127, 128, 300, 16383, 16384, 70000} {
		md := &Metadata{ID: id, ProviderName: "P", EventID: id, EventName: fmt.Sprint("E", id)}
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
		mds = append(mds, md)
	}
	stacks := func() {
		var st [][]uint64
		for i := 0; i < 20000; i++ {
			st = append(st, []uint64{uint64(i) + 1, 0x7fff0000 + uint64(i)})
		}
		if err := w.WriteStacks(1, st); err != nil {
			t.Fatal(err)
		}
	}
	stacks()
	threads := []uint64{1, 200, 40000, 3_000_000, 1 << 40}
	seq := map[uint64]uint32{}
	ts := int64(1_000_000)
	payload := make([]byte, 20000)
	for i := 0; i < n; i++ {
		if i > 0 && i%(n/3+1) == 0 {
			var tsq []ThreadSeq
			for ct, s := range seq {
				tsq = append(tsq, ThreadSeq{ct, s})
			}
			if err := w.WriteSequencePoint(ts, tsq, 0); err != nil {
				t.Fatal(err)
			}
			stacks()
		}
		ct := threads[rnd.IntN(len(threads))]
		seq[ct] += 1 + uint32(rnd.IntN(40)/39) // now and then a dropped event
		ts += int64(rnd.IntN(3_000_000)) - 1_000_000
		psz := []int{0, 8, 8, 8, 200, 20000}[rnd.IntN(6)]
		ev := Event{
			Metadata: mds[rnd.IntN(len(mds))], SequenceNumber: seq[ct],
			ThreadID: threads[rnd.IntN(len(threads))], CaptureThreadID: ct,
			ThreadIndex: ct, CaptureThreadIndex: ct,
			ProcessorNumber: uint32(rnd.IntN(300)), Timestamp: ts,
			StackID:  []uint32{0, 1, 2, 127, 128, 300, 16384, 19999}[rnd.IntN(8)],
			IsSorted: rnd.IntN(2) == 0, Payload: payload[:psz],
		}
		if rnd.IntN(4) == 0 && cfg.Version != 6 {
			ev.ActivityID[0], ev.RelatedActivityID[15] = byte(i), byte(i>>8)
		}
		if err := w.WriteEvent(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFastPathMatchesGeneralDecoder decodes the shared captures, the test
// streams and streams with every varint length (whole and cut at many
// points) through ReadEvent and through the general decoder alone.
func TestFastPathMatchesGeneralDecoder(t *testing.T) {
	var inputs []benchInput
	for _, name := range []string{"v4", "v6", "v4-uncompressed"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 4000
		seeds := uint64(3)
		if testing.Short() {
			seeds = 1
		}
		for seed := uint64(1); seed <= seeds; seed++ {
			inputs = append(inputs, benchInput{fmt.Sprint(name, "-", seed), varietyStream(t, cfg, 3000, seed)})
		}
	}
	var gen bytes.Buffer
	events := 250_000
	if testing.Short() {
		events = 20_000
	}
	if err := genStream(&gen, events, 4); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, benchInput{"generated", gen.Bytes()})
	inputs = append(inputs, equivalenceCaptures(t)...)
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			checkFastPath(t, in.data)
			if len(in.data) > 2<<20 {
				return
			}
			step := sweepStep(len(in.data), 20)
			for cut := len(in.data) - 1; cut > 0; cut -= step {
				checkFastPath(t, in.data[:cut])
			}
		})
	}
}

// describeEvent prints every field of ev, the metadata by content (as
// fmt's "md=%d/%s/%d/%s seq=%d thr=%d cap=%d proc=%d stack=%d/%d:%x ts=%d
// act=%s rel=%s sorted=%v label=%d %s idx=%d/%d payload=%x" would, with
// the labels as %+v or "-"), appending by hand: the equivalence tests
// describe every event of every read, and fmt took half their time.
func describeEvent(ev *Event) string {
	md := ev.Metadata
	b := make([]byte, 0, 512+len(md.ProviderName)+len(md.EventName)+2*(len(ev.stack)+len(ev.Payload)))
	u := func(prefix string, v uint64) {
		b = strconv.AppendUint(append(b, prefix...), v, 10)
	}
	u("md=", uint64(md.ID))
	b = append(append(b, '/'), md.ProviderName...)
	u("/", uint64(md.EventID))
	b = append(append(b, '/'), md.EventName...)
	u(" seq=", uint64(ev.SequenceNumber))
	u(" thr=", ev.ThreadID)
	u(" cap=", ev.CaptureThreadID)
	u(" proc=", uint64(ev.ProcessorNumber))
	u(" stack=", uint64(ev.StackID))
	u("/", ev.StackRegion)
	b = hex.AppendEncode(append(b, ':'), ev.stack)
	b = strconv.AppendInt(append(b, " ts="...), ev.Timestamp, 10)
	b = wire.AppendGUID(append(b, " act="...), ev.ActivityID)
	b = wire.AppendGUID(append(b, " rel="...), ev.RelatedActivityID)
	b = strconv.AppendBool(append(b, " sorted="...), ev.IsSorted)
	u(" label=", uint64(ev.LabelListID))
	if ev.Labels != nil {
		b = fmt.Appendf(append(b, ' '), "%+v", *ev.Labels)
	} else {
		b = append(b, " -"...)
	}
	u(" idx=", ev.ThreadIndex)
	u("/", ev.CaptureThreadIndex)
	b = hex.AppendEncode(append(b, " payload="...), ev.Payload)
	return string(b)
}
