package weighted

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
)

// storedGzipMax is the size up to which a pprof profile is written as a
// gzip stream of one stored (uncompressed) block, the most one stored
// block holds, framed in place by writeGzipAfter. Compressing such a
// profile saves at most tens of kilobytes at a cost that is not small
// beside decoding the trace it came from (BenchmarkPprofEncoding/gzip
// measures it), where framing it in place costs a CRC.
const storedGzipMax = 0xFFFF

// writeGzip writes data as a gzip stream that any gzip reader (pprof's
// included) reads: stored blocks up to storedGzipMax, beyond compressed by
// github.com/klauspost/compress's stateless mode, which keeps no state
// between writes (a few kilobytes, against the megabyte of writer state
// compress/gzip allocates and clears at gzip.BestSpeed), and it compresses
// nearly as well in about half the time. Once the protocol buffer is
// written directly, this compression is the larger part of the pprof
// export, yet the cheapest valid choice: klauspost's level 1 is slower and
// allocates far more for the same size; Huffman-only coding is a little
// faster but writes more than twice the bytes; stored blocks would write
// the whole protocol buffer. BenchmarkPprofEncoding measures the step;
// the figures are in the history of this file.
func writeGzip(w io.Writer, data []byte) error {
	if len(data) > storedGzipMax {
		zw, err := gzip.NewWriterLevel(w, gzip.StatelessCompression)
		if err != nil {
			return err
		}
		// No time in the header (MTIME 0), as the stored stream has:
		// klauspost's writer stores the zero time.Time's Unix seconds
		// cut to 32 bits (a date in 2042) unless told the epoch.
		zw.ModTime = time.Unix(0, 0)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		return zw.Close()
	}
	return writeGzipAfter(w, append(make([]byte, gzipHeadRoom, gzipHeadRoom+len(data)+8), data...))
}

// gzipHeadRoom is the room writeGzipAfter needs in front of the data: a
// gzip header and the header of one stored block.
const gzipHeadRoom = 10 + 5

// writeGzipAfter writes buf[gzipHeadRoom:] as writeGzip does. Up to
// storedGzipMax (one stored block) it fills the headers into the room in
// front and appends the trailer, in place of copying the data into a
// stream of its own: 8 bytes of spare capacity spare an allocation.
// writeGzip, given data without the room, frames a copy.
func writeGzipAfter(w io.Writer, buf []byte) error {
	data := buf[gzipHeadRoom:]
	if len(data) > storedGzipMax {
		return writeGzip(w, data)
	}
	// The RFC 1952 header (magic, deflate, no flags, no time, no extra
	// flags, unknown OS), then the RFC 1951 stored block marked last, its
	// size and the size's complement; after the data the CRC-32 and size.
	n := uint16(len(data))
	copy(buf, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 1, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)})
	buf = binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(data))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(data)))
	_, err := w.Write(buf)
	return err
}
