package nettrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// readBlock reads n bytes into r.buf, growing it no faster than data
// arrives, so a damaged length cannot make the reader allocate much more
// than the stream holds. On a short read it returns the bytes it got and a
// truncation error.
func (r *Reader) readBlock(n int, what, what2 string) ([]byte, error) {
	if r.small && r.off >= int64(r.cfg.BufferSize) {
		r.growBuffer()
	}
	// The buffer keeps fastMargin bytes of capacity past the block for
	// ReadEvent's fast path.
	if n+fastMargin <= cap(r.buf) {
		b := r.buf[:n]
		m, err := io.ReadFull(r.br, b)
		r.off += int64(m)
		if err != nil {
			return b[:m], r.ioErr(err, what+what2, n, m)
		}
		return b, nil
	}
	buf := r.buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), 1<<20))
		if cap(buf)-len(buf) < chunk+fastMargin {
			nb := make([]byte, len(buf), len(buf)+chunk+fastMargin)
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r.br, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		r.off += int64(m)
		if err != nil {
			r.buf = buf[:0]
			return buf, r.ioErr(err, what+what2, n, len(buf))
		}
	}
	r.buf = buf
	return buf, nil
}

// ---------------------------------------------------------------------------
// stream header

func (r *Reader) readStreamHeader() error {
	var m [8]byte
	if err := r.readSmall(m[:], "stream magic"); err != nil {
		return err
	}
	if string(m[:]) == magicNettrace {
		v, err := r.readU32("serialization header", "")
		if err != nil {
			return err
		}
		switch v {
		case 0:
			return r.readV6Header()
		case uint32(len(fastSerMagic)):
			var s [len(fastSerMagic)]byte
			if err := r.readSmall(s[:], "FastSerialization magic"); err != nil {
				return err
			}
			if string(s[:]) != fastSerMagic {
				return r.errAt(12, nil, "expected %q after the Nettrace magic, found %q", fastSerMagic, s[:])
			}
			r.hdr.Format = FormatNetTrace
			return r.readTraceObject()
		default:
			return r.errAt(8, nil, "expected 0 (V6) or 20 (V4) after the Nettrace magic, found %d", v)
		}
	}
	if binary.LittleEndian.Uint32(m[:4]) == uint32(len(fastSerMagic)) && string(m[4:]) == fastSerMagic[:4] {
		var s [len(fastSerMagic) - 4]byte
		if err := r.readSmall(s[:], "FastSerialization magic"); err != nil {
			return err
		}
		if string(s[:]) != fastSerMagic[4:] {
			return r.errAt(8, nil, "expected %q, found %q", fastSerMagic, append(m[4:], s[:]...))
		}
		r.hdr.Format = FormatNetPerf
		r.netperf = true
		return r.readTraceObject()
	}
	return r.errAt(0, nil, "not a nettrace or netperf stream: it starts with % x, expected \"Nettrace\" or a FastSerialization header; check that the file is an EventPipe trace (.nettrace/.netperf)", m[:])
}

// objectType reads a FastSerialization object header and its type and
// returns the type name and version. It returns io.EOF at the end tag.
func (r *Reader) readObjectHeader() (name string, version int32, err error) {
	start := r.off
	tag, err := r.br.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", 0, r.errAt(r.off, errTruncated, "expected the next block or the end-of-stream tag")
		}
		return "", 0, r.ioErr(err, "object tag", 1, 0)
	}
	r.off++
	if tag == tagNullReference {
		return "", 0, io.EOF
	}
	if tag != tagBeginObject && tag != tagBeginPrivateObject {
		return "", 0, r.errAt(start, nil, "expected an object start tag (4 or 5) or the end-of-stream tag (1), found %d", tag)
	}
	h := r.scratch[:14] // tag, null ref, version, min version, name length
	if err := r.readSmall(h, "object type header"); err != nil {
		return "", 0, err
	}
	if (h[0] != tagBeginObject && h[0] != tagBeginPrivateObject) || h[1] != tagNullReference {
		return "", 0, r.errAt(start+1, nil, "expected a type object (tags 4/5 then 1), found % x", h[:2])
	}
	version = int32(binary.LittleEndian.Uint32(h[2:]))
	n := int32(binary.LittleEndian.Uint32(h[10:]))
	if n < 0 || n > 256 {
		return "", 0, r.errAt(r.off-4, nil, "object type name length %d is out of range (0..256)", n)
	}
	// Known names fit the scratch buffer; a longer one (up to 256 bytes)
	// gets its own, rather than growing every Reader for it.
	var nb []byte
	if int(n) <= len(r.scratch) {
		nb = r.scratch[:n]
	} else {
		nb = make([]byte, n)
	}
	if err := r.readSmall(nb, "object type name"); err != nil {
		return "", 0, err
	}
	if err := r.expectEnd("type object"); err != nil {
		return "", 0, err
	}
	switch string(nb) { // known names without allocating
	case objEventBlock:
		return objEventBlock, version, nil
	case objMetadataBlock:
		return objMetadataBlock, version, nil
	case objStackBlock:
		return objStackBlock, version, nil
	case objSPBlock:
		return objSPBlock, version, nil
	}
	return string(nb), version, nil
}

func (r *Reader) expectEnd(what string) error {
	off := r.off
	b, err := r.readByte("end of ", what)
	if err != nil {
		return err
	}
	if b != tagEndObject {
		return r.errAt(off, nil, "expected the end-of-object tag (6) after the %s, found %d", what, b)
	}
	return nil
}

