package gcdump

import (
	"bytes"
	"testing"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
)

func leakyFile(t testing.TB, n int) []byte {
	var trace, file bytes.Buffer
	if err := gcdumptest.Trace(&trace, gcdumptest.Leaky(n), gcdumptest.Options{}); err != nil {
		t.Fatal(err)
	}
	g, err := FromTrace(&trace)
	if err != nil {
		t.Fatal(err)
	}
	g.Info.CollectionLog = "log ü €"
	g.Info.Segments = []Segment{{Start: 1, End: 2, Gen0End: 3}}
	if err := Write(&file, g); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// FuzzRead feeds arbitrary bytes to the .gcdump reader: it must never
// panic, and whatever it accepts must be a consistent graph that writes and
// reads back the same.
func FuzzRead(f *testing.F) {
	f.Add(leakyFile(f, 2))
	f.Add(leakyFile(f, 0))
	f.Add([]byte("\x14\x00\x00\x00!FastSerialization.1\x04\x04\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if g != nil {
				t.Fatal("graph and error")
			}
			if !IsFormatError(err) {
				t.Fatalf("%T %v is not a FormatError", err, err)
			}
			return
		}
		if err := g.check(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, g); err != nil {
			return // e.g. a size the writer cannot represent
		}
		g2, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if g2.NumNodes() != g.NumNodes() || g2.NumEdges() != g.NumEdges() || g2.TotalSize() != g.TotalSize() {
			t.Fatal("round trip changed the graph")
		}
		// The analyses run on anything the reader accepts.
		d := ComputeDominators(g)
		if _, err := BuildReport(g, d, ReportConfig{}); err != nil {
			t.Fatal(err)
		}
		BuildFlame(g, d, FlameConfig{MaxDepth: 5})
	})
}

func leakyTrace(t testing.TB, n int, opt gcdumptest.Options) []byte {
	var trace bytes.Buffer
	if err := gcdumptest.Trace(&trace, gcdumptest.Leaky(n), opt); err != nil {
		t.Fatal(err)
	}
	return trace.Bytes()
}

// FuzzFromTrace feeds arbitrary bytes to the heap-snapshot builder through
// the nettrace reader.
func FuzzFromTrace(f *testing.F) {
	f.Add(leakyTrace(f, 3, gcdumptest.Options{}))
	f.Add(leakyTrace(f, 2, gcdumptest.Options{NodesPerEvent: 1, EdgesPerEvent: 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := FromTrace(bytes.NewReader(data))
		if err != nil && g == nil {
			return
		}
		if err := g.check(); err != nil {
			t.Fatal(err)
		}
		ComputeDominators(g)
	})
}

// FuzzEvents feeds arbitrary payloads to every heap-walk event decoder.
func FuzzEvents(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}, true)
	f.Add([]byte{1, 0, 0, 0, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 'A', 0, 0, 0, 0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, p []byte, wide bool) {
		ptr := 4
		if wide {
			ptr = 8
		}
		if b, err := DecodeBulkNodes(p, ptr); err == nil {
			for i := range int(b.Count) {
				b.At(i)
			}
		}
		if b, err := DecodeBulkEdges(p, ptr); err == nil {
			for i := range int(b.Count) {
				b.Target(i)
				b.FieldID(i)
			}
		}
		if b, err := DecodeRootEdges(p, ptr); err == nil {
			for i := range int(b.Count) {
				b.At(i)
			}
		}
		if b, err := DecodeCWTEdges(p, ptr); err == nil {
			for i := range int(b.Count) {
				b.At(i)
			}
		}
		DecodeBulkType(p)
		DecodeStaticVars(p)
		DecodeCCWs(p)
		DecodeRCWs(p)
	})
}
