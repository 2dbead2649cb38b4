package nettrace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"testing"
	"time"
)

// allScalarFields has one field of every scalar type code the V4 field list
// can express, plus a nested object.
func allScalarFields() ([]Field, Object) {
	fields := []Field{
		{Name: "b", Type: TypeBoolean}, {Name: "c", Type: TypeChar}, {Name: "sb", Type: TypeSByte},
		{Name: "u8", Type: TypeByte}, {Name: "i16", Type: TypeInt16}, {Name: "u16", Type: TypeUInt16},
		{Name: "i32", Type: TypeInt32}, {Name: "u32", Type: TypeUInt32}, {Name: "i64", Type: TypeInt64},
		{Name: "u64", Type: TypeUInt64}, {Name: "f32", Type: TypeSingle}, {Name: "f64", Type: TypeDouble},
		{Name: "dec", Type: TypeDecimal}, {Name: "dt", Type: TypeDateTime}, {Name: "g", Type: TypeGUID},
		{Name: "s", Type: TypeString},
		{Name: "obj", Type: TypeObject, Fields: []Field{{Name: "x", Type: TypeInt32}, {Name: "name", Type: TypeString}}},
	}
	dec := Decimal{0, 0, 2, 0, 0, 0, 0, 0, 0x39, 0x30, 0, 0} // 12345 scale 2
	values := Object{
		{"b", true}, {"c", "é"}, {"sb", int8(-5)}, {"u8", uint8(200)}, {"i16", int16(-300)}, {"u16", uint16(60000)},
		{"i32", int32(-70000)}, {"u32", uint32(4000000000)}, {"i64", int64(-1 << 40)}, {"u64", uint64(1 << 63)},
		{"f32", float32(1.5)}, {"f64", math.Pi}, {"dec", dec},
		{"dt", time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC)},
		{"g", GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}, {"s", "héllo, 世界 🎉"},
		{"obj", Object{{"x", int32(42)}, {"name", "inner"}}},
	}
	return fields, values
}

// arrayFields needs V2Params (V4) or the V6 field list.
func arrayFields() ([]Field, Object) {
	fields := []Field{
		{Name: "bytes", Type: TypeArray, Elem: &Field{Type: TypeByte}},
		{Name: "ints", Type: TypeArray, Elem: &Field{Type: TypeInt32}},
		{Name: "strs", Type: TypeArray, Elem: &Field{Type: TypeString}},
		{Name: "objs", Type: TypeArray, Elem: &Field{Type: TypeObject, Fields: []Field{
			{Name: "k", Type: TypeString}, {Name: "v", Type: TypeArray, Elem: &Field{Type: TypeUInt16}}}}},
		{Name: "chars", Type: TypeArray, Elem: &Field{Type: TypeChar}},
		{Name: "empty", Type: TypeArray, Elem: &Field{Type: TypeDouble}},
	}
	values := Object{
		{"bytes", []byte{1, 2, 3}},
		{"ints", []any{int32(1), int32(-2), int32(3)}},
		{"strs", []any{"a", "", "ccc"}},
		{"objs", []any{Object{{"k", "one"}, {"v", []any{uint16(1)}}}, Object{{"k", "two"}, {"v", []any{}}}}},
		{"chars", "chars"},
		{"empty", []any{}},
	}
	return fields, values
}

