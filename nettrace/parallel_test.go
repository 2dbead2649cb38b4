package nettrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
)

// collectPart records the events of a run as text.
type collectPart struct{ events []string }

func (p *collectPart) Event(ev *Event) { p.events = append(p.events, describeEvent(ev)) }
func (p *collectPart) Reset()          { p.events = p.events[:0] }

// readParallelAll reads data with ReadParallel and returns the merged events
// in merge order, the error and the stats.
func readParallelAll(data []byte, cfg ParallelConfig, rcfg ReaderConfig) ([]string, Stats, error) {
	r, err := NewReaderConfig(bytes.NewReader(data), rcfg)
	if err != nil {
		return nil, Stats{}, err
	}
	var out []string
	err = ReadParallel(context.Background(), r, cfg, func() *collectPart { return &collectPart{} },
		func(p *collectPart) error {
			out = append(out, p.events...)
			return nil
		})
	if err == nil {
		err = io.EOF // as ReadEvent says it
	}
	var ev Event
	if err2 := r.ReadEvent(&ev); err2 != err {
		return out, r.Stats(), fmt.Errorf("ReadEvent after ReadParallel returned %v, not %v", err2, err)
	}
	return out, r.Stats(), err
}

// checkParallel fails if ReadParallel and ReadEvent disagree on data.
func checkParallel(t *testing.T, data []byte, cfg ParallelConfig) {
	t.Helper()
	want, wst, werr := readAllWith(data, (*Reader).ReadEvent)
	got, gst, gerr := readParallelAll(data, cfg, ReaderConfig{BufferSize: 4096})
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("ReadParallel ends with %v, ReadEvent with %v", gerr, werr)
	}
	if gst != wst {
		t.Fatalf("stats differ:\nparallel %+v\nserial   %+v", gst, wst)
	}
	if len(got) != len(want) {
		t.Fatalf("ReadParallel merges %d events, ReadEvent reads %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d differs:\nparallel %s\nserial   %s", i, got[i], want[i])
		}
	}
}

// TestReadParallelMatchesReadEvent reads the test streams, streams with every
// header variety, metadata defined inside event blocks, V6 tables and the
// shared captures, whole and cut, in parallel and serially.
func TestReadParallelMatchesReadEvent(t *testing.T) {
	inputs := testInputs(t, []string{"v4", "v6"}, 7)
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			for _, cfg := range []ParallelConfig{{}, {Workers: 1, MaxInFlight: 1, SerialBytes: -1},
				{Workers: 3, MaxInFlight: 5, SerialBytes: -1}, {Workers: 2, SerialBytes: int64(len(in.data) / 3)}} {
				checkParallel(t, in.data, cfg)
			}
			if len(in.data) > 2<<20 {
				return
			}
			step := sweepStep(len(in.data), 25)
			for cut := len(in.data) - 1; cut > 0; cut -= step {
				checkParallel(t, in.data[:cut], ParallelConfig{Workers: 2, MaxInFlight: 3, SerialBytes: -1})
			}
		})
	}
}

// testInputs are the streams the tests that hold a way of reading to
// ReadEvent read: every writer configuration, streams with every header
// variety (of the configurations varieties names, from seed), metadata
// defined inside event blocks and the shared captures.
func testInputs(t *testing.T, varieties []string, seed uint64) []benchInput {
	return testInputsN(t, varieties, 3000, seed)
}

// testInputsN is testInputs with n events in each variety stream.
func testInputsN(t *testing.T, varieties []string, n int, seed uint64) []benchInput {
	var inputs []benchInput
	for _, name := range []string{"v4", "v6", "v4-uncompressed", "v6-uncompressed", "netperf"} {
		cfg, ok := writerConfigs()[name]
		if !ok {
			continue
		}
		cfg.MaxEventBlockSize = 300
		data, _, _ := buildTraceN(t, cfg, 40)
		inputs = append(inputs, benchInput{name, data})
	}
	for _, name := range varieties {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 4000
		inputs = append(inputs, benchInput{name + "-variety", varietyStream(t, cfg, n, seed)})
	}
	inputs = append(inputs, benchInput{"metadata-in-event-blocks", metaInEventBlocks(t)})
	return append(inputs, equivalenceCaptures(t)...)
}

// equivalenceCaptures are the captures the tests that hold one way of
// reading to another read, after their generated streams: none with
// -short, where those tests must stay within seconds on a loaded machine
// (the captures take most of their time; TestCaptures still reads each).
func equivalenceCaptures(t *testing.T) []benchInput {
	if testing.Short() {
		return nil
	}
	var inputs []benchInput
	for _, rel := range captureFiles {
		if testcapture.Available(rel) {
			inputs = append(inputs, benchInput{rel, loadCapture(t, rel)})
		}
	}
	return inputs
}

// sweepStep is the step of a sweep that cuts a stream of n bytes at cuts
// points, a fifth of them with -short.
func sweepStep(n, cuts int) int {
	if testing.Short() {
		cuts /= 5
	}
	return max(n/cuts, 1)
}

