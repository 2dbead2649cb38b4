package profile

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
)

// storedGzipMax is the size up to which a pprof profile is written as a
// gzip stream of stored (uncompressed) blocks: for a small trace, even a
// stateless compressor costs more than decoding it, to save a few
// kilobytes.
const storedGzipMax = 32 << 10

// writeGzip writes data as a gzip stream that any gzip reader (pprof's
// included) reads: stored blocks up to storedGzipMax, beyond compressed by
// github.com/klauspost/compress's stateless mode, which keeps no state
// between writes (it allocates 3 KB, against compress/gzip's 1.2 MB of
// writer state to allocate and clear at gzip.BestSpeed). On the pprof
// profile of the objver4 capture (161 KB) it writes 43.5 KB in about half
// the time of compress/gzip's 39.4 KB at BestSpeed (go test -bench, n=5).
// Once the protocol buffer is written directly, this compression is the
// larger part of the pprof export (objver4: 0.43 ms against 0.28 ms of
// encoding and 2.3 ms of decoding the trace), yet the cheapest valid
// choice: klauspost's level 1 takes 0.60 ms and allocates 820 KB for
// 44.1 KB; Huffman-only coding takes 0.37 ms but writes 114.8 KB (2.6
// times; on counters-truncated 0.17 ms against 0.30 ms, for 41.0 KB
// against 20.5 KB); stored blocks would write the 161 KB (GOMAXPROCS=1 go
// test -bench).
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
	return writeStoredGzip(w, data)
}

// gzipHeadRoom is the room writeGzipAfter needs in front of the data: a
// gzip header and the header of one stored block.
const gzipHeadRoom = 10 + 5

// writeGzipAfter writes buf[gzipHeadRoom:] as writeGzip does. Up to
// storedGzipMax (one stored block) it fills the headers into the room in
// front and appends the trailer, in place of copying the data into a
// stream of its own: 8 bytes of spare capacity spare an allocation.
func writeGzipAfter(w io.Writer, buf []byte) error {
	data := buf[gzipHeadRoom:]
	if len(data) > storedGzipMax {
		return writeGzip(w, data)
	}
	// As writeStoredGzip writes it: the RFC 1952 header, then the block
	// marked last, its size and the size's complement.
	n := uint16(len(data))
	copy(buf, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255, 1, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)})
	buf = binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(data))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(data)))
	_, err := w.Write(buf)
	return err
}

// writeStoredGzip writes data as a gzip stream of stored blocks.
func writeStoredGzip(w io.Writer, data []byte) error {
	// RFC 1952 header: magic, deflate, no flags, no time, no extra flags,
	// unknown OS.
	out := make([]byte, 0, 10+len(data)+5*(len(data)/0xFFFF+1)+8)
	out = append(out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255)
	// RFC 1951 stored blocks of at most 65535 bytes, the last one marked.
	rest := data
	for {
		n := min(len(rest), 0xFFFF)
		final := byte(0)
		if n == len(rest) {
			final = 1
		}
		out = append(out, final)
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(n))
		out = append(out, rest[:n]...)
		rest = rest[n:]
		if final == 1 {
			break
		}
	}
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
	_, err := w.Write(out)
	return err
}
