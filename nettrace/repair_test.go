package nettrace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// TestRepairCutTraces cuts generated traces everywhere, repairs them with
// CompleteLength + EndOfStream, and checks that the result reads cleanly and
// keeps every event of the whole blocks.
func TestRepairCutTraces(t *testing.T) {
	for _, name := range []string{"v4", "v6", "v4-uncompressed"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 300
		data, _, _ := buildTraceN(t, cfg, 60)
		n, complete, err := CompleteLength(bytes.NewReader(data))
		if err != nil || !complete || n != int64(len(data)) {
			t.Fatalf("%s whole: n=%d complete=%v err=%v, want %d true nil", name, n, complete, err, len(data))
		}
		full, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		end := EndOfStreamFor(full.Header())
		prevEvents := -1
		for cut := int(full.goodEnd); cut < len(data); cut += 3 {
			n, complete, err := CompleteLength(bytes.NewReader(data[:cut]))
			if err != nil || complete || n > int64(cut) {
				t.Fatalf("%s cut %d: n=%d complete=%v err=%v", name, cut, n, complete, err)
			}
			fixed := append(bytes.Clone(data[:n]), end...)
			r, err := NewReader(bytes.NewReader(fixed))
			if err != nil {
				t.Fatalf("%s cut %d: repaired trace: %v", name, cut, err)
			}
			var ev Event
			count := 0
			for {
				err = r.ReadEvent(&ev)
				if err != nil {
					break
				}
				count++
			}
			if err != io.EOF {
				t.Fatalf("%s cut %d: repaired trace ends with %v", name, cut, err)
			}
			if count < prevEvents {
				t.Fatalf("%s cut %d: repair kept %d events, a shorter cut kept %d", name, cut, count, prevEvents)
			}
			prevEvents = count
		}
	}
}

func TestCompleteLengthCapture(t *testing.T) {
	data := loadCapture(t, "misc/dotnet-diagnostics-3.0-counters-truncated.nettrace")
	n, complete, err := CompleteLength(bytes.NewReader(data))
	if err != nil || complete || n <= 0 || n >= int64(len(data)) {
		t.Fatalf("n=%d complete=%v err=%v", n, complete, err)
	}
	r, err := NewReader(bytes.NewReader(append(bytes.Clone(data[:n]), EndOfStream()...)))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	for err == nil {
		err = r.ReadEvent(&ev)
	}
	if err != io.EOF || r.Stats().Events < 19000 {
		t.Errorf("repaired capture: %v after %d events", err, r.Stats().Events)
	}
}

// TestNetPerfV3TruncatedEverywhere cuts a real NetPerf V3 trace (fixed
// headers, inline stacks and metadata) at every byte.
func TestNetPerfV3TruncatedEverywhere(t *testing.T) {
	data, err := os.ReadFile("testdata/netperf-v3-tracelogging.netperf")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.Format != FormatNetPerf || h.Version != 3 {
		t.Fatalf("header %+v", h)
	}
	var ends []int64
	var ev Event
	for r.ReadEvent(&ev) == nil {
		ends = append(ends, r.InputOffset())
		if ev.StackLen() == 0 {
			t.Errorf("event at %d has no inline stack", r.InputOffset())
		}
	}
	if len(ends) != 12 || !r.Stats().Complete {
		t.Fatalf("%d events, complete %v", len(ends), r.Stats().Complete)
	}
	for n := 0; n < len(data); n++ {
		r, err := NewReaderConfig(bytes.NewReader(data[:n]), ReaderConfig{BufferSize: 64})
		if err != nil {
			continue
		}
		got := 0
		for err == nil {
			if err = r.ReadEvent(&ev); err == nil {
				got++
			}
		}
		var fe *FormatError
		if !errors.As(err, &fe) || !fe.Truncated() {
			t.Fatalf("cut at %d: %v, want a truncation error", n, err)
		}
		want := 0
		for _, e := range ends {
			if e <= int64(n) {
				want++
			}
		}
		if got != want {
			t.Fatalf("cut at %d: %d events, %d were complete", n, got, want)
		}
	}
}

// RepairFile cuts a file that stopped inside a block after its last whole
// block and terminates it; ReadStats then counts what it keeps. A whole
// file is left alone (-1).
func TestRepairFileAndReadStats(t *testing.T) {
	cfg := writerConfigs()["v4"]
	cfg.MaxEventBlockSize = 300
	data, _, _ := buildTraceN(t, cfg, 60)
	path := t.TempDir() + "/t.nettrace"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := RepairFile(f, -1); n != -1 || err != nil {
		t.Fatalf("whole file: %d %v, want -1 nil", n, err)
	}
	whole, err := ReadStats(bytes.NewReader(data))
	if err != nil || whole.Events < 60 || !whole.Complete {
		t.Fatalf("whole: %+v %v", whole, err)
	}
	cut := len(data) - 40 // inside the last block
	if err := f.Truncate(int64(cut)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStats(io.NewSectionReader(f, 0, int64(cut))); err == nil {
		t.Fatal("a cut file reads cleanly")
	}
	n, err := RepairFile(f, -1)
	if err != nil || n <= 0 || n >= int64(cut) {
		t.Fatalf("cut file: %d %v", n, err)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != n {
		t.Errorf("offset %d after the repair, want the end %d", pos, n)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStats(f)
	if err != nil || st.Events == 0 || st.Events >= whole.Events || !st.Complete {
		t.Errorf("repaired: %+v %v", st, err)
	}
	// A limit before the first block keeps nothing: no block to cut to.
	if n, err := RepairFile(f, 10); err == nil && n > 0 {
		t.Errorf("limit 10: %d %v", n, err)
	}
}
