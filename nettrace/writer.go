package nettrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"
	"unicode/utf16"
)

// WriterConfig describes the trace a Writer produces. The zero value writes
// a NetTrace V4 stream with 8-byte pointers, compressed headers and a 1 GHz
// clock synchronised at the Unix epoch.
type WriterConfig struct {
	// Version is 4 (default) or 6.
	Version int
	// PointerSize is 4 or 8 (default).
	PointerSize int
	// ProcessID, ProcessorCount and ExpectedCPUSamplingRate go to the
	// trace header.
	ProcessID               int
	ProcessorCount          int
	ExpectedCPUSamplingRate int
	// SyncTimeUTC/SyncTimeTicks/TickFrequency define the clock (default
	// frequency 1e9, i.e. nanosecond ticks).
	SyncTimeUTC   time.Time
	SyncTimeTicks int64
	TickFrequency int64
	// KeyValues are extra V6 trace-block pairs.
	KeyValues map[string]string
	// Uncompressed writes fixed-size event headers instead of compressed
	// ones.
	Uncompressed bool
	// MaxEventBlockSize is the size at which the pending event block is
	// written (default 64 KiB).
	MaxEventBlockSize int
}

// Writer produces a nettrace stream: used to build test streams, to
// round-trip traces and by fake diagnostic servers. Metadata, stacks,
// sequence points and the V6 tables are written as their own blocks as soon
// as they are added; events are collected into an event block that is
// written when it is full, when another block is written, on Flush and on
// Close. A Writer is not safe for concurrent use.
type Writer struct {
	bw  *bufio.Writer
	off int64
	cfg WriterConfig
	err error

	ev      []byte // pending event block body (after the header)
	evCount int
	minTS   int64
	maxTS   int64
	st      evState
	meta    map[uint32]bool
}

// ErrWriterClosed is returned by writes after Close.
var ErrWriterClosed = errors.New("nettrace: writer closed")

// NewWriter writes the stream header and trace block to w.
func NewWriter(w io.Writer, cfg WriterConfig) (*Writer, error) {
	if cfg.Version == 0 {
		cfg.Version = 4
	}
	if cfg.Version != 4 && cfg.Version != 6 {
		return nil, fmt.Errorf("nettrace: writer: version %d is not supported (use 4 or 6)", cfg.Version)
	}
	if cfg.PointerSize == 0 {
		cfg.PointerSize = 8
	}
	if cfg.PointerSize != 4 && cfg.PointerSize != 8 {
		return nil, fmt.Errorf("nettrace: writer: pointer size %d is not 4 or 8", cfg.PointerSize)
	}
	if cfg.TickFrequency == 0 {
		cfg.TickFrequency = 1e9
	}
	if cfg.SyncTimeUTC.IsZero() {
		cfg.SyncTimeUTC = time.Unix(0, 0).UTC()
	}
	if cfg.MaxEventBlockSize <= 0 {
		cfg.MaxEventBlockSize = 64 << 10
	}
	wr := &Writer{bw: bufio.NewWriterSize(w, 64<<10), cfg: cfg, meta: make(map[uint32]bool)}
	wr.writeHeader()
	return wr, wr.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(b)
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("nettrace: write: %w", err)
	}
}

func (w *Writer) u8(v byte) { w.write([]byte{v}) }
func (w *Writer) u32(v uint32) {
	w.write(binary.LittleEndian.AppendUint32(nil, v))
}

