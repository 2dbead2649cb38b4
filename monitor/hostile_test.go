//go:build unix

package monitor_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/nettrace"
)

// hugeBlockRuntime is a hostile fake runtime: each tracing session sends a
// valid nettrace header, then an event block that announces size bytes and
// streams them (from a small reused buffer, so the peer itself allocates
// next to nothing), then waits for the session to end.
type hugeBlockRuntime struct {
	*ipctest.Server
	size     int
	sessions atomic.Int32
	sent     atomic.Int64 // bytes of the big block written so far, all sessions
}

func newHugeBlockRuntime(t *testing.T, pid, size int) *hugeBlockRuntime {
	h := &hugeBlockRuntime{size: size}
	h.Server = fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: pid, Tracing: h.tracing})
	return h
}

func (h *hugeBlockRuntime) tracing(ctx context.Context, s *ipctest.TracingSession) error {
	h.sessions.Add(1)
	var head bytes.Buffer
	w, err := nettrace.NewWriter(&head, nettrace.WriterConfig{ProcessID: 1})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// An EventBlock object (V4): its type header, the block size, padding
	// to 4 bytes, then the block: a 20-byte header and filler.
	b := head.Bytes()
	b = append(b, 5, 5, 1, 2, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0)
	b = append(b, "EventBlock"...)
	b = append(b, 6)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.size))
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, 20, 0, 1, 0)
	b = append(b, make([]byte, 16)...)
	if _, err := s.Stream.Write(b); err != nil {
		return nil
	}
	chunk := make([]byte, 64<<10)
	for left := h.size - 20; left > 0; left -= len(chunk) {
		n, err := s.Stream.Write(chunk[:min(len(chunk), left)])
		h.sent.Add(int64(n))
		if err != nil {
			return nil // the client gave up on the block
		}
	}
	select {
	case <-s.Stopped:
	case <-ctx.Done():
	}
	return nil
}

// TestMetricsHostileBlockBounded: /metrics keeps a long-lived counters
// session per process; a runtime that announces and sends a 64 MiB block
// must not make the collector allocate it (counters sessions carry blocks
// of a few KiB; the reader refuses blocks over counters.MaxBlockSize).
func TestMetricsHostileBlockBounded(t *testing.T) {
	const peers, size = 3, 64 << 20
	var hs []*hugeBlockRuntime
	var src monitor.StaticSource
	for i := range peers {
		h := newHugeBlockRuntime(t, 901+i, size)
		hs = append(hs, h)
		src = append(src, monitor.Process{PID: 901 + i, Name: "evil", Dialer: h})
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	serve(t, monitor.Config{Source: src, MetricsWindow: 100 * time.Millisecond, DiscoveryInterval: time.Hour})
	// Every peer gets at least two sessions: the first ended (the block
	// refused, or read and found wrong) and a retry opened.
	deadline := time.Now().Add(60 * time.Second)
	for _, h := range hs {
		for h.sessions.Load() < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("peer %d: %d sessions after 60s", h.Info().PID, h.sessions.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stopSampling)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d peers announcing %d MiB blocks: %.1f MiB allocated, peak heap in use %.1f MiB (%.1f MiB before), block bytes the peers got to send: %.1f MiB",
		peers, size>>20, float64(alloc)/(1<<20), float64(peak.Load())/(1<<20), float64(before.HeapInuse)/(1<<20), float64(sentTotal(hs))/(1<<20))
	if alloc > 16<<20 {
		t.Errorf("the collector allocated %.1f MiB for %d hostile peers; want the blocks refused before allocation", float64(alloc)/(1<<20), peers)
	}
}

func sentTotal(hs []*hugeBlockRuntime) int64 {
	var n int64
	for _, h := range hs {
		n += h.sent.Load()
	}
	return n
}

// seriesFloodRuntime is a hostile fake runtime whose counters session
// publishes a new System.Runtime counter name in every event.
func seriesFloodTracing(ctx context.Context, s *ipctest.TracingSession) error {
	w, err := nettrace.NewWriter(s.Stream, nettrace.WriterConfig{ProcessID: 1, ProcessorCount: 2, SyncTimeUTC: time.Now().UTC()})
	if err != nil {
		return err
	}
	sf := func(name string) nettrace.Field { return nettrace.Field{Name: name, Type: nettrace.TypeString} }
	fields := []nettrace.Field{sf("Name"), sf("DisplayName"), {Name: "Mean", Type: nettrace.TypeDouble},
		{Name: "StandardDeviation", Type: nettrace.TypeDouble}, {Name: "Count", Type: nettrace.TypeInt32},
		{Name: "Min", Type: nettrace.TypeDouble}, {Name: "Max", Type: nettrace.TypeDouble},
		{Name: "IntervalSec", Type: nettrace.TypeSingle}, sf("Series"), sf("CounterType"), sf("Metadata"), sf("DisplayUnits")}
	md := &nettrace.Metadata{ID: 1, ProviderName: "System.Runtime", EventID: 2, EventName: "EventCounters", Level: 4,
		Fields: []nettrace.Field{{Type: nettrace.TypeObject, Fields: []nettrace.Field{{Name: "Payload", Type: nettrace.TypeObject, Fields: fields}}}}}
	if err := w.AddMetadata(md); err != nil {
		return err
	}
	start := time.Now()
	for seq := uint32(1); ; seq++ {
		name := "c" + strconv.Itoa(int(seq))
		vals := []any{name, name, 1.0, 0.0, int32(1), 1.0, 1.0, float32(0.1), "Interval=100", "Mean", "", ""}
		inner := make(nettrace.Object, len(vals))
		for i, x := range vals {
			inner[i] = nettrace.NamedValue{Name: fields[i].Name, Value: x}
		}
		payload, err := nettrace.AppendPayload(nil, md.Fields, nettrace.Object{{Value: nettrace.Object{{Name: "Payload", Value: inner}}}})
		if err != nil {
			return err
		}
		if err := w.WriteEvent(&nettrace.Event{Metadata: md, SequenceNumber: seq, ThreadID: 9, CaptureThreadID: 9, Timestamp: int64(time.Since(start)), Payload: payload}); err != nil {
			return nil
		}
		if seq%100 == 0 {
			if err := w.Flush(); err != nil {
				return nil
			}
			select {
			case <-s.Stopped:
				return w.Close()
			case <-ctx.Done():
				return nil
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// TestMetricsSeriesBounded: a runtime that publishes ever new counter names
// keeps at most MaxSeriesPerProcess series on /metrics, and the drops are
// counted.
func TestMetricsSeriesBounded(t *testing.T) {
	f := fake(t, ipctest.Config{Runtime: ipctest.NET3_1, PID: 911, Tracing: seriesFloodTracing})
	hs := serve(t, monitor.Config{Source: monitor.StaticSource{{PID: 911, Name: "evil", Dialer: f}}, MetricsWindow: 100 * time.Millisecond, DiscoveryInterval: time.Hour})
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := do(t, hs, "GET", "/metrics")
		text := string(body)
		if strings.Contains(text, `clrdiag_collector_series_dropped_total{pid="911",process_name="evil"}`) {
			n := strings.Count(text, "\nsystemruntime_c")
			if n > monitor.MaxSeriesPerProcess {
				t.Errorf("%d series of pid 911 on /metrics, want at most %d", n, monitor.MaxSeriesPerProcess)
			}
			t.Logf("%d series kept, size of /metrics %d bytes", n, len(body))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no series dropped after 60s:\n%.2000s", text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