func (r *Reader) readTraceObject() error {
	start := r.off
	name, version, err := r.readObjectHeader()
	if err == io.EOF {
		return r.errAt(start, nil, "expected the Trace object, found the end-of-stream tag")
	}
	if err != nil {
		return err
	}
	switch {
	case name == objLegacyTrace:
		return fmt.Errorf("nettrace: NetPerf version %d (written by .NET Core 2.0) is an %w; only NetPerf V3 and NetTrace V4-V6 are decoded — record the trace again with .NET Core 2.1 or later", version, ErrUnsupportedFormat)
	case name != objTrace:
		return r.errAt(start, nil, "expected the Trace object first, found %q", name)
	case r.netperf && version != 3, !r.netperf && version != 4:
		// Every NetPerf V3 writes Trace version 3 and every NetTrace V4/V5
		// version 4 (V6 has its own header; NetPerf V1/V2 name the object
		// differently): another number is damage, not a format.
		kind, want := "NetTrace", int32(4)
		if r.netperf {
			kind, want = "NetPerf", 3
		}
		if version > want {
			// As TraceEvent, refuse what may be a newer writer.
			return fmt.Errorf("nettrace: the %s Trace object has version %d, newer than the %d every known writer puts (a damaged header, or a newer format): %w",
				kind, version, want, ErrUnsupportedFormat)
		}
		return r.errAt(start+3, nil, "the %s Trace object has version %d where every writer puts %d: the header is damaged", kind, version, want)
	}
	var b [traceObjectSize]byte
	if err := r.readSmall(b[:], "Trace object"); err != nil {
		return err
	}
	r.hdr.Version = int(version)
	r.parseTraceCommon(b[:])
	r.hdr.ProcessID = int(int32(binary.LittleEndian.Uint32(b[36:])))
	r.hdr.ProcessorCount = int(int32(binary.LittleEndian.Uint32(b[40:])))
	r.hdr.ExpectedCPUSamplingRate = int(int32(binary.LittleEndian.Uint32(b[44:])))
	if err := r.checkPointerSize(start); err != nil {
		return err
	}
	r.stats.Blocks++
	return r.expectEnd("Trace object")
}

// parseTraceCommon decodes the first 36 bytes shared by all trace headers.
func (r *Reader) parseTraceCommon(b []byte) {
	var f [8]int
	for i := range f {
		f[i] = int(int16(binary.LittleEndian.Uint16(b[i*2:])))
	}
	// year, month, day-of-week, day, hour, minute, second, millisecond;
	// clamp defensively: some writers produce out-of-range fields.
	ms := min(max(f[7], 0), 999)
	r.hdr.SyncTimeUTC = time.Date(f[0], time.Month(f[1]), f[3], f[4], f[5], f[6], ms*1e6, time.UTC)
	r.hdr.SyncTimeTicks = int64(binary.LittleEndian.Uint64(b[16:]))
	r.hdr.TickFrequency = int64(binary.LittleEndian.Uint64(b[24:]))
	r.hdr.PointerSize = int(int32(binary.LittleEndian.Uint32(b[32:])))
}

func (r *Reader) checkPointerSize(off int64) error {
	if r.hdr.PointerSize != 4 && r.hdr.PointerSize != 8 {
		return r.errAt(off, nil, "trace header gives pointer size %d; expected 4 or 8", r.hdr.PointerSize)
	}
	return nil
}

func (r *Reader) readV6Header() error {
	var b [8]byte
	if err := r.readSmall(b[:], "V6 version"); err != nil {
		return err
	}
	major := binary.LittleEndian.Uint32(b[:])
	minor := binary.LittleEndian.Uint32(b[4:])
	if major != 6 {
		if major > 6 {
			return fmt.Errorf("nettrace: NetTrace major version %d is an %w (this reader knows versions 3 to 6); update clrdiag", major, ErrUnsupportedFormat)
		}
		return r.errAt(12, nil, "V6-style header with major version %d; expected 6", major)
	}
	r.v6 = true
	r.hdr.Format = FormatNetTrace
	r.hdr.Version = 6
	r.hdr.MinorVersion = int(minor)
	r.threads = make(map[uint64]*Thread)
	start := r.off
	kind, body, err := r.readV6Block()
	if err != nil {
		return err
	}
	if kind != v6Trace {
		return r.errAt(start, nil, "expected the Trace block first, found block kind %d", kind)
	}
	return r.parseV6Trace(body, start+4)
}

func (r *Reader) parseV6Trace(b []byte, off int64) error {
	c := newCursor(b)
	if c.Take("", 36) != nil {
		r.parseTraceCommon(b)
	}
	n := c.U32("")
	if c.err() == nil && int64(n)*2 > int64(c.remaining()) {
		return r.errAt(off+36, nil, "trace block claims %d key/value pairs in %d bytes", n, c.remaining())
	}
	kv := make(map[string]string, min(n, 64)) // grows with what is parsed
	for i := uint32(0); i < n && c.err() == nil; i++ {
		k := c.str8()
		v := c.str8()
		kv[k] = v
	}
	if c.err() != nil {
		return r.errAt(off+int64(c.Offset()), c.err(), "trace block")
	}
	r.hdr.KeyValues = kv
	atoi := func(k string) int {
		var v int
		fmt.Sscan(kv[k], &v)
		return v
	}
	r.hdr.ProcessID = atoi("ProcessId")
	r.hdr.ProcessorCount = atoi("HardwareThreadCount")
	r.hdr.ExpectedCPUSamplingRate = atoi("ExpectedCPUSamplingRate")
	r.stats.Blocks++
	return r.checkPointerSize(off)
}