func (w *Writer) traceCommon() []byte {
	t := w.cfg.SyncTimeUTC.UTC()
	b := make([]byte, 0, 48)
	for _, v := range []int{t.Year(), int(t.Month()), int(t.Weekday()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond() / 1e6} {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(w.cfg.SyncTimeTicks))
	b = binary.LittleEndian.AppendUint64(b, uint64(w.cfg.TickFrequency))
	b = binary.LittleEndian.AppendUint32(b, uint32(w.cfg.PointerSize))
	return b
}

func (w *Writer) writeHeader() {
	w.write([]byte(magicNettrace))
	if w.cfg.Version == 6 {
		w.u32(0)
		w.u32(6)
		w.u32(0)
		b := w.traceCommon()
		kv := map[string]string{
			"ProcessId":               strconv.Itoa(w.cfg.ProcessID),
			"HardwareThreadCount":     strconv.Itoa(w.cfg.ProcessorCount),
			"ExpectedCPUSamplingRate": strconv.Itoa(w.cfg.ExpectedCPUSamplingRate),
		}
		for k, v := range w.cfg.KeyValues {
			kv[k] = v
		}
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
		for _, k := range keys {
			b = appendStr8(b, k)
			b = appendStr8(b, kv[k])
		}
		w.blockV6(v6Trace, b)
		return
	}
	w.u32(uint32(len(fastSerMagic)))
	w.write([]byte(fastSerMagic))
	w.objectHeader(objTrace, 4)
	b := w.traceCommon()
	b = binary.LittleEndian.AppendUint32(b, uint32(w.cfg.ProcessID))
	b = binary.LittleEndian.AppendUint32(b, uint32(w.cfg.ProcessorCount))
	b = binary.LittleEndian.AppendUint32(b, uint32(w.cfg.ExpectedCPUSamplingRate))
	w.write(b)
	w.u8(tagEndObject)
}

func (w *Writer) objectHeader(name string, version uint32) {
	w.write([]byte{tagBeginPrivateObject, tagBeginPrivateObject, tagNullReference})
	w.u32(version)
	w.u32(version)
	w.u32(uint32(len(name)))
	w.write([]byte(name))
	w.u8(tagEndObject)
}

// blockV4 writes a FastSerialization block object.
func (w *Writer) blockV4(name string, body []byte) {
	w.objectHeader(name, 2)
	w.u32(uint32(len(body)))
	if pad := (4 - w.off%4) % 4; pad > 0 {
		w.write(make([]byte, pad))
	}
	w.write(body)
	w.u8(tagEndObject)
}

func (w *Writer) blockV6(kind int, body []byte) {
	if len(body) > 0xFFFFFF && w.err == nil {
		w.err = fmt.Errorf("nettrace: writer: V6 block of %d bytes exceeds 16 MiB", len(body))
		return
	}
	w.u32(uint32(kind)<<24 | uint32(len(body)))
	w.write(body)
}

func (w *Writer) check() error {
	if w.err != nil {
		return w.err
	}
	if w.bw == nil {
		return ErrWriterClosed
	}
	return nil
}

// AddMetadata writes a metadata record (md.ID must be non-zero and, before
// V6, unique). Fields that the V4 field list cannot express (arrays) are
// written as a V5 V2Params tag; a non-zero Opcode as a V5 OpCode tag.
func (w *Writer) AddMetadata(md *Metadata) error {
	if err := w.check(); err != nil {
		return err
	}
	if md.ID == 0 {
		return errors.New("nettrace: writer: metadata id 0 is reserved")
	}
	if w.cfg.Version < 6 && w.meta[md.ID] {
		return fmt.Errorf("nettrace: writer: metadata id %d already defined", md.ID)
	}
	w.meta[md.ID] = true
	if err := w.Flush(); err != nil {
		return err
	}
	if w.cfg.Version == 6 {
		row := appendMetadataV6(nil, md)
		if len(row) > 0xFFFF {
			return fmt.Errorf("nettrace: writer: metadata row of %d bytes exceeds 65535", len(row))
		}
		b := []byte{0, 0} // header size 0
		b = binary.LittleEndian.AppendUint16(b, uint16(len(row)))
		b = append(b, row...)
		w.blockV6(v6Metadata, b)
		return w.err
	}
	payload := appendMetadataV4(nil, md)
	saved := w.st
	w.st = evState{}
	body := w.blockHeader(0, 0)
	body = w.appendBlob(body, &Event{Payload: payload}, 0)
	w.st = saved
	w.blockV4(objMetadataBlock, body)
	return w.err
}

func (w *Writer) blockHeader(minTS, maxTS int64) []byte {
	b := make([]byte, 0, 64)
	b = binary.LittleEndian.AppendUint16(b, blockHeaderMinSize)
	var flags uint16
	if !w.cfg.Uncompressed {
		flags = blockFlagCompressed
	}
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(minTS))
	b = binary.LittleEndian.AppendUint64(b, uint64(maxTS))
	return b
}

