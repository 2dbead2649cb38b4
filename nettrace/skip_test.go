package nettrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"testing"
)

// skipFuncs are the skip functions the tests read with: each decides by the
// record's content (the two reads compared have their own records).
var skipFuncs = map[string]func(*Metadata) bool{
	"none": func(*Metadata) bool { return false },
	"all":  func(*Metadata) bool { return true },
	"half": func(md *Metadata) bool {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s/%d/%d/%s", md.ProviderName, md.EventID, md.ID, md.EventName)
		return h.Sum32()%2 == 0
	},
	"odd-ids": func(md *Metadata) bool { return md.ID%2 == 1 },
}

// skipRead is what a read with or without a skip function gives.
type skipRead struct {
	events     []string
	stats      Stats
	err        error
	skipMin    int64
	skipMax    int64
	skipAny    bool
	wantMin    int64 // unfiltered read: time range of the events skip would leave out
	wantMax    int64
	wantSkip   int64
	wantEvents []string
}

// readSkipping reads data with ReadEvent (or, general, with the general
// decoder alone) after SetSkip(skip); with want set it reads without a skip
// function and computes what a read with skip must give.
func readSkipping(data []byte, skip func(*Metadata) bool, want, general bool) (skipRead, error) {
	var out skipRead
	r, err := NewReaderConfig(bytes.NewReader(data), ReaderConfig{BufferSize: 4096})
	if err != nil {
		return out, err
	}
	if !want {
		r.SetSkip(skip)
	}
	out.wantMin, out.wantMax = math.MaxInt64, math.MinInt64
	var ev Event
	for {
		if general {
			for err = r.readEventSlow(&ev); err == errFiltered; err = r.readEventSlow(&ev) {
			}
		} else {
			err = r.ReadEvent(&ev)
		}
		if err != nil {
			break
		}
		d := describeEvent(&ev)
		out.events = append(out.events, d)
		if want {
			if skip(ev.Metadata) {
				out.wantSkip++
				out.wantMin = min(out.wantMin, ev.Timestamp)
				out.wantMax = max(out.wantMax, ev.Timestamp)
			} else {
				out.wantEvents = append(out.wantEvents, d)
			}
		}
	}
	out.stats, out.err = r.Stats(), err
	out.skipMin, out.skipMax, out.skipAny = r.SkippedTimeRange()
	return out, nil
}

// checkSkip fails unless reading data with skip gives exactly the events of
// an unfiltered read that skip does not leave out, every field alike, and
// the same stats (but for Events and Skipped), time range and error, by
// ReadEvent and by the general decoder alone.
func checkSkip(t *testing.T, data []byte, skip func(*Metadata) bool) {
	t.Helper()
	want, werr := readSkipping(data, skip, true, false)
	for _, general := range []bool{false, true} {
		got, gerr := readSkipping(data, skip, false, general)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("general %v: NewReader: %v, with a skip function %v", general, werr, gerr)
		}
		if werr != nil {
			return
		}
		if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
			t.Fatalf("general %v: ends with %v, without skipping with %v", general, got.err, want.err)
		}
		var gfe, wfe *FormatError
		if errors.As(got.err, &gfe) != errors.As(want.err, &wfe) || gfe != nil && gfe.Offset != wfe.Offset {
			t.Fatalf("general %v: error %v, without skipping %v", general, got.err, want.err)
		}
		if got.stats.Skipped != want.wantSkip || got.stats.Events != int64(len(want.wantEvents)) {
			t.Fatalf("general %v: %d events and %d skipped, want %d and %d", general,
				got.stats.Events, got.stats.Skipped, len(want.wantEvents), want.wantSkip)
		}
		ws := want.stats
		ws.Events, ws.Skipped = got.stats.Events, got.stats.Skipped
		if got.stats != ws {
			t.Fatalf("general %v: stats differ:\nskipping %+v\nall      %+v", general, got.stats, want.stats)
		}
		if got.skipAny != (want.wantSkip > 0) || got.skipAny && (got.skipMin != want.wantMin || got.skipMax != want.wantMax) {
			t.Fatalf("general %v: skipped time range %d..%d (%v), want %d..%d", general, got.skipMin, got.skipMax, got.skipAny, want.wantMin, want.wantMax)
		}
		if len(got.events) != len(want.wantEvents) {
			t.Fatalf("general %v: %d events delivered, want %d", general, len(got.events), len(want.wantEvents))
		}
		for i := range got.events {
			if got.events[i] != want.wantEvents[i] {
				t.Fatalf("general %v: event %d differs:\nskipping %s\nall      %s", general, i, got.events[i], want.wantEvents[i])
			}
		}
	}
}

