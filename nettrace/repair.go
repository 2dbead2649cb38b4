package nettrace

import (
	"errors"
	"io"
)

// CompleteLength reads a trace and returns the length of its longest prefix
// made of whole blocks, and whether the stream already ends with its
// end-of-stream marker. A stream that merely stops early (a killed session,
// a file copied while recording) is not an error: n is where the last whole
// block ends, and cutting the file there and appending EndOfStream gives a
// trace every reader accepts. For damaged content err is the *FormatError
// and n still marks the last whole block before the damage.
func CompleteLength(r io.Reader) (n int64, complete bool, err error) {
	rd, err := NewReader(r)
	if err != nil {
		return 0, false, err
	}
	for {
		err := rd.nextBlock()
		if err == io.EOF {
			return rd.off, true, nil
		}
		if err == nil && rd.blkErr == nil {
			rd.blk, rd.pos = nil, 0 // skip the events: only blocks matter
			continue
		}
		if err == nil {
			err = rd.blkErr
		}
		var fe *FormatError
		if errors.As(err, &fe) && fe.Truncated() {
			return rd.goodEnd, false, nil
		}
		return rd.goodEnd, false, err
	}
}

// EndOfStream returns the bytes that end a NetPerf or NetTrace V4 stream
// (what the .NET runtime writes). Use EndOfStreamFor for V6 traces.
func EndOfStream() []byte { return []byte{tagNullReference} }

// EndOfStreamFor returns the end-of-stream marker for a trace with header h:
// one NullReference byte for NetPerf/NetTrace V4, an empty EndOfStream block
// for V6.
func EndOfStreamFor(h Header) []byte {
	if h.Version >= 6 {
		return []byte{0, 0, 0, v6EndOfStream}
	}
	return EndOfStream()
}