// v6Fields uses every type code added by V6.
func v6Fields() ([]Field, Object) {
	fields := []Field{
		{Name: "vi", Type: TypeVarInt}, {Name: "vu", Type: TypeVarUInt},
		{Name: "fixed", Type: TypeFixedLengthArray, Elem: &Field{Type: TypeInt16}, Count: 3},
		{Name: "u8c", Type: TypeUTF8CodeUnit},
		{Name: "rel", Type: TypeRelLoc, Elem: &Field{Type: TypeUInt32}},
		{Name: "data", Type: TypeDataLoc, Elem: &Field{Type: TypeUTF8CodeUnit}},
		{Name: "b8", Type: TypeBoolean8},
		{Name: "utf8", Type: TypeArray, Elem: &Field{Type: TypeUTF8CodeUnit}},
	}
	values := Object{
		{"vi", int64(-123456789)}, {"vu", uint64(math.MaxUint64)},
		{"fixed", []any{int16(1), int16(-1), int16(7)}}, {"u8c", uint8('z')},
		{"rel", []any{uint32(10), uint32(20)}}, {"data", "located"}, {"b8", true}, {"utf8", "ütf8"},
	}
	return fields, values
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPayloadRoundTripEveryTypeCode(t *testing.T) {
	sets := map[string]func() ([]Field, Object){"scalar": allScalarFields, "array": arrayFields, "v6": v6Fields}
	for name, mk := range sets {
		fields, values := mk()
		p, err := AppendPayload(nil, fields, values)
		if err != nil {
			t.Fatalf("%s: encode: %v", name, err)
		}
		got, err := DecodePayload(&Metadata{Fields: fields}, p)
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if g, w := mustJSON(t, got), mustJSON(t, values); g != w {
			t.Errorf("%s: round trip\n got %s\nwant %s", name, g, w)
		}
		// Every strict prefix of the payload must fail cleanly.
		for n := 0; n < len(p); n++ {
			if _, err := DecodePayload(&Metadata{Fields: fields}, p[:n]); err == nil && name != "v6" {
				t.Errorf("%s: payload cut to %d of %d bytes decoded without error", name, n, len(p))
			}
		}
	}
	seen := map[TypeCode]bool{}
	var walk func([]Field)
	walk = func(fs []Field) {
		for _, f := range fs {
			seen[f.Type] = true
			if f.Elem != nil {
				walk([]Field{*f.Elem})
			}
			walk(f.Fields)
		}
	}
	for _, mk := range sets {
		f, _ := mk()
		walk(f)
	}
	for tc := TypeCode(1); tc <= TypeBoolean8; tc++ {
		if tc.Valid() && !seen[tc] {
			t.Errorf("type code %v is not covered by the round-trip test", tc)
		}
	}
}

func TestDecimalString(t *testing.T) {
	d := Decimal{0, 0, 2, 0x80, 0, 0, 0, 0, 0x39, 0x30, 0, 0}
	if got := d.String(); got != "-123.45" {
		t.Errorf("Decimal = %q, want -123.45", got)
	}
}

type wantEvent struct {
	ev     Event
	stack  []uint64
	values Object
}

// buildTrace writes a trace exercising every block kind of the version and
// returns the bytes and the events a reader must return.
func buildTrace(t *testing.T, cfg WriterConfig) ([]byte, []wantEvent, uint64) {
	return buildTraceN(t, cfg, 2000)
}

func buildTraceN(t *testing.T, cfg WriterConfig, filler int) ([]byte, []wantEvent, uint64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sf, sv := allScalarFields()
	af, av := arrayFields()
	mdScalar := &Metadata{ID: 1, ProviderName: "Test-Provider", EventID: 7, EventName: "Scalars", Version: 2, Level: 4, Keywords: 0xF0, Fields: sf}
	mdArray := &Metadata{ID: 2, ProviderName: "Test-Provider", EventID: 8, EventName: "Arrays", Level: 5, Opcode: 9, Fields: af}
	mdRaw := &Metadata{ID: 300000, ProviderName: "Microsoft-Windows-DotNETRuntime", EventID: 80, Version: 1, Level: 4}
	mds := []*Metadata{mdScalar, mdArray, mdRaw}
	var v6f []Field
	var v6v Object
	if cfg.Version == 6 {
		v6f, v6v = v6Fields()
		mds = append(mds, &Metadata{ID: 3, ProviderName: "V6", EventID: 1, EventName: "New", Version: 1, Level: 2,
			Keywords: 1, Fields: v6f, MessageTemplate: "m", Description: "d", KeyValues: map[string]string{"a": "b"},
			ProviderGUID: GUID{9}})
	}
	for _, md := range mds {
		if err := w.AddMetadata(md); err != nil {
			t.Fatal(err)
		}
	}
	v6 := cfg.Version == 6
	thr := func(i uint64) uint64 { return i } // OS thread ids
	if v6 {
		if err := w.WriteThreads([]Thread{{Index: 1, Name: "main", OSProcessID: 42, OSThreadID: 1001},
			{Index: 2, OSThreadID: 1002, KeyValues: map[string]string{"k": "v"}}}); err != nil {
			t.Fatal(err)
		}
		thr = func(i uint64) uint64 {
			if i == 1 || i == 2 {
				return 1000 + i
			}
			return i // not in the thread table: the index stays
		}
	}
	var want []wantEvent
	var dropped uint64
	seq := map[uint64]uint32{}
	emit := func(md *Metadata, capThread uint64, ts int64, stackID uint32, stack []uint64, values Object, skip uint32, label uint32, act GUID) {
		t.Helper()
		seq[capThread] += 1 + skip
		dropped += uint64(skip)
		var payload []byte
		if values != nil {
			payload, err = AppendPayload(nil, md.Fields, values)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			payload = []byte{1, 2, 3, 4, 5}
		}
		ev := Event{Metadata: md, SequenceNumber: seq[capThread], ThreadID: capThread + 10, CaptureThreadID: capThread,
			ProcessorNumber: uint32(capThread % 4), StackID: stackID, Timestamp: ts, IsSorted: ts%2 == 0, Payload: payload}
		if v6 {
			ev.ThreadIndex, ev.CaptureThreadIndex, ev.LabelListID = ev.ThreadID, ev.CaptureThreadID, label
		} else {
			ev.ActivityID, ev.RelatedActivityID = act, GUID{byte(ts)}
		}
		if err := w.WriteEvent(&ev); err != nil {
			t.Fatal(err)
		}
		we := ev
		if v6 {
			we.ThreadID, we.CaptureThreadID = thr(ev.ThreadIndex), thr(ev.CaptureThreadIndex)
			if label != 0 {
				we.ActivityID = GUID{byte(label)}
			}
			if label == 2 {
				we.RelatedActivityID = GUID{3}
			}
		}
		want = append(want, wantEvent{ev: we, stack: stack, values: values})
	}
	s1 := []uint64{0x7fff0001, 0x7fff0002, 0x7fff0003}
	s2 := []uint64{0x1234}
	if err := w.WriteStacks(1, [][]uint64{s1, s2, nil}); err != nil {
		t.Fatal(err)
	}
	if v6 {
		if err := w.WriteLabelLists(1, []LabelList{{ActivityID: GUID{1}}, {ActivityID: GUID{2}, RelatedActivityID: GUID{3},
			Strings: map[string]string{"x": "y"}, Ints: map[string]int64{"n": -5}}}); err != nil {
			t.Fatal(err)
		}
	}
	emit(mdScalar, 1, 1000, 1, s1, sv, 0, 1, GUID{7})
	emit(mdArray, 1, 1005, 2, s2, av, 0, 2, GUID{})
	emit(mdRaw, 2, 900, 0, nil, nil, 0, 0, GUID{})  // negative delta on another capture thread
	emit(mdRaw, 1, 1010, 3, nil, nil, 2, 0, GUID{}) // two events dropped on thread 1
	if v6 {
		emit(mds[3], 2, 1011, 0, nil, v6v, 0, 0, GUID{})
	}
	for i := 0; i < filler; i++ { // enough to span several event blocks
		emit(mdRaw, uint64(1+i%2), int64(1100+i), 0, nil, nil, 0, 0, GUID{})
	}
	// Sequence point: thread 2 had 3 more events the writer never wrote.
	if err := w.WriteSequencePoint(5000, []ThreadSeq{{1, seq[1]}, {2, seq[2] + 3}}, 0); err != nil {
		t.Fatal(err)
	}
	seq[2] += 3
	dropped += 3
	// Stack ids restart after the sequence point with different stacks.
	s3 := []uint64{0xdead, 0xbeef}
	if err := w.WriteStacks(1, [][]uint64{s3}); err != nil {
		t.Fatal(err)
	}
	emit(mdScalar, 2, 6000, 1, s3, sv, 0, 0, GUID{})
	if v6 {
		if err := w.WriteRawBlockV6(99, []byte("future block kind")); err != nil {
			t.Fatal(err)
		}
		// Thread 2 ends; its final sequence number reveals one more drop.
		if err := w.WriteRemoveThreads([]ThreadSeq{{2, seq[2] + 1}}); err != nil {
			t.Fatal(err)
		}
		dropped++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want, dropped
}

func writerConfigs() map[string]WriterConfig {
	sync := time.Date(2025, 1, 2, 3, 4, 5, 6000000, time.UTC)
	return map[string]WriterConfig{
		"v4":              {ProcessID: 1234, ProcessorCount: 8, SyncTimeUTC: sync, SyncTimeTicks: 500, TickFrequency: 10_000_000},
		"v4-uncompressed": {Uncompressed: true, PointerSize: 4, MaxEventBlockSize: 1000},
		"v4-ptr4":         {PointerSize: 4, MaxEventBlockSize: 512},
		"v6":              {Version: 6, ProcessID: 77, ProcessorCount: 2, SyncTimeUTC: sync, KeyValues: map[string]string{"SystemPageSize": "4096"}},
		"v6-uncompressed": {Version: 6, Uncompressed: true, PointerSize: 4},
	}
}

func TestWriterRoundTrip(t *testing.T) {
	for name, cfg := range writerConfigs() {
		t.Run(name, func(t *testing.T) {
			data, want, dropped := buildTrace(t, cfg)
			r, err := NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header()
			wantVersion := max(cfg.Version, 4)
			if h.Version != wantVersion || h.ProcessID != cfg.ProcessID || h.ProcessorCount != cfg.ProcessorCount {
				t.Errorf("header = %+v", h)
			}
			if cfg.PointerSize != 0 && h.PointerSize != cfg.PointerSize || cfg.PointerSize == 0 && h.PointerSize != 8 {
				t.Errorf("pointer size %d, config %d", h.PointerSize, cfg.PointerSize)
			}
			if !cfg.SyncTimeUTC.IsZero() && !h.SyncTimeUTC.Equal(cfg.SyncTimeUTC) {
				t.Errorf("sync time %v, want %v", h.SyncTimeUTC, cfg.SyncTimeUTC)
			}
			if cfg.KeyValues != nil && h.KeyValues["SystemPageSize"] != "4096" {
				t.Errorf("V6 key/values %v", h.KeyValues)
			}
			var ev Event
			i := 0
			for ; ; i++ {
				err := r.ReadEvent(&ev)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if i >= len(want) {
					t.Fatalf("more events than written")
				}
				checkEvent(t, i, &ev, want[i])
			}
			if i != len(want) {
				t.Errorf("read %d events, wrote %d", i, len(want))
			}
			st := r.Stats()
			if !st.Complete || st.DroppedEvents != dropped || st.SequencePoints != 1 || st.Events != int64(len(want)) || st.LastSequencePoint != 5000 {
				t.Errorf("stats %+v; want complete, %d dropped, 1 sequence point", st, dropped)
			}
			if st.Bytes != int64(len(data)) {
				t.Errorf("consumed %d of %d bytes", st.Bytes, len(data))
			}
			if cfg.Version == 6 {
				if _, ok := r.Thread(2); ok {
					t.Error("thread 2 still in the table after RemoveThread")
				}
				if th, ok := r.Thread(1); !ok || th.Name != "main" || th.OSProcessID != 42 {
					t.Errorf("thread 1 = %+v, %v", th, ok)
				}
			}
		})
	}
}

func checkEvent(t *testing.T, i int, got *Event, w wantEvent) {
	t.Helper()
	md, wmd := got.Metadata, w.ev.Metadata
	if md.ID != wmd.ID || md.ProviderName != wmd.ProviderName || md.EventID != wmd.EventID || md.EventName != wmd.EventName ||
		md.Version != wmd.Version || md.Level != wmd.Level || md.Keywords != wmd.Keywords || md.Opcode != wmd.Opcode ||
		md.MessageTemplate != wmd.MessageTemplate || md.ProviderGUID != wmd.ProviderGUID || !reflect.DeepEqual(md.KeyValues, wmd.KeyValues) {
		t.Errorf("event %d metadata\n got %+v\nwant %+v", i, md, wmd)
	}
	if !reflect.DeepEqual(md.Fields, wmd.Fields) && !(len(md.Fields) == 0 && len(wmd.Fields) == 0) {
		t.Errorf("event %d fields\n got %+v\nwant %+v", i, md.Fields, wmd.Fields)
	}
	g, e := *got, w.ev
	if g.SequenceNumber != e.SequenceNumber || g.ThreadID != e.ThreadID || g.CaptureThreadID != e.CaptureThreadID ||
		g.ProcessorNumber != e.ProcessorNumber || g.StackID != e.StackID || g.Timestamp != e.Timestamp ||
		g.ActivityID != e.ActivityID || g.IsSorted != e.IsSorted || g.LabelListID != e.LabelListID ||
		(g.Labels == nil) == (e.LabelListID != 0) {
		t.Fatalf("event %d header\n got %+v\nwant %+v", i, g, e)
	}
	if g.RelatedActivityID != e.RelatedActivityID {
		t.Errorf("event %d related activity %v, want %v", i, g.RelatedActivityID, e.RelatedActivityID)
	}
	if !bytes.Equal(g.Payload, e.Payload) {
		t.Errorf("event %d payload differs", i)
	}
	if s := got.Stack(); !reflect.DeepEqual(s, w.stack) && !(len(s) == 0 && len(w.stack) == 0) {
		t.Errorf("event %d stack %x, want %x", i, s, w.stack)
	}
	if w.values != nil {
		v, err := got.Fields()
		if err != nil {
			t.Errorf("event %d fields: %v", i, err)
		} else if a, b := fmt.Sprint(mustJSON(t, v)), fmt.Sprint(mustJSON(t, w.values)); a != b {
			t.Errorf("event %d values\n got %s\nwant %s", i, a, b)
		}
	}
}

// TestTruncatedEverywhere cuts a trace at every byte and checks that exactly
// the events that end before the cut are delivered, followed by a truncation
// error.
func TestTruncatedEverywhere(t *testing.T) {
	for _, name := range []string{"v4", "v4-uncompressed", "v6"} {
		cfg := writerConfigs()[name]
		cfg.MaxEventBlockSize = 300
		data, _, _ := buildTraceN(t, cfg, 60)
		// End offsets of every event in the full stream.
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var ends []int64
		var ev Event
		for r.ReadEvent(&ev) == nil {
			ends = append(ends, r.InputOffset())
		}
		step := 1
		if testing.Short() {
			step = 7
		}
		for n := 0; n < len(data); n += step {
			r, err := NewReaderConfig(bytes.NewReader(data[:n]), ReaderConfig{BufferSize: 512})
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || !fe.Truncated() {
					t.Fatalf("%s cut at %d: NewReader error %v is not a truncation FormatError", name, n, err)
				}
				continue
			}
			got := 0
			for {
				err = r.ReadEvent(&ev)
				if err != nil {
					break
				}
				got++
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !fe.Truncated() || fe.Offset > int64(n) {
				t.Fatalf("%s cut at %d: error %v, want a truncation FormatError at or before %d", name, n, err, n)
			}
			want := 0
			for _, e := range ends {
				if e <= int64(n) {
					want++
				}
			}
			if got != want {
				t.Fatalf("%s cut at %d: delivered %d events, %d were complete", name, n, got, want)
			}
			if r.Stats().Complete {
				t.Fatalf("%s cut at %d: reported complete", name, n)
			}
		}
	}
}

func TestUnsupportedAndForeignInput(t *testing.T) {
	legacy := func(typeName string, version uint32) []byte {
		var b bytes.Buffer
		b.Write([]byte{20, 0, 0, 0})
		b.WriteString(fastSerMagic)
		b.Write([]byte{4, 4, 1})
		b.Write([]byte{byte(version), 0, 0, 0, 0, 0, 0, 0, byte(len(typeName)), 0, 0, 0})
		b.WriteString(typeName)
		b.WriteByte(6)
		return b.Bytes()
	}
	v7 := append([]byte(magicNettrace), 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0)
	for name, in := range map[string][]byte{
		"netperf-v2": legacy(objLegacyTrace, 2),
		"netperf-v1": legacy(objLegacyTrace, 1),
		"trace-v5":   append([]byte(magicNettrace), legacy(objTrace, 5)...),
		"nettrace-7": v7,
	} {
		_, err := NewReader(bytes.NewReader(in))
		if !errors.Is(err, ErrUnsupportedFormat) {
			t.Errorf("%s: error %v, want ErrUnsupportedFormat", name, err)
		}
	}
	for name, in := range map[string][]byte{
		"empty":  nil,
		"text":   []byte("hello world, this is not a trace"),
		"zip":    {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0},
		"badsep": append([]byte(magicNettrace), 5, 0, 0, 0),
	} {
		_, err := NewReader(bytes.NewReader(in))
		var fe *FormatError
		if !errors.As(err, &fe) || errors.Is(err, ErrUnsupportedFormat) {
			t.Errorf("%s: error %v, want a FormatError", name, err)
		}
	}
}

// TestHostileLengths checks that huge lengths in the stream are rejected
// without allocating them.
func TestHostileLengths(t *testing.T) {
	data, _, _ := buildTrace(t, WriterConfig{})
	// Find the first EventBlock object's size field and claim 60 MiB.
	i := bytes.Index(data, []byte(objEventBlock))
	if i < 0 {
		t.Fatal("no event block")
	}
	bad := bytes.Clone(data[:i+len(objEventBlock)+1+4])
	copy(bad[len(bad)-4:], []byte{0, 0, 0xc0, 3})
	r, err := NewReader(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	var ms1, ms2 runtimeMem
	ms1.read()
	var ev Event
	for r.ReadEvent(&ev) == nil {
	}
	ms2.read()
	if d := ms2.total - ms1.total; d > 8<<20 {
		t.Errorf("reading a stream that claims a 60 MiB block allocated %d bytes", d)
	}

	// A V6 trace block claiming 2^31 key/value pairs in a few bytes.
	v6 := append([]byte(magicNettrace), 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0)
	body := append(make([]byte, 36), 0xff, 0xff, 0xff, 0x7f, 1, 'a', 1, 'b')
	binary.LittleEndian.PutUint32(body[32:], 8) // pointer size
	v6 = binary.LittleEndian.AppendUint32(v6, uint32(v6Trace)<<24|uint32(len(body)))
	v6 = append(v6, body...)
	ms1.read()
	_, err = NewReader(bytes.NewReader(v6))
	ms2.read()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("V6 trace block with 2^31 pairs: error %v, want a FormatError", err)
	}
	if d := ms2.total - ms1.total; d > 1<<20 {
		t.Errorf("V6 trace block with 2^31 pairs allocated %d bytes", d)
	}
}