// WriteEvent adds an event to the pending event block. The event's metadata
// id comes from ev.Metadata.ID. In V6 traces ev.ThreadIndex and
// ev.CaptureThreadIndex are written (the thread table maps them to OS ids)
// and ev.LabelListID replaces the activity ids.
func (w *Writer) WriteEvent(ev *Event) error {
	if err := w.check(); err != nil {
		return err
	}
	if ev.Metadata == nil || ev.Metadata.ID == 0 {
		return errors.New("nettrace: writer: event without metadata")
	}
	if w.evCount == 0 {
		w.st = evState{}
		w.minTS, w.maxTS = ev.Timestamp, ev.Timestamp
	}
	w.minTS = min(w.minTS, ev.Timestamp)
	w.maxTS = max(w.maxTS, ev.Timestamp)
	w.ev = w.appendBlob(w.ev, ev, ev.Metadata.ID)
	w.evCount++
	if len(w.ev) >= w.cfg.MaxEventBlockSize {
		return w.Flush()
	}
	return w.err
}

// appendBlob encodes one event or metadata blob.
func (w *Writer) appendBlob(b []byte, ev *Event, metaID uint32) []byte {
	thread, capThread := ev.ThreadID, ev.CaptureThreadID
	if w.cfg.Version == 6 {
		thread, capThread = ev.ThreadIndex, ev.CaptureThreadIndex
	}
	if w.cfg.Uncompressed {
		start := len(b)
		b = binary.LittleEndian.AppendUint32(b, 0) // size, patched below
		mid := metaID
		if ev.IsSorted {
			mid |= 1 << 31
		}
		b = binary.LittleEndian.AppendUint32(b, mid)
		b = binary.LittleEndian.AppendUint32(b, ev.SequenceNumber)
		b = binary.LittleEndian.AppendUint64(b, thread)
		b = binary.LittleEndian.AppendUint64(b, capThread)
		b = binary.LittleEndian.AppendUint32(b, ev.ProcessorNumber)
		b = binary.LittleEndian.AppendUint32(b, ev.StackID)
		b = binary.LittleEndian.AppendUint64(b, uint64(ev.Timestamp))
		if w.cfg.Version == 6 {
			b = binary.LittleEndian.AppendUint32(b, ev.LabelListID)
		} else {
			b = append(b, ev.ActivityID[:]...)
			b = append(b, ev.RelatedActivityID[:]...)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ev.Payload)))
		b = append(b, ev.Payload...)
		for (len(b)-start)%4 != 0 {
			b = append(b, 0)
		}
		binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
		return b
	}
	st := &w.st
	var flags byte
	fpos := len(b)
	b = append(b, 0)
	if metaID != st.metaID {
		flags |= flagMetadataID
		b = binary.AppendUvarint(b, uint64(metaID))
		st.metaID = metaID
	}
	if metaID != 0 {
		if capThread != st.capThread || ev.ProcessorNumber != st.proc || ev.SequenceNumber != st.seq+1 {
			flags |= flagCaptureThread
			b = binary.AppendUvarint(b, uint64(ev.SequenceNumber-st.seq-1))
			b = binary.AppendUvarint(b, capThread)
			b = binary.AppendUvarint(b, uint64(ev.ProcessorNumber))
			st.capThread, st.proc = capThread, ev.ProcessorNumber
		}
		st.seq = ev.SequenceNumber
	}
	if thread != st.thread {
		flags |= flagThreadID
		b = binary.AppendUvarint(b, thread)
		st.thread = thread
	}
	if ev.StackID != st.stackID {
		flags |= flagStackID
		b = binary.AppendUvarint(b, uint64(ev.StackID))
		st.stackID = ev.StackID
	}
	b = binary.AppendUvarint(b, uint64(ev.Timestamp)-st.ts)
	st.ts = uint64(ev.Timestamp)
	if w.cfg.Version == 6 {
		if ev.LabelListID != st.label {
			flags |= flagActivityID
			b = binary.AppendUvarint(b, uint64(ev.LabelListID))
			st.label = ev.LabelListID
		}
	} else {
		if ev.ActivityID != st.act {
			flags |= flagActivityID
			b = append(b, ev.ActivityID[:]...)
			st.act = ev.ActivityID
		}
		if ev.RelatedActivityID != st.rel {
			flags |= flagRelatedActivity
			b = append(b, ev.RelatedActivityID[:]...)
			st.rel = ev.RelatedActivityID
		}
	}
	if ev.IsSorted {
		flags |= flagSorted
	}
	if uint32(len(ev.Payload)) != st.size {
		flags |= flagPayloadSize
		b = binary.AppendUvarint(b, uint64(len(ev.Payload)))
		st.size = uint32(len(ev.Payload))
	}
	b[fpos] = flags
	return append(b, ev.Payload...)
}

