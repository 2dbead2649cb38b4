package gcdump

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/internal/wire"
)

// FastSerialization is the object stream of PerfView's TraceEvent library
// that .gcdump files are written in. The pieces this package uses:
//
//	stream   = int32 20, "!FastSerialization.1", entry object, EndObject tag,
//	           forward-reference table, trailer
//	object   = [ForwardDefinition int32] BeginObject type-ref fields EndObject
//	type-ref = NullReference (the type of a type) | ObjectReference label |
//	           a type object: BeginObject NullReference int32 version,
//	           int32 minimum-reader-version, string full-name, EndObject
//	string   = int32 UTF-16 length (-1 = null), then each UTF-16 unit as
//	           1-3 bytes of UTF-8 (surrogates encoded one by one)
//	label    = int32 offset from the start of the stream
//	trailer  = int32 count, count labels (forward-reference table), then
//	           int32 label of that table, then int32 label of the previous
//	           int32 (the last 4 bytes of the stream)
//
// Integers are little-endian. Tagged values (fields added after an object's
// first version) start with a tag byte: Byte, Int16, Int32, Int64, String,
// SkipRegion (int32 forward reference to the end of an object), Blob
// (int32 size).
const fsSignature = "!FastSerialization.1"

// FastSerialization tags.
const (
	tagError byte = iota
	tagNull
	tagObjectRef
	tagForwardRef
	tagBeginObject
	tagBeginPrivateObject
	tagEndObject
	tagForwardDefinition
	tagByte
	tagInt16
	tagInt32
	tagInt64
	tagSkipRegion
	tagString
	tagBlob
)

// fsWriter writes a FastSerialization stream, tracking the offset for
// labels. The first error sticks; check err once at the end.
type fsWriter struct {
	w     *bufio.Writer
	pos   int64
	err   error
	types map[string]int64 // type name -> label of its definition
	fwd   []int64          // forward reference -> label
	buf   [8]byte
}

func newFSWriter(w io.Writer) *fsWriter {
	return &fsWriter{w: bufio.NewWriterSize(w, 256<<10), types: map[string]int64{}}
}

func (w *fsWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(p)
	w.pos += int64(n)
	w.err = err
}

func (w *fsWriter) u8(v byte) {
	if w.err != nil {
		return
	}
	w.err = w.w.WriteByte(v)
	w.pos++
}

func (w *fsWriter) i32(v int32) {
	binary.LittleEndian.PutUint32(w.buf[:4], uint32(v))
	w.write(w.buf[:4])
}

func (w *fsWriter) i64(v int64) {
	binary.LittleEndian.PutUint64(w.buf[:8], uint64(v))
	w.write(w.buf[:8])
}

func (w *fsWriter) f32(v float32) { w.i32(int32(math.Float32bits(v))) }

func (w *fsWriter) label(v int64) {
	if v > math.MaxInt32 && w.err == nil {
		w.err = fmt.Errorf("%w: the file would pass 2 GiB, the limit of the format's 32-bit offsets", ErrTooLarge)
	}
	w.i32(int32(v))
}

// str writes a string the way TraceEvent does: the UTF-16 length, then each
// UTF-16 code unit as UTF-8.
func (w *fsWriter) str(s string) {
	units := utf16Len(s)
	w.i32(int32(units))
	if units == len(s) { // ASCII
		if w.err == nil {
			n, err := w.w.WriteString(s)
			w.pos += int64(n)
			w.err = err
		}
		return
	}
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			w.unit(uint16(hi))
			w.unit(uint16(lo))
			continue
		}
		w.unit(uint16(r))
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func (w *fsWriter) unit(c uint16) {
	switch {
	case c < 0x80:
		w.u8(byte(c))
	case c < 0x800:
		w.u8(0xC0 | byte(c>>6))
		w.u8(0x80 | byte(c&0x3F))
	default:
		w.u8(0xE0 | byte(c>>12))
		w.u8(0x80 | byte(c>>6&0x3F))
		w.u8(0x80 | byte(c&0x3F))
	}
}

