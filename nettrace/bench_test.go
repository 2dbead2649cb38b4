package nettrace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/internal/units"
)

// onlyReader hides io.WriterTo and friends so io.Copy copies in chunks, the
// same way the Reader consumes its source.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// genStream writes a stream shaped like a busy custom EventSource: n events
// with 12-byte payloads from 8 threads, written (like the runtime's
// per-thread buffers) in runs of 100 events per thread, timestamps going back
// at each thread switch, stacks on two thirds of the events and a sequence
// point every 100k events.
func genStream(w io.Writer, n int, version int) error {
	wr, err := NewWriter(w, WriterConfig{Version: version, ProcessID: 1, ProcessorCount: 4})
	if err != nil {
		return err
	}
	fields := []Field{{Name: "Id", Type: TypeInt32}, {Name: "Value", Type: TypeInt64}}
	mds := []*Metadata{
		{ID: 1, ProviderName: "Bench-Source", EventID: 1, EventName: "Tick", Level: 4, Fields: fields},
		{ID: 2, ProviderName: "Bench-Source", EventID: 2, EventName: "Tock", Level: 4, Fields: fields},
	}
	for _, md := range mds {
		if err := wr.AddMetadata(md); err != nil {
			return err
		}
	}
	payload := make([]byte, 12)
	seq := make([]uint32, 8)
	var ev Event
	for i := 0; i < n; i++ {
		if i%100_000 == 0 {
			if i > 0 {
				ts := make([]ThreadSeq, len(seq))
				for t := range seq {
					ts[t] = ThreadSeq{uint64(t + 1), seq[t]}
				}
				if err := wr.WriteSequencePoint(int64(i*100), ts, 0); err != nil {
					return err
				}
			}
			if err := wr.WriteStacks(1, [][]uint64{{0x1000, 0x2000, 0x3000}, {0x4000}}); err != nil {
				return err
			}
		}
		t := (i / 100) % 8
		seq[t]++
		payload[0] = byte(i)
		ev = Event{Metadata: mds[i%2], SequenceNumber: seq[t], ThreadID: uint64(t + 1), CaptureThreadID: uint64(t + 1),
			ThreadIndex: uint64(t + 1), CaptureThreadIndex: uint64(t + 1),
			Timestamp: int64(i*100 - t*7), StackID: uint32(i % 3), Payload: payload}
		if err := wr.WriteEvent(&ev); err != nil {
			return err
		}
	}
	return wr.Close()
}

func readAll(b *testing.B, src io.Reader) int64 {
	r, err := NewReader(src)
	if err != nil {
		b.Fatal(err)
	}
	var ev Event
	var n int64
	var sink int
	for {
		err := r.ReadEvent(&ev)
		if err != nil {
			if err != io.EOF {
				var fe *FormatError
				if !errorsAs(err, &fe) || !fe.Truncated() {
					b.Fatal(err)
				}
			}
			break
		}
		sink += len(ev.Payload) + int(ev.Metadata.EventID)
		n++
	}
	_ = sink
	return n
}

func benchData(b *testing.B, data []byte) {
	b.Helper()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var events int64
	for b.Loop() {
		events = readAll(b, onlyReader{bytes.NewReader(data)})
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events), "events/op")
}

// BenchmarkRead decodes whole traces from memory: every header decoded,
// metadata resolved, payload available as a slice. Compare with
// BenchmarkCopyCeiling on the same bytes.
func BenchmarkRead(b *testing.B) {
	inputs := benchInputs(b)
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) { benchData(b, in.data) })
	}
}

