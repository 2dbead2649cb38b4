package nettrace

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// readLimited reads every event of data with cfg and returns the first error.
func readLimited(t *testing.T, data []byte, cfg ReaderConfig) (*Reader, error) {
	t.Helper()
	r, err := NewReaderConfig(bytes.NewReader(data), cfg)
	if err != nil {
		return nil, err
	}
	var ev Event
	for {
		if err := r.ReadEvent(&ev); err != nil {
			if err == io.EOF {
				return r, nil
			}
			return r, err
		}
	}
}

// TestReaderLimits: a live peer that floods metadata, stacks or capture
// threads hits the configured limits instead of growing the reader.
func TestReaderLimits(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{ProcessID: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mds []*Metadata
	for i := range 20 {
		md := &Metadata{ID: uint32(i + 1), ProviderName: "P", EventID: uint32(i)}
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
		mds = append(mds, md)
	}
	stacks := make([][]uint64, 50)
	for i := range stacks {
		stacks[i] = []uint64{uint64(i), uint64(i) + 1, uint64(i) + 2}
	}
	if err := w.WriteStacks(1, stacks); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		ct := uint64(1000 + i)
		if err := w.WriteEvent(&Event{Metadata: mds[i%len(mds)], SequenceNumber: 1, ThreadID: ct, CaptureThreadID: ct, Timestamp: int64(i), StackID: uint32(i%50 + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()

	if _, err := readLimited(t, data, ReaderConfig{}); err != nil {
		t.Fatalf("no limits: %v", err)
	}
	var fe *FormatError
	if _, err := readLimited(t, data, ReaderConfig{MaxMetadata: 10}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "MaxMetadata") {
		t.Errorf("MaxMetadata 10 of 20: %v", err)
	}
	if _, err := readLimited(t, data, ReaderConfig{MaxMetadata: 20}); err != nil {
		t.Errorf("MaxMetadata 20 of 20: %v", err)
	}
	if _, err := readLimited(t, data, ReaderConfig{MaxStackBytes: 256}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "MaxStackBytes") {
		t.Errorf("MaxStackBytes 256: %v", err)
	}
	r, err := readLimited(t, data, ReaderConfig{MaxThreads: 8})
	if err != nil {
		t.Fatalf("MaxThreads 8: %v", err)
	}
	if len(r.seqs) > 8 {
		t.Errorf("MaxThreads 8: %d threads tracked", len(r.seqs))
	}
	if r.stats.DroppedEvents != 0 {
		t.Errorf("MaxThreads reset counted %d dropped events", r.stats.DroppedEvents)
	}
}