// nullStr writes a null string.
func (w *fsWriter) nullStr() { w.i32(-1) }

// optStr writes s, or a null string for "".
func (w *fsWriter) optStr(s string) {
	if s == "" {
		w.nullStr()
		return
	}
	w.str(s)
}

// begin starts an object of the named type: BeginObject, then the type,
// defined the first time and referenced by label afterwards.
func (w *fsWriter) begin(typeName string, version, minReader int32) {
	w.u8(tagBeginObject)
	if l, ok := w.types[typeName]; ok {
		w.u8(tagObjectRef)
		w.label(l)
		return
	}
	w.types[typeName] = w.pos
	w.u8(tagBeginObject)
	w.u8(tagNull)
	w.i32(version)
	w.i32(minReader)
	w.str(typeName)
	w.u8(tagEndObject)
}

func (w *fsWriter) end() { w.u8(tagEndObject) }

// forward returns a new forward reference, to be defined later.
func (w *fsWriter) forward() int32 {
	w.fwd = append(w.fwd, -1)
	return int32(len(w.fwd) - 1)
}

func (w *fsWriter) define(ref int32) { w.fwd[ref] = w.pos }

// trailer ends the stream: the unbalanced EndObject, the forward-reference
// table and the trailer labels.
func (w *fsWriter) trailer() error {
	w.u8(tagEndObject)
	table := w.pos
	w.i32(int32(len(w.fwd)))
	for _, l := range w.fwd {
		w.label(l)
	}
	tr := w.pos
	w.label(table)
	w.label(tr)
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// FormatError reports a .gcdump stream that does not follow the format.
type FormatError struct {
	// Offset is the byte offset in the file where the problem is.
	Offset int64
	// What was being read.
	What string
	Err  error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gcdump: offset %d (%#x): %s: %v", e.Offset, e.Offset, e.What, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Errors wrapped by FormatError.
var (
	// ErrNotGCDump: the stream does not start with the FastSerialization
	// signature.
	ErrNotGCDump = errors.New("not a .gcdump file (no !FastSerialization.1 signature)")
	// ErrTruncated: the stream ends before what it announces.
	ErrTruncated = errors.New("unexpected end of file (truncated?)")
	// ErrCorrupt: a value is impossible (a bad tag, a negative length, an
	// index out of range).
	ErrCorrupt = errors.New("corrupt data")
	// ErrUnsupported: a valid file using a part of the format this package
	// does not read (for example GCHeapDump versions before 8).
	ErrUnsupported = errors.New("unsupported format version")
)

// fsReader reads a FastSerialization stream from an io.ReaderAt: a window
// of the file, read ahead and moved for labels, whose values are read by
// the module's little-endian cursor (wire.Cursor). Every read first makes
// its bytes available in the window (or fails with the file's offset), so
// the cursor itself never runs short; a failure of the reader is recorded
// in the cursor too, so that every later read returns zero.
type fsReader struct {
	r    io.ReaderAt
	size int64
	c    wire.Cursor // over buf; c.Offset() is the position in the window
	buf  []byte      // the window's storage
	bpos int64       // file offset of the window's first byte
	err  error       // first error, sticky
	what string
	fwd  []int64           // forward-reference table, read lazily
	objs map[int64]*fsType // type objects by label
}

// fsType is a type object: the name and versions of a serialized type.
type fsType struct {
	name      string
	version   int32
	minReader int32
}

func newFSReader(r io.ReaderAt, size int64) *fsReader {
	return &fsReader{r: r, size: size, buf: make([]byte, 0, 64<<10), objs: map[int64]*fsType{}}
}

// pos returns the current file offset.
func (r *fsReader) pos() int64 { return r.bpos + int64(r.c.Offset()) }

func (r *fsReader) fail(err error, format string, args ...any) {
	if r.err == nil {
		r.setErr(&FormatError{Offset: r.pos(), What: fmt.Sprintf(format, args...), Err: err})
	}
}

// setErr records the reader's first error, in the cursor too.
func (r *fsReader) setErr(err error) {
	if r.err == nil {
		r.err = err
		r.c.Fail(r.what, err)
	}
}

// seek moves to a file offset.
func (r *fsReader) seek(off int64) {
	if r.err != nil {
		return
	}
	if off < 0 || off > r.size {
		r.fail(ErrCorrupt, "offset %d outside the file (%d bytes)", off, r.size)
		return
	}
	if off >= r.bpos && off <= r.bpos+int64(len(r.c.Bytes())) {
		r.c.Seek("", int(off-r.bpos))
		return
	}
	r.bpos, r.c = off, wire.NewCursor(r.buf[:0])
}

// need makes n bytes available to the cursor, or fails.
func (r *fsReader) need(n int) bool {
	return r.c.Remaining() >= n || r.fill(n)
}

// fill moves the window to the current position with at least n bytes in
// it, or fails.
func (r *fsReader) fill(n int) bool {
	if r.err != nil {
		return false
	}
	if r.pos()+int64(n) > r.size {
		r.fail(ErrTruncated, "reading %d bytes of %s", n, r.what)
		return false
	}
	r.bpos = r.pos()
	want := max(n, 64<<10)
	if int64(want) > r.size-r.bpos {
		want = int(r.size - r.bpos)
	}
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	got, err := r.r.ReadAt(r.buf[:want], r.bpos)
	r.c = wire.NewCursor(r.buf[:got])
	if got < n {
		if err == nil || err == io.EOF {
			err = ErrTruncated
		}
		r.fail(err, "reading %s", r.what)
		return false
	}
	return true
}

func (r *fsReader) u8() byte {
	if r.c.Remaining() < 1 && !r.fill(1) {
		return 0
	}
	return r.c.U8("")
}

func (r *fsReader) i32() int32 {
	if r.c.Remaining() < 4 && !r.fill(4) {
		return 0
	}
	return int32(r.c.U32(""))
}

func (r *fsReader) i64() int64 {
	if r.c.Remaining() < 8 && !r.fill(8) {
		return 0
	}
	return int64(r.c.U64(""))
}

func (r *fsReader) f32() float32 {
	if r.c.Remaining() < 4 && !r.fill(4) {
		return 0
	}
	return r.c.F32("")
}

// u32s reads len(dst) little-endian uint32 values, a window at a time
// (the node labels: one read per node).
func (r *fsReader) u32s(dst []uint32) {
	for len(dst) > 0 && r.need(4) {
		k := min(len(dst), r.c.Remaining()/4)
		for i := range dst[:k] {
			dst[i] = r.c.U32("")
		}
		dst = dst[k:]
	}
}

// u64s reads len(dst) little-endian uint64 values, a window at a time
// (the node addresses).
func (r *fsReader) u64s(dst []uint64) {
	for len(dst) > 0 && r.need(8) {
		k := min(len(dst), r.c.Remaining()/8)
		for i := range dst[:k] {
			dst[i] = r.c.U64("")
		}
		dst = dst[k:]
	}
}

// bytes returns the next n bytes; the slice is valid until the next read.
func (r *fsReader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	return r.c.Take("", n)
}

// count reads an int32 count of elements of at least elemSize bytes each
// and checks that the file can hold them.
func (r *fsReader) count(elemSize int64, what string) int {
	n := r.i32()
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.fail(ErrCorrupt, "%s count %d", what, n)
		return 0
	}
	if int64(n)*elemSize > r.size-r.pos() {
		r.fail(ErrTruncated, "%d %ss do not fit in the %d bytes left", n, what, r.size-r.pos())
		return 0
	}
	return int(n)
}

// str reads a string; ok is false for a null string.
func (r *fsReader) str() (string, bool) {
	n := r.i32()
	if r.err != nil {
		return "", false
	}
	if n == -1 {
		return "", false
	}
	if n < -1 {
		r.fail(ErrCorrupt, "string length %d", n)
		return "", false
	}
	if int64(n) > r.size-r.pos() {
		r.fail(ErrTruncated, "string of %d characters with %d bytes left", n, r.size-r.pos())
		return "", false
	}
	if !r.need(int(n)) { // at least one byte per unit; ASCII fast path
		return "", false
	}
	p := r.c.Bytes()[r.c.Offset():][:n]
	ascii := true
	for _, c := range p {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		r.c.Take("", int(n))
		return string(p), true
	}
	units := make([]uint16, 0, n)
	for range n {
		b := r.u8()
		var c uint16
		switch {
		case b < 0x80:
			c = uint16(b)
		case b < 0xE0:
			c = uint16(b&0x1F)<<6 | uint16(r.u8()&0x3F)
		default:
			c = uint16(b&0x0F)<<12 | uint16(r.u8()&0x3F)<<6
			c |= uint16(r.u8() & 0x3F)
		}
		units = append(units, c)
	}
	if r.err != nil {
		return "", false
	}
	return string(utf16.Decode(units)), true
}

func (r *fsReader) tag() byte { return r.u8() }

// unread steps back one byte (after peeking at a tag).
func (r *fsReader) unread() {
	if r.err == nil {
		r.c.Seek("", r.c.Offset()-1)
	}
}

// expect reads a tag and fails if it is not want.
func (r *fsReader) expect(want byte, what string) bool {
	t := r.tag()
	if r.err != nil {
		return false
	}
	if t != want {
		r.unread()
		r.fail(ErrCorrupt, "%s: tag %d where %d was expected", what, t, want)
		return false
	}
	return true
}

// typeRef reads the type of an object: a type object defined here, or a
// reference to one defined earlier.
func (r *fsReader) typeRef() *fsType {
	at := r.pos()
	switch t := r.tag(); t {
	case tagObjectRef:
		l := int64(r.i32())
		if ty, ok := r.objs[l]; ok {
			return ty
		}
		// A reference to a type object not read yet: read it there (a
		// definition, not another reference, so this cannot loop).
		back := r.pos()
		r.seek(l)
		var ty *fsType
		if r.tag() == tagBeginObject {
			r.unread()
			ty = r.typeRef()
		} else if r.err == nil {
			r.fail(ErrCorrupt, "type reference to offset %d, which holds no type", l)
		}
		r.seek(back)
		if ty != nil {
			r.objs[l] = ty
		}
		return ty
	case tagBeginObject:
		if !r.expect(tagNull, "type of a type object") {
			return nil
		}
		ty := &fsType{version: r.i32(), minReader: r.i32()}
		name, ok := r.str()
		if r.err == nil && !ok {
			r.fail(ErrCorrupt, "type object without a name")
		}
		ty.name = name
		if !r.expect(tagEndObject, "end of type object "+name) {
			return nil
		}
		r.objs[at] = ty
		return ty
	default:
		if r.err == nil {
			r.unread()
			r.fail(ErrCorrupt, "tag %d where a type was expected", t)
		}
		return nil
	}
}

// beginObject reads the start of an object (possibly null) and returns its
// type; nil with no error means a null reference.
func (r *fsReader) beginObject(what string) *fsType {
	r.what = what
	t := r.tag()
	switch t {
	case tagNull:
		return nil
	case tagForwardDefinition:
		r.i32()
		t = r.tag()
	}
	if r.err != nil {
		return nil
	}
	if t != tagBeginObject && t != tagBeginPrivateObject {
		r.unread()
		r.fail(ErrCorrupt, "tag %d where %s (an object) was expected", t, what)
		return nil
	}
	return r.typeRef()
}

// endObject skips what a newer writer added to an object after the fields
// this reader knows, up to the object's EndObject tag, as TraceEvent does.
func (r *fsReader) endObject(ty *fsType) {
	nesting := 0
	for r.err == nil {
		switch t := r.tag(); t {
		case tagByte:
			r.u8()
		case tagInt16:
			r.bytes(2)
		case tagInt32:
			r.i32()
		case tagInt64:
			r.i64()
		case tagString:
			r.str()
		case tagNull:
		case tagBeginObject, tagBeginPrivateObject:
			nesting++
		case tagForwardDefinition, tagForwardRef:
			r.i32()
		case tagObjectRef:
			r.i32()
		case tagSkipRegion:
			at := r.pos()
			end := r.resolve(r.i32())
			if r.err == nil && end <= at {
				r.fail(ErrCorrupt, "skip region ends at %d, before it starts", end)
				return
			}
			r.seek(end)
		case tagBlob:
			n := r.i32()
			if n < 0 || int64(n) > r.size-r.pos() {
				r.fail(ErrCorrupt, "blob size %d", n)
				return
			}
			r.seek(r.pos() + int64(n))
		case tagEndObject:
			nesting--
			if nesting < 0 {
				return
			}
		default:
			if r.err == nil {
				r.unread()
				r.fail(ErrCorrupt, "tag %d while looking for the end of %s", t, ty.name)
			}
		}
	}
}

// resolve returns the label of a forward reference from the table at the
// end of the stream.
func (r *fsReader) resolve(ref int32) int64 {
	if r.err != nil {
		return 0
	}
	if r.fwd == nil {
		back := r.pos()
		if r.size < 8 {
			r.fail(ErrTruncated, "no trailer")
			return 0
		}
		r.seek(r.size - 4)
		r.what = "trailer"
		r.seek(int64(r.i32()))
		r.seek(int64(r.i32()))
		n := r.count(4, "forward reference")
		r.fwd = make([]int64, n)
		for i := range r.fwd {
			r.fwd[i] = int64(r.i32())
		}
		r.seek(back)
		if r.err != nil {
			return 0
		}
	}
	if ref < 0 || int(ref) >= len(r.fwd) {
		r.fail(ErrCorrupt, "forward reference %d of %d", ref, len(r.fwd))
		return 0
	}
	return r.fwd[ref]
}

// checkTrailer checks the end of the stream after the entry object: the
// unbalanced EndObject tag, the forward-reference table and the trailer
// labels, which a file cut short lacks.
func (r *fsReader) checkTrailer() {
	r.what = "end of the object stream"
	if !r.expect(tagEndObject, "end of the object stream") {
		return
	}
	table := r.pos()
	n := r.count(4, "forward reference")
	r.seek(r.pos() + 4*int64(n))
	tr := r.pos()
	if r.err != nil {
		return
	}
	if r.size-tr != 8 {
		r.fail(ErrCorrupt, "%d bytes after the forward-reference table where the 8-byte trailer was expected", r.size-tr)
		return
	}
	if l := int64(r.i32()); l != table {
		r.fail(ErrCorrupt, "trailer points at %d, the table is at %d", l, table)
	}
	if l := int64(r.i32()); r.err == nil && l != tr {
		r.fail(ErrCorrupt, "last label %d, the trailer is at %d", l, tr)
	}
}

// readSignature checks the stream's signature.
func (r *fsReader) readSignature() error {
	r.what = "signature"
	if r.size < 4+int64(len(fsSignature)) {
		return &FormatError{What: "signature", Err: ErrNotGCDump}
	}
	n := r.i32()
	sig := r.bytes(len(fsSignature))
	if r.err != nil {
		return r.err
	}
	if n != int32(len(fsSignature)) || string(sig) != fsSignature {
		if strings.HasPrefix(string(sig), "Nettrace") || n == 0x7474654e {
			return &FormatError{What: "signature", Err: fmt.Errorf("%w: this is a nettrace file", ErrNotGCDump)}
		}
		return &FormatError{What: "signature", Err: ErrNotGCDump}
	}
	return nil
}