// Flush writes the pending event block (if any) and flushes buffered output.
func (w *Writer) Flush() error {
	if err := w.check(); err != nil {
		return err
	}
	if w.evCount > 0 {
		body := append(w.blockHeader(w.minTS, w.maxTS), w.ev...)
		if w.cfg.Version == 6 {
			w.blockV6(v6Event, body)
		} else {
			w.blockV4(objEventBlock, body)
		}
		w.ev = w.ev[:0]
		w.evCount = 0
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("nettrace: write: %w", err)
		}
	}
	return w.err
}

// WriteStacks writes a stack block defining ids firstID, firstID+1, ... for
// the given stacks (addresses leaf first). Stack ids are valid until the
// next sequence point.
func (w *Writer) WriteStacks(firstID uint32, stacks [][]uint64) error {
	if err := w.Flush(); err != nil {
		return err
	}
	b := binary.LittleEndian.AppendUint32(nil, firstID)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(stacks)))
	for _, s := range stacks {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)*w.cfg.PointerSize))
		for _, a := range s {
			if w.cfg.PointerSize == 4 {
				b = binary.LittleEndian.AppendUint32(b, uint32(a))
			} else {
				b = binary.LittleEndian.AppendUint64(b, a)
			}
		}
	}
	if w.cfg.Version == 6 {
		w.blockV6(v6Stack, b)
	} else {
		w.blockV4(objStackBlock, b)
	}
	return w.err
}

// ThreadSeq is a capture thread (V4: OS thread id; V6: thread index) and the
// last sequence number written for it.
type ThreadSeq struct {
	Thread         uint64
	SequenceNumber uint32
}

// SequencePoint options for V6 (ignored by V4).
const (
	// FlushThreads clears the thread table after the sequence point.
	FlushThreads = spFlushThreads
	// FlushMetadata clears the metadata table: ids may be reused afterwards.
	FlushMetadata = spFlushMetadata
)

// WriteSequencePoint writes a sequence point with the last sequence number
// of each capture thread. flags is FlushThreads|FlushMetadata or 0 (V6
// only).
func (w *Writer) WriteSequencePoint(ts int64, threads []ThreadSeq, flags uint32) error {
	if err := w.Flush(); err != nil {
		return err
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(ts))
	if w.cfg.Version == 6 {
		b = binary.LittleEndian.AppendUint32(b, flags)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(threads)))
		for _, t := range threads {
			b = binary.AppendUvarint(b, t.Thread)
			b = binary.AppendUvarint(b, uint64(t.SequenceNumber))
		}
		w.blockV6(v6SequencePoint, b)
		if flags&spFlushMetadata != 0 {
			clear(w.meta)
		}
		return w.err
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(threads)))
	for _, t := range threads {
		b = binary.LittleEndian.AppendUint64(b, t.Thread)
		b = binary.LittleEndian.AppendUint32(b, t.SequenceNumber)
	}
	w.blockV4(objSPBlock, b)
	return w.err
}

func (w *Writer) needV6(what string) error {
	if w.cfg.Version != 6 {
		return fmt.Errorf("nettrace: writer: %s blocks exist only in V6 traces", what)
	}
	return w.Flush()
}