// BenchmarkCopyCeiling reads the same bytes with io.Copy to io.Discard: the
// ceiling for any decoder fed through an io.Reader.
func BenchmarkCopyCeiling(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.Copy(io.Discard, onlyReader{bytes.NewReader(in.data)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchInput struct {
	name string
	data []byte
}

var generated = map[int][]byte{}

func benchInputs(b *testing.B) []benchInput {
	var ins []benchInput
	for _, v := range []int{4, 6} {
		if generated[v] == nil {
			var buf bytes.Buffer
			if err := genStream(&buf, 2_000_000, v); err != nil {
				b.Fatal(err)
			}
			generated[v] = buf.Bytes()
		}
		ins = append(ins, benchInput{fmt.Sprintf("generated-v%d-2M", v), generated[v]})
	}
	if p := os.Getenv("NETTRACE_BENCH_FILE"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatalf("NETTRACE_BENCH_FILE: %v", err)
		}
		ins = append(ins, benchInput{"file-" + filepath.Base(p), data})
	}
	for _, rel := range []string{
		"perfview/VoiceMemo.23092.nettrace.zip",
		"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
		"misc/net5-v2params-allocTrace.nettrace",
	} {
		if testcapture.Available(rel) {
			ins = append(ins, benchInput{strings.TrimSuffix(filepath.Base(rel), ".zip"), loadCapture(b, rel)})
		}
	}
	return ins
}

// BenchmarkStreamPipe decodes a generated stream produced on the fly by a
// writer goroutine through io.Pipe (like a live session socket), and
// reports the peak heap. Set NETTRACE_STREAM_EVENTS to stream more (e.g.
// 200000000 events is about 4 GB).
func BenchmarkStreamPipe(b *testing.B) {
	n := 5_000_000
	if s := os.Getenv("NETTRACE_STREAM_EVENTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	b.ReportAllocs()
	var peak uint64
	var bytesRead int64
	for b.Loop() {
		pr, pw := io.Pipe()
		cw := &countWriter{w: pw}
		go func() { pw.CloseWithError(genStream(cw, n, 4)) }()
		done := make(chan struct{})
		go func() { // sample the heap while streaming
			var ms runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
				}
			}
		}()
		if got := readAll(b, pr); got != int64(n) {
			b.Fatalf("read %d events, wrote %d", got, n)
		}
		close(done)
		bytesRead = cw.n
	}
	b.SetBytes(bytesRead)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// streamGB returns a reader of a generated V4 stream of
// NETTRACE_STREAM_GB gigabytes written through a pipe, the writer that
// counts its bytes and the number of events; it skips without the
// variable.
func streamGB(t *testing.T) (r *Reader, cw *countWriter, events int) {
	t.Helper()
	gb := os.Getenv("NETTRACE_STREAM_GB")
	if gb == "" {
		t.Skip("set NETTRACE_STREAM_GB=2 to stream 2 GB through the reader")
	}
	g, err := strconv.ParseFloat(gb, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The generated stream averages about 16 bytes per event.
	events = int(g * (1 << 30) / 16)
	pr, pw := io.Pipe()
	cw = &countWriter{w: pw}
	go func() { pw.CloseWithError(genStream(cw, events, 4)) }()
	if r, err = NewReader(pr); err != nil {
		t.Fatal(err)
	}
	return r, cw, events
}

// TestStreamMemoryFlat streams NETTRACE_STREAM_GB gigabytes through a pipe
// and fails if the heap ever exceeds 100 MB. Opt-in: it takes minutes.
func TestStreamMemoryFlat(t *testing.T) {
	r, cw, _ := streamGB(t)
	var ev Event
	var ms runtime.MemStats
	var peak uint64
	start := time.Now()
	count := 0
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
		if count%1_000_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	el := time.Since(start)
	t.Logf("streamed %s, %d events in %v (%s, %.1f M events/s), peak heap %s",
		units.FormatBytes(int64(cw.n)), count, el, units.FormatRate(float64(cw.n)/el.Seconds()), float64(count)/1e6/el.Seconds(), units.FormatBytes(int64(peak)))
	if peak > 100<<20 {
		t.Errorf("peak heap %.1f MiB exceeds 100 MiB", float64(peak)/(1<<20))
	}
}

// TestStreamMemoryFlatParallel is TestStreamMemoryFlat through ReadParallel:
// NETTRACE_STREAM_GB gigabytes through a pipe on every core, failing if the
// heap ever exceeds 100 MB. Opt-in: it takes minutes.
func TestStreamMemoryFlatParallel(t *testing.T) {
	r, cw, n := streamGB(t)
	var ms runtime.MemStats
	var peak uint64
	var total countPart
	merges := 0
	start := time.Now()
	err := ReadParallel(context.Background(), r, ParallelConfig{}, newCountPart,
		func(p *countPart) error {
			total.add(p)
			if merges++; merges%256 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	var count int64
	for _, c := range total.n {
		count += c
	}
	if count != int64(n) || r.Stats().Events != int64(n) {
		t.Fatalf("merged %d events (stats %d), wrote %d", count, r.Stats().Events, n)
	}
	t.Logf("streamed %s, %d events in %v (%s, %.1f M events/s), peak heap %s",
		units.FormatBytes(int64(cw.n)), count, el, units.FormatRate(float64(cw.n)/el.Seconds()), float64(count)/1e6/el.Seconds(), units.FormatBytes(int64(peak)))
	if peak > 100<<20 {
		t.Errorf("peak heap %.1f MiB exceeds 100 MiB", float64(peak)/(1<<20))
	}
}

// TestReadEventDoesNotAllocate checks the zero-allocation promise: once the
// reader's buffers have grown, decoding events allocates nothing.
func TestReadEventDoesNotAllocate(t *testing.T) {
	for _, version := range []int{4, 6} {
		var buf bytes.Buffer
		if err := genStream(&buf, 300_000, version); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		var ev Event
		for i := 0; i < 1000; i++ { // warm up: grow buffers
			if err := r.ReadEvent(&ev); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(200_000, func() {
			if err := r.ReadEvent(&ev); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0.001 {
			t.Errorf("V%d: ReadEvent allocates %.4f times per event, want 0", version, allocs)
		}
	}
}

func errorsAs(err error, target **FormatError) bool {
	fe, ok := err.(*FormatError)
	if ok {
		*target = fe
	}
	return ok
}

// countPart is what trace stats keeps: events per metadata record and the
// time range.
type countPart struct {
	_           [64]byte // off the other parts' cache lines
	n           []int64
	first, last int64
	seen        bool
	_           [64]byte
}

func newCountPart() *countPart { return &countPart{n: make([]int64, 0, 16)} }

func (p *countPart) Event(ev *Event) {
	i := ev.Metadata.Index()
	if i >= len(p.n) {
		p.n = append(p.n, make([]int64, i+1-len(p.n))...)
	}
	p.n[i]++
	if !p.seen {
		p.first, p.last, p.seen = ev.Timestamp, ev.Timestamp, true
	} else if ev.Timestamp < p.first {
		p.first = ev.Timestamp
	} else if ev.Timestamp > p.last {
		p.last = ev.Timestamp
	}
}

func (p *countPart) Reset() {
	clear(p.n)
	p.seen = false
}

func (p *countPart) add(q *countPart) {
	if len(q.n) > len(p.n) {
		p.n = append(p.n, make([]int64, len(q.n)-len(p.n))...)
	}
	for i, c := range q.n {
		p.n[i] += c
	}
	if q.seen {
		if !p.seen || q.first < p.first {
			p.first = q.first
		}
		if !p.seen || q.last > p.last {
			p.last = q.last
		}
		p.seen = true
	}
}

// BenchmarkCount counts events per kind and the time range, the work of
// trace stats: serially with ReadEvent, and with ReadParallel on 1 and
// GOMAXPROCS workers.
func BenchmarkCount(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name+"/serial", func(b *testing.B) {
			benchCount(b, in.data, func(r *Reader, total *countPart) error {
				var ev Event
				for {
					err := r.ReadEvent(&ev)
					if err != nil {
						return err
					}
					total.Event(&ev)
				}
			})
		})
		for _, w := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/parallel-%d", in.name, w), func(b *testing.B) {
				benchCount(b, in.data, func(r *Reader, total *countPart) error {
					return ReadParallel(context.Background(), r, ParallelConfig{Workers: w},
						newCountPart,
						func(p *countPart) error { total.add(p); return nil })
				})
			})
		}
	}
}

func benchCount(b *testing.B, data []byte, read func(*Reader, *countPart) error) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var events int64
	for b.Loop() {
		r, err := NewReader(onlyReader{bytes.NewReader(data)})
		if err != nil {
			b.Fatal(err)
		}
		var total countPart
		err = read(r, &total)
		if err != nil && err != io.EOF {
			var fe *FormatError
			if !errorsAs(err, &fe) || !fe.Truncated() {
				b.Fatal(err)
			}
		}
		events = 0
		for _, c := range total.n {
			events += c
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
