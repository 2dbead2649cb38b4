package weighted

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"
)

// writeGzip's output reads back with compress/gzip at every size: empty,
// one stored block up to the block limit, and compressed beyond. Up to
// storedGzipMax the stream is one stored block: the data at a fixed place.
func TestWriteGzip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 100, 0xFFFF - 1, 0xFFFF, 0xFFFF + 1, storedGzipMax, storedGzipMax + 1, 3*0xFFFF + 7} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.IntN(16)) // compressible
		}
		var buf bytes.Buffer
		if err := writeGzip(&buf, data); err != nil {
			t.Fatal(err)
		}
		stream := bytes.Clone(buf.Bytes())
		if n <= storedGzipMax && (len(stream) != gzipHeadRoom+n+8 || !bytes.Equal(stream[gzipHeadRoom:gzipHeadRoom+n], data)) {
			t.Errorf("%d bytes: wrote %d bytes, want one stored block of %d", n, len(stream), gzipHeadRoom+n+8)
		}
		if n > storedGzipMax && len(stream) >= n {
			t.Errorf("%d bytes of 16 symbols: wrote %d bytes, want them compressed", n, len(stream))
		}
		zr, err := gzip.NewReader(&buf)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		back, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(back), err)
		}
		// RFC 1952: MTIME 0 means no time is recorded. Any other
		// value is one gunzip -N would give the unpacked file.
		if !zr.ModTime.IsZero() {
			t.Errorf("%d bytes: the gzip header records the time %v, want none (MTIME 0)", n, zr.ModTime)
		}
		// writeGzipAfter writes the same bytes as writeGzip, the data
		// after room for the headers.
		var want, got bytes.Buffer
		if err := writeGzip(&want, data); err != nil {
			t.Fatal(err)
		}
		if err := writeGzipAfter(&got, append(make([]byte, gzipHeadRoom), data...)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d bytes: writeGzipAfter wrote %d bytes unlike writeGzip's %d", n, got.Len(), want.Len())
		}
	}
}