// WriteThreads writes a V6 thread block.
func (w *Writer) WriteThreads(threads []Thread) error {
	if err := w.needV6("thread"); err != nil {
		return err
	}
	var b []byte
	for _, t := range threads {
		row := binary.AppendUvarint(nil, t.Index)
		if t.Name != "" {
			row = appendStr8(append(row, threadName), t.Name)
		}
		if t.OSProcessID != 0 {
			row = binary.AppendUvarint(append(row, threadOSProcessID), t.OSProcessID)
		}
		if t.OSThreadID != 0 {
			row = binary.AppendUvarint(append(row, threadOSThreadID), t.OSThreadID)
		}
		for _, k := range sortedKeys(t.KeyValues) {
			row = appendStr8(appendStr8(append(row, threadKeyValue), k), t.KeyValues[k])
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(row)))
		b = append(b, row...)
	}
	w.blockV6(v6Thread, b)
	return w.err
}

// WriteRemoveThreads writes a V6 remove-thread block.
func (w *Writer) WriteRemoveThreads(threads []ThreadSeq) error {
	if err := w.needV6("remove-thread"); err != nil {
		return err
	}
	var b []byte
	for _, t := range threads {
		b = binary.AppendUvarint(b, t.Thread)
		b = binary.AppendUvarint(b, uint64(t.SequenceNumber))
	}
	w.blockV6(v6RemoveThread, b)
	return w.err
}

// WriteLabelLists writes a V6 label-list block defining lists firstIndex,
// firstIndex+1, ... (firstIndex >= 1; lists are valid until the next
// sequence point).
func (w *Writer) WriteLabelLists(firstIndex uint32, lists []LabelList) error {
	if err := w.needV6("label list"); err != nil {
		return err
	}
	b := binary.LittleEndian.AppendUint32(nil, firstIndex)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(lists)))
	for _, l := range lists {
		var labels [][]byte
		add := func(kind byte, data []byte) { labels = append(labels, append([]byte{kind}, data...)) }
		if !l.ActivityID.IsZero() {
			add(labelActivityID, l.ActivityID[:])
		}
		if !l.RelatedActivityID.IsZero() {
			add(labelRelatedActivityID, l.RelatedActivityID[:])
		}
		if l.TraceID != ([16]byte{}) {
			add(labelTraceID, l.TraceID[:])
		}
		if l.SpanID != 0 {
			add(labelSpanID, binary.LittleEndian.AppendUint64(nil, l.SpanID))
		}
		for _, k := range sortedKeys(l.Strings) {
			add(labelKeyValueString, appendStr8(appendStr8(nil, k), l.Strings[k]))
		}
		for _, k := range sortedKeys(l.Ints) {
			v := l.Ints[k]
			add(labelKeyValueVarInt, binary.AppendUvarint(appendStr8(nil, k), uint64(v<<1^(v>>63))))
		}
		if l.Opcode != nil {
			add(labelOpCode, []byte{*l.Opcode})
		}
		if l.Keywords != nil {
			add(labelKeywords, binary.LittleEndian.AppendUint64(nil, *l.Keywords))
		}
		if l.Level != nil {
			add(labelLevel, []byte{*l.Level})
		}
		if l.Version != nil {
			add(labelVersion, []byte{*l.Version})
		}
		if len(labels) == 0 {
			// An empty list still needs one label to carry the end bit.
			add(labelSpanID, make([]byte, 8))
		}
		labels[len(labels)-1][0] |= labelLast
		for _, lb := range labels {
			b = append(b, lb...)
		}
	}
	w.blockV6(v6LabelList, b)
	return w.err
}

// WriteRawBlockV6 writes a V6 block of any kind with the given body; tests
// use it to check that readers skip unknown kinds.
func (w *Writer) WriteRawBlockV6(kind uint8, body []byte) error {
	if err := w.needV6("raw"); err != nil {
		return err
	}
	w.blockV6(int(kind), body)
	return w.err
}