// TestSkipMatchesFilteredRead reads every input, whole and cut at many
// points (with one), with each skip function, and compares with an
// unfiltered read. -short makes the variety streams of 1,000 events
// rather than 3,000.
func TestSkipMatchesFilteredRead(t *testing.T) {
	n := 3000
	if testing.Short() {
		// The same statements of the package run with 1,000 events a
		// variety stream as with 3,000 (go test -coverprofile, block by
		// block; with 600 one fewer): the streams stay over 2 MiB (whole
		// only), a third of the size.
		n = 1000
	}
	for _, in := range testInputsN(t, []string{"v4", "v6", "v4-uncompressed"}, n, 5) {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel() // two inputs at a time on two cores
			for _, skip := range skipFuncs {
				checkSkip(t, in.data, skip)
			}
			if len(in.data) > 2<<20 {
				return
			}
			step := sweepStep(len(in.data), 20)
			for cut := len(in.data) - 1; cut > 0; cut -= step {
				checkSkip(t, in.data[:cut], skipFuncs["half"])
			}
		})
	}
}

// TestSkipTruncatedEverywhere cuts small traces at every byte.
func TestSkipTruncatedEverywhere(t *testing.T) {
	for _, name := range []string{"v4", "v4-uncompressed", "v6", "netperf"} {
		cfg, ok := writerConfigs()[name]
		if !ok {
			continue
		}
		cfg.MaxEventBlockSize = 300
		data, _, _ := buildTraceN(t, cfg, 20)
		step := 1
		if testing.Short() {
			step = 7
		}
		for n := 0; n < len(data); n += step {
			checkSkip(t, data[:n], skipFuncs["half"])
		}
	}
}

// TestSetSkipMidStream sets a skip function after some events were read:
// the records read already get its answer, and the events before stay
// delivered.
func TestSetSkipMidStream(t *testing.T) {
	cfg := writerConfigs()["v4"]
	cfg.MaxEventBlockSize = 4000
	data := varietyStream(t, cfg, 3000, 9)
	skip := skipFuncs["odd-ids"]
	all, err := readSkipping(data, skip, true, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	var got []string
	for range 1000 {
		if err := r.ReadEvent(&ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, describeEvent(&ev))
	}
	r.SetSkip(skip)
	for r.ReadEvent(&ev) == nil {
		if skip(ev.Metadata) {
			t.Fatalf("event of record %d delivered after SetSkip", ev.Metadata.ID)
		}
		got = append(got, describeEvent(&ev))
	}
	var want []string
	for i, d := range all.events {
		if i < 1000 || !skipDescribed(d) {
			want = append(want, d)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d differs:\ngot  %s\nwant %s", i, got[i], want[i])
		}
	}
	if st := r.Stats(); st.Events+st.Skipped != all.stats.Events || st.Skipped == 0 {
		t.Fatalf("stats %+v, want %d events in all", st, all.stats.Events)
	}
	r2, _ := NewReader(bytes.NewReader(data))
	r2.SetSkip(skip)
	r2.SetSkip(nil)
	n := 0
	for r2.ReadEvent(&ev) == nil {
		n++
	}
	if int64(n) != all.stats.Events || r2.Stats().Skipped != 0 {
		t.Fatalf("after SetSkip(nil): %d events, %d skipped; want %d, 0", n, r2.Stats().Skipped, all.stats.Events)
	}
}

// skipDescribed reports whether skipFuncs["odd-ids"] leaves out the event
// describeEvent described as d.
func skipDescribed(d string) bool {
	var id uint32
	fmt.Sscanf(d, "md=%d/", &id)
	return id%2 == 1
}

// TestReadParallelWithSkip: ReadParallel reads a Reader with a skip
// function serially, with what ReadEvent gives.
func TestReadParallelWithSkip(t *testing.T) {
	cfg := writerConfigs()["v4"]
	cfg.MaxEventBlockSize = 4000
	data := varietyStream(t, cfg, 3000, 11)
	skip := skipFuncs["half"]
	want, err := readSkipping(data, skip, false, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	r.SetSkip(skip)
	var got []string
	err = ReadParallel(context.Background(), r, ParallelConfig{Workers: 2, SerialBytes: -1}, func() *collectPart { return &collectPart{} },
		func(p *collectPart) error {
			got = append(got, p.events...)
			return nil
		})
	if err != nil || want.err != io.EOF {
		t.Fatalf("ReadParallel: %v; ReadEvent ended with %v", err, want.err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want.events) || r.Stats() != want.stats {
		t.Fatalf("ReadParallel with a skip function: %d events, stats %+v; ReadEvent: %d, %+v", len(got), r.Stats(), len(want.events), want.stats)
	}
}