// metaInEventBlocks builds a V4 stream whose event blocks define metadata
// (as NetPerf did, and as this reader accepts), used by later blocks.
func metaInEventBlocks(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{MaxEventBlockSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	md1 := &Metadata{ID: 1, ProviderName: "P", EventID: 1, EventName: "A"}
	if err := w.AddMetadata(md1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		md := md1
		if i%10 == 5 {
			// A metadata record inside the pending event block.
			md = &Metadata{ID: uint32(10 + i), ProviderName: "Q", EventID: uint32(i), EventName: fmt.Sprint("B", i)}
			w.ev = w.appendBlob(w.ev, &Event{Payload: appendMetadataV4(nil, md)}, 0)
			w.evCount++
			w.meta[md.ID] = true
		}
		ev := Event{Metadata: md, SequenceNumber: uint32(i + 1), ThreadID: 1, CaptureThreadID: 1, Timestamp: int64(i), Payload: []byte{byte(i)}}
		if err := w.WriteEvent(&ev); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadParallelStops checks that a failing merge and a cancelled context
// stop ReadParallel with their error, which the Reader keeps.
func TestReadParallelStops(t *testing.T) {
	var gen bytes.Buffer
	if err := genStream(&gen, 100_000, 4); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	r, _ := NewReader(bytes.NewReader(gen.Bytes()))
	n := 0
	err := ReadParallel(context.Background(), r, ParallelConfig{SerialBytes: -1}, func() *collectPart { return &collectPart{} },
		func(p *collectPart) error {
			if n++; n == 3 {
				return boom
			}
			return nil
		})
	if err != boom {
		t.Fatalf("ReadParallel returned %v, want the merge's error", err)
	}
	var ev Event
	if err := r.ReadEvent(&ev); err != boom {
		t.Fatalf("ReadEvent after a failed ReadParallel returned %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, _ = NewReader(bytes.NewReader(gen.Bytes()))
	err = ReadParallel(ctx, r, ParallelConfig{SerialBytes: -1}, func() *collectPart { return &collectPart{} },
		func(p *collectPart) error {
			cancel()
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadParallel after cancel returned %v", err)
	}
	if r.Stats().Events >= 100_000 {
		t.Fatalf("cancelled ReadParallel read every event")
	}
}

// TestReadParallelAfterReadEvent starts ReadParallel in the middle of a block.
func TestReadParallelAfterReadEvent(t *testing.T) {
	var gen bytes.Buffer
	if err := genStream(&gen, 50_000, 4); err != nil {
		t.Fatal(err)
	}
	want, _, _ := readAllWith(gen.Bytes(), (*Reader).ReadEvent)
	r, _ := NewReader(bytes.NewReader(gen.Bytes()))
	var got []string
	var ev Event
	for i := 0; i < 777; i++ {
		if err := r.ReadEvent(&ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, describeEvent(&ev))
	}
	err := ReadParallel(context.Background(), r, ParallelConfig{SerialBytes: -1}, func() *collectPart { return &collectPart{} },
		func(p *collectPart) error {
			got = append(got, p.events...)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || r.Stats().Events != int64(len(want)) {
		t.Fatalf("read %d events (stats %d), want %d", len(got), r.Stats().Events, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d differs", i)
		}
	}
}

// keepPart keeps copies of the Event structs of a run (the first part:
// their descriptions, taken in Event), to be read in merge.
type keepPart struct {
	first bool
	evs   []Event
	descs []string
}

func (p *keepPart) Event(ev *Event) {
	if p.first {
		p.descs = append(p.descs, describeEvent(ev))
		return
	}
	p.evs = append(p.evs, *ev)
}

func (p *keepPart) Reset() { p.evs, p.descs = p.evs[:0], p.descs[:0] }

// TestReadParallelKeepsEvents checks ReadParallel's two promises to ordered
// consumers: the events of the parts decoded by workers can be read in
// merge from copies of their Event structs (payload and stack still
// valid), and the first part takes every event before the others.
func TestReadParallelKeepsEvents(t *testing.T) {
	var inputs []benchInput
	for _, name := range []string{"v4", "v6", "v4-uncompressed", "v6-uncompressed"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 300
		data, _, _ := buildTraceN(t, cfg, 40)
		inputs = append(inputs, benchInput{name, data})
	}
	var gen bytes.Buffer
	events := 50_000
	if testing.Short() {
		events = 10_000
	}
	if err := genStream(&gen, events, 4); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, benchInput{"gen-v4", gen.Bytes()}, benchInput{"metadata-in-event-blocks", metaInEventBlocks(t)})
	inputs = append(inputs, equivalenceCaptures(t)...)
	for _, in := range inputs {
		for _, data := range [][]byte{in.data, in.data[:len(in.data)*2/3]} {
			want, _, werr := readAllWith(data, (*Reader).ReadEvent)
			for _, cfg := range []ParallelConfig{{Workers: 3, MaxInFlight: 4, SerialBytes: int64(len(data) / 4)},
				{Workers: 2, MaxInFlight: 2, SerialBytes: -1}} {
				r, err := NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				parts, otherMerged := 0, false
				err = ReadParallel(context.Background(), r, cfg,
					func() *keepPart { parts++; return &keepPart{first: parts == 1} },
					func(p *keepPart) error {
						if p.first && otherMerged {
							t.Errorf("%s: the first part is merged after another", in.name)
						}
						otherMerged = otherMerged || !p.first
						got = append(got, p.descs...)
						for i := range p.evs {
							got = append(got, describeEvent(&p.evs[i]))
						}
						return nil
					})
				if err == nil {
					err = io.EOF
				}
				if fmt.Sprint(err) != fmt.Sprint(werr) {
					t.Fatalf("%s (%d bytes) %+v: ReadParallel ends with %v, ReadEvent with %v", in.name, len(data), cfg, err, werr)
				}
				if len(got) != len(want) {
					t.Fatalf("%s (%d bytes) %+v: %d events merged, ReadEvent reads %d", in.name, len(data), cfg, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s (%d bytes) %+v: event %d differs:\nkept   %s\nserial %s", in.name, len(data), cfg, i, got[i], want[i])
					}
				}
			}
		}
	}
}
