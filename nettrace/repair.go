package nettrace

import (
	"bufio"
	"errors"
	"fmt"
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

// File is what RepairFile needs of a trace file; *os.File has it.
type File interface {
	io.ReadSeeker
	io.WriterAt
	Truncate(size int64) error
}

// RepairFile makes a trace file whose stream stopped early (or is damaged
// after some point) end cleanly: it cuts the file after the last complete
// block (CompleteLength) and appends the end-of-stream marker of a
// NetTrace V4 stream, what the runtime's sessions send. It returns the new
// length, or -1 when the file needed nothing; with damage, the error
// describes it and the file is still cut and terminated (a positive
// length). It leaves the file's offset at its end.
//
// limit, when not negative, is where damage that CompleteLength cannot see
// begins (an event a decoder refused): only the blocks that end before it
// are kept.
func RepairFile(f File, limit int64) (int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	n, complete, damage := CompleteLength(bufio.NewReaderSize(r, 1<<20))
	if damage != nil && n == 0 {
		return 0, damage
	}
	if complete {
		return -1, nil
	}
	if err := f.Truncate(n); err != nil {
		return 0, err
	}
	end := EndOfStream()
	if _, err := f.WriteAt(end, n); err != nil {
		return n, fmt.Errorf("the end-of-stream marker could not be written (%w); readers will report the file as cut after its last complete block", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return 0, err
	}
	return n + int64(len(end)), damage
}

// ReadStats decodes a whole trace and returns its Stats: what a file
// holds. A trace that does not end cleanly gives the stats up to the
// error, and the error.
func ReadStats(r io.Reader) (Stats, error) {
	rd, err := NewReader(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return Stats{}, err
	}
	var ev Event
	for {
		if err := rd.ReadEvent(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return rd.Stats(), err
		}
	}
}