// Close writes the pending events and the end-of-stream marker and flushes.
// It does not close the underlying writer.
func (w *Writer) Close() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if w.cfg.Version == 6 {
		w.blockV6(v6EndOfStream, nil)
	} else {
		w.u8(tagNullReference)
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("nettrace: write: %w", err)
		}
	}
	err := w.err
	w.bw = nil
	if w.err == nil {
		w.err = ErrWriterClosed
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func appendStr8(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendUTF16z(b []byte, s string) []byte {
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

// v1Expressible reports whether fields fit the V4 (V1) field list, which
// has no arrays and no V6 types.
func v1Expressible(fields []Field) bool {
	for _, f := range fields {
		if f.Type > TypeString || (f.Type == TypeObject && !v1Expressible(f.Fields)) {
			return false
		}
	}
	return true
}

func appendMetadataV4(b []byte, md *Metadata) []byte {
	b = binary.LittleEndian.AppendUint32(b, md.ID)
	b = appendUTF16z(b, md.ProviderName)
	b = binary.LittleEndian.AppendUint32(b, md.EventID)
	b = appendUTF16z(b, md.EventName)
	b = binary.LittleEndian.AppendUint64(b, md.Keywords)
	b = binary.LittleEndian.AppendUint32(b, md.Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(md.Level))
	v1 := v1Expressible(md.Fields)
	if v1 {
		b = appendFieldsV1(b, md.Fields)
	} else {
		b = binary.LittleEndian.AppendUint32(b, 0)
	}
	if md.Opcode != 0 {
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = append(b, tagKindOpCode, md.Opcode)
	}
	if !v1 {
		p := appendFieldsV2(nil, md.Fields)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, tagKindV2Params)
		b = append(b, p...)
	}
	return b
}

func appendFieldsV1(b []byte, fields []Field) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(fields)))
	for _, f := range fields {
		b = binary.LittleEndian.AppendUint32(b, uint32(f.Type))
		if f.Type == TypeObject {
			b = appendFieldsV1(b, f.Fields)
		}
		b = appendUTF16z(b, f.Name)
	}
	return b
}

func appendFieldsV2(b []byte, fields []Field) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(fields)))
	for _, f := range fields {
		start := len(b)
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = appendUTF16z(b, f.Name)
		b = appendTypeV2(b, &f)
		binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start))
	}
	return b
}

func appendTypeV2(b []byte, f *Field) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(f.Type))
	switch f.Type {
	case TypeArray:
		b = appendTypeV2(b, f.Elem)
	case TypeObject:
		b = appendFieldsV2(b, f.Fields)
	}
	return b
}

func appendMetadataV6(b []byte, md *Metadata) []byte {
	b = binary.AppendUvarint(b, uint64(md.ID))
	b = appendStr8(b, md.ProviderName)
	b = binary.AppendUvarint(b, uint64(md.EventID))
	b = appendStr8(b, md.EventName)
	b = appendFieldsV6(b, md.Fields)
	var o []byte
	if md.Opcode != 0 {
		o = append(o, optOpCode, md.Opcode)
	}
	if md.Keywords != 0 {
		o = binary.LittleEndian.AppendUint64(append(o, optKeywords), md.Keywords)
	}
	if md.MessageTemplate != "" {
		o = appendStr8(append(o, optMessageTemplate), md.MessageTemplate)
	}
	if md.Description != "" {
		o = appendStr8(append(o, optDescription), md.Description)
	}
	for _, k := range sortedKeys(md.KeyValues) {
		o = appendStr8(appendStr8(append(o, optKeyValue), k), md.KeyValues[k])
	}
	if !md.ProviderGUID.IsZero() {
		o = append(append(o, optProviderGUID), md.ProviderGUID[:]...)
	}
	if md.Level != 0 {
		o = append(o, optLevel, md.Level)
	}
	if md.Version != 0 {
		o = append(o, optVersion, uint8(md.Version))
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(o)))
	return append(b, o...)
}

func appendFieldsV6(b []byte, fields []Field) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(fields)))
	for _, f := range fields {
		d := appendStr8(nil, f.Name)
		d = appendTypeV6(d, &f)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(d)))
		b = append(b, d...)
	}
	return b
}

func appendTypeV6(b []byte, f *Field) []byte {
	b = append(b, byte(f.Type))
	switch f.Type {
	case TypeArray, TypeFixedLengthArray, TypeRelLoc, TypeDataLoc:
		b = appendTypeV6(b, f.Elem)
		if f.Type == TypeFixedLengthArray {
			b = binary.LittleEndian.AppendUint16(b, uint16(f.Count))
		}
	case TypeObject:
		b = appendFieldsV6(b, f.Fields)
	}
	return b
}
