package nettrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/clrdiag/clrdiag/internal/testcapture"
)

// readAllFrom decodes src with cfg and returns the Reader, a description
// of every event, the stats and the final error.
func readAllFrom(src io.Reader, cfg ReaderConfig) (*Reader, []string, Stats, error) {
	r, err := NewReaderConfig(src, cfg)
	if err != nil {
		return nil, nil, Stats{}, err
	}
	var out []string
	var ev Event
	for {
		if err = r.ReadEvent(&ev); err != nil {
			break
		}
		out = append(out, describeEvent(&ev))
	}
	return r, out, r.Stats(), err
}

// smallBlockStream writes 400 events in blocks of at most
// cfg.MaxEventBlockSize bytes, with a stack block and a sequence point now
// and then: many block boundaries around BufferSize.
func smallBlockStream(t *testing.T, cfg WriterConfig) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	md := &Metadata{ID: 1, ProviderName: "P", EventID: 1, EventName: "E"}
	if err := w.AddMetadata(md); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 8)
	for i := range 400 {
		if i%50 == 0 {
			if err := w.WriteStacks(1, [][]uint64{{0x1000, uint64(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if i%100 == 99 { // the stacks start over at i+1
			if err := w.WriteSequencePoint(int64(i), []ThreadSeq{{1, uint32(i + 1)}}, 0); err != nil {
				t.Fatal(err)
			}
		}
		payload[0] = byte(i)
		ev := Event{Metadata: md, SequenceNumber: uint32(i + 1), ThreadID: 1, CaptureThreadID: 1,
			ThreadIndex: 1, CaptureThreadIndex: 1, Timestamp: int64(i), Payload: payload}
		if err := w.WriteEvent(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// failAfter returns its data, the last of it together with err (as a
// network connection that breaks may), then err again, or io.EOF if once
// is set: a reader that dropped a once error would report a truncation.
type failAfter struct {
	data []byte
	err  error
	once bool
	done bool
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.done {
		if f.once {
			return 0, io.EOF
		}
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	if len(f.data) == 0 {
		f.done = true
		return n, f.err
	}
	return n, nil
}

// TestReadBufferGrows checks the read buffer that starts small and grows to
// BufferSize once the stream has passed it: whatever the source's read sizes,
// the bytes the small buffer held when it grew and an error the source
// returned with data, every event, error (offset included) and counter is
// the same as with a buffer that never grows; a stream smaller than
// BufferSize keeps the small buffer and a larger one gets the full one.
func TestReadBufferGrows(t *testing.T) {
	var inputs []benchInput
	for _, name := range []string{"v4", "v4-ptr4", "v6"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 300 // blocks smaller than the starting buffer
		inputs = append(inputs, benchInput{name, varietyStream(t, cfg, 300, 7)},
			benchInput{name + "-small-blocks", smallBlockStream(t, cfg)})
	}
	var gen bytes.Buffer
	if err := genStream(&gen, 20_000, 4); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, benchInput{"generated", gen.Bytes()})
	for _, rel := range []string{
		"perfview/eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf.zip",
		"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace.zip",
		"zetslief/perf_100ms.nettrace",
	} {
		if testcapture.Available(rel) && !testing.Short() { // see equivalenceCaptures
			inputs = append(inputs, benchInput{rel, loadCapture(t, rel)})
		}
	}
	boom := errors.New("connection reset")
	sources := map[string]func([]byte) io.Reader{
		"plain":     func(b []byte) io.Reader { return onlyReader{bytes.NewReader(b)} },
		"one-byte":  func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":      func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"data-eof":  func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"data-boom": func(b []byte) io.Reader { return &failAfter{data: b, err: boom} },
		// bufio.Reader passes an error that comes with the last bytes of a
		// read straight into the caller's slice (a block larger than the
		// buffer) to io.ReadFull, which drops it; blocks smaller than the
		// buffers never take that path, so there the error must surface.
		"data-boom-once": func(b []byte) io.Reader { return &failAfter{data: b, err: boom, once: true} },
	}
	for _, in := range inputs {
		cuts := []int{len(in.data)}
		for _, c := range []int{700, 4000, len(in.data) / 2, len(in.data) - 3} {
			if c > 0 && c < len(in.data) {
				cuts = append(cuts, c)
			}
		}
		// Cuts just past BufferSize: the buffer grows at the first block
		// past it, with the stream's end (and the source's error) in it.
		step := 16
		if testing.Short() {
			step = 128
		}
		for c := 4096; c < min(len(in.data), 4096+1024); c += step {
			cuts = append(cuts, c)
		}
		for _, cut := range cuts {
			data := in.data[:cut]
			_, want, wst, werr := readAllFrom(onlyReader{bytes.NewReader(data)}, ReaderConfig{BufferSize: startBufferSize})
			for sname, src := range sources {
				if sname == "data-boom-once" && !strings.HasSuffix(in.name, "-small-blocks") {
					continue
				}
				r, got, gst, gerr := readAllFrom(src(data), ReaderConfig{})
				name := fmt.Sprintf("%s cut at %d of %d, %s source", in.name, cut, len(in.data), sname)
				if strings.HasPrefix(sname, "data-boom") {
					// The same events as the reference, then the source's
					// error where the reference found the stream cut.
					var fe *FormatError
					cut := errors.As(werr, &fe) && fe.Truncated()
					if cut && !errors.Is(gerr, boom) || !cut && fmt.Sprint(gerr) != fmt.Sprint(werr) {
						t.Fatalf("%s: error %v, want %v or the source's error", name, gerr, werr)
					}
					if len(got) != len(want) || gst.Events != wst.Events {
						t.Fatalf("%s: %d events (stats %d), want %d", name, len(got), gst.Events, len(want))
					}
				} else {
					if fmt.Sprint(gerr) != fmt.Sprint(werr) {
						t.Fatalf("%s: error %v, want %v", name, gerr, werr)
					}
					if gst != wst {
						t.Fatalf("%s: stats\n%+v, want\n%+v", name, gst, wst)
					}
				}
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("%s: event %d\n%s, want\n%s", name, i, got[i], want[i])
					}
				}
				if r == nil || sname != "plain" || werr != io.EOF {
					continue
				}
				if size := r.br.Size(); len(data) < 4096 && size != startBufferSize || len(data) > 8192 && size != 4096 {
					t.Fatalf("%s: read buffer of %d bytes for a %d-byte stream", name, size, len(data))
				}
			}
		}
	}
}

// TestLongObjectTypeName: a block whose type name is longer than the
// Reader's scratch buffer (up to the 256 bytes allowed) is read whole and
// named in the error; a longer one is out of range.
func TestLongObjectTypeName(t *testing.T) {
	var empty bytes.Buffer
	w, err := NewWriter(&empty, WriterConfig{})
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(empty.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	header := empty.Bytes()[:r.Stats().Bytes] // up to the first block
	for _, n := range []int{len(objMetadataBlock), 63, 64, 65, 200, 256, 257} {
		var b bytes.Buffer
		b.Write(header)
		name := strings.Repeat("X", n)
		b.Write([]byte{4, 4, 1, 2, 0, 0, 0, 2, 0, 0, 0, byte(n), byte(n >> 8), 0, 0})
		b.WriteString(name)
		b.WriteByte(tagEndObject)
		b.Write(make([]byte, 64))
		r, err := NewReader(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("name of %d bytes: NewReader: %v", n, err)
		}
		var ev Event
		err = r.ReadEvent(&ev)
		want := fmt.Sprintf("unknown object type %q", name)
		if n > 256 {
			want = fmt.Sprintf("object type name length %d is out of range (0..256)", n)
		}
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("name of %d bytes: error %v, want a FormatError saying %s", n, err, want)
		}
	}
}
