package nettrace

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"time"
)

// GUID is a .NET Guid in its in-memory (and wire) byte order: Data1 (uint32),
// Data2 and Data3 (uint16) little-endian, then 8 bytes.
type GUID [16]byte

// String formats g as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, like .NET.
func (g GUID) String() string {
	return fmt.Sprintf("%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		binary.LittleEndian.Uint32(g[0:4]), binary.LittleEndian.Uint16(g[4:6]),
		binary.LittleEndian.Uint16(g[6:8]), g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15])
}

// IsZero reports whether g is all zeroes.
func (g GUID) IsZero() bool { return g == GUID{} }

// Header is what the trace says about itself, read by NewReader before any
// event.
type Header struct {
	Format Format
	// Version is 3 (NetPerf), 4 (NetTrace V4, including traces whose
	// metadata uses the V5 tags) or 6.
	Version int
	// MinorVersion is the V6 minor version, 0 otherwise.
	MinorVersion int
	// SyncTimeUTC is the wall-clock time that corresponds to SyncTimeTicks.
	SyncTimeUTC time.Time
	// SyncTimeTicks and TickFrequency convert event timestamps to time.
	SyncTimeTicks int64
	TickFrequency int64
	// PointerSize is 4 or 8: the size of stack addresses.
	PointerSize int
	ProcessID   int
	// ProcessorCount is the number of logical processors of the target.
	ProcessorCount int
	// ExpectedCPUSamplingRate is the sample profiler period in ns.
	ExpectedCPUSamplingRate int
	// KeyValues holds the V6 trace block's key/value pairs (nil before V6).
	KeyValues map[string]string
}

// TimeOf converts a timestamp in ticks to wall-clock time. Timestamps before
// the sync point give earlier times; the arithmetic never overflows for
// frequencies up to 1 GHz and spans up to ~290 years.
func (h *Header) TimeOf(ticks int64) time.Time {
	f := h.TickFrequency
	if f <= 0 {
		return h.SyncTimeUTC
	}
	d := ticks - h.SyncTimeTicks
	sec, rem := d/f, d%f
	ns := sec*1e9 + rem*1e9/f
	if f > 1e9 { // rem*1e9 could overflow: fall back to floating point.
		ns = int64(float64(d) * 1e9 / float64(f))
	}
	return h.SyncTimeUTC.Add(time.Duration(ns))
}

// DurationOf converts a tick difference to a duration.
func (h *Header) DurationOf(ticks int64) time.Duration {
	if h.TickFrequency <= 0 {
		return 0
	}
	return time.Duration(float64(ticks) * 1e9 / float64(h.TickFrequency))
}

// Field describes one payload field of a self-describing event.
type Field struct {
	Name string
	Type TypeCode
	// Elem is the element type of Array, FixedLengthArray, RelLoc and DataLoc
	// fields.
	Elem *Field
	// Count is the element count of a FixedLengthArray.
	Count int
	// Fields are the members of an Object field.
	Fields []Field
}

// Metadata describes one kind of event. Events point to it; it stays valid
// for the life of the Reader (even after a V6 metadata flush).
type Metadata struct {
	ID           uint32
	ProviderName string
	EventID      uint32
	EventName    string
	Version      uint32
	Level        uint8
	// skip: the Reader's skip function (Reader.SetSkip) leaves out the
	// events of this record (in Level's padding, it takes no room).
	skip     bool
	Keywords uint64
	Opcode   uint8
	// Fields is the payload layout. It is empty for events that are not
	// self-describing (the runtime's own events carry no field list).
	Fields []Field
	// ProviderGUID, MessageTemplate, Description and KeyValues are only
	// carried by V6 metadata.
	ProviderGUID    GUID
	MessageTemplate string
	Description     string
	KeyValues       map[string]string
	// FieldsError is set when the field list could not be parsed; the event
	// is then treated as having no fields (as TraceEvent does).
	FieldsError error

	index int
}

// Index numbers the metadata records a Reader has read, from 1, in the
// order it read them; it is 0 for a record the caller made. Records are
// never renumbered and no two records of one Reader (ReadParallel included)
// share a number, so a consumer can count or cache per kind of event in a
// slice indexed by Index rather than in a map.
func (m *Metadata) Index() int { return m.index }

// Event is one decoded event. Reader.ReadEvent fills a caller-provided Event,
// so a loop can reuse one value without allocating.
//
// Payload and the stack returned by Stack alias the reader's buffers: they
// are valid only until the next call to ReadEvent. Copy them to keep them.
type Event struct {
	Metadata *Metadata
	// SequenceNumber counts events per capture thread (0 in NetPerf).
	SequenceNumber uint32
	// ThreadID is the OS thread the event is about; CaptureThreadID the
	// thread that wrote it. In V6 traces they are mapped from the trace's
	// thread table to OS thread ids when the table provides them.
	ThreadID        uint64
	CaptureThreadID uint64
	ProcessorNumber uint32
	// StackID is the trace's id of the event's stack (0: no stack, and
	// always 0 in NetPerf, whose stacks are inline). Ids are only
	// meaningful within a StackRegion.
	StackID uint32
	// StackRegion numbers the stretch of the stream in which the reader
	// resolved StackID: two events read by the same Reader with equal
	// StackRegion and equal nonzero StackID have the same stack, so a
	// consumer can cache per (StackRegion, StackID) instead of comparing
	// frames. The reader starts a new region, with a larger number, at
	// each sequence point (where the trace's stack ids restart) and when a
	// stack block does not simply extend the ids defined so far (it may
	// redefine one). It is 0 before any such change and in NetPerf.
	StackRegion uint64
	// Timestamp is in ticks; see Time and Header.TickFrequency.
	Timestamp         int64
	ActivityID        GUID
	RelatedActivityID GUID
	// IsSorted is the writer's promise that no later event in the stream has
	// an earlier timestamp.
	IsSorted bool
	// LabelListID is the V6 label list of the event (0: none).
	LabelListID uint32
	// Labels is the V6 label list of the event, nil without one. Its
	// Opcode, Keywords, Level and Version override the metadata values.
	Labels *LabelList
	// ThreadIndex and CaptureThreadIndex are the V6 thread-table indexes
	// the event refers to (ThreadID and CaptureThreadID hold the OS ids
	// when the table provides them).
	ThreadIndex        uint64
	CaptureThreadIndex uint64
	// Payload is the raw event payload.
	Payload []byte

	header      *Header
	stack       []byte
	pointerSize int
}

// Time is the event's timestamp as wall-clock time.
func (e *Event) Time() time.Time {
	if e.header == nil {
		return time.Time{}
	}
	return e.header.TimeOf(e.Timestamp)
}

// StackLen is the number of frames in the event's stack.
func (e *Event) StackLen() int {
	if e.pointerSize == 0 {
		return 0
	}
	return len(e.stack) / e.pointerSize
}

// Frame returns the i-th return address of the stack, leaf first.
func (e *Event) Frame(i int) uint64 {
	if e.pointerSize == 4 {
		return uint64(binary.LittleEndian.Uint32(e.stack[i*4:]))
	}
	return binary.LittleEndian.Uint64(e.stack[i*8:])
}

// AppendStack appends the stack's addresses (leaf first) to dst.
func (e *Event) AppendStack(dst []uint64) []uint64 {
	n := e.StackLen()
	if n == 0 {
		return dst
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	// A loop per pointer size, the bytes consumed as they are read (no
	// call, no per-frame bounds check beyond the slice's).
	switch s := e.stack; e.pointerSize {
	case 8:
		for i := range out {
			out[i] = binary.LittleEndian.Uint64(s)
			s = s[8:]
		}
	case 4:
		for i := range out {
			out[i] = uint64(binary.LittleEndian.Uint32(s))
			s = s[4:]
		}
	default:
		for i := range out {
			out[i] = e.Frame(i)
		}
	}
	return dst[:len(dst)+n]
}

// Stack returns the stack's addresses, leaf first, in a new slice (nil when
// the event has no stack). Use AppendStack or Frames to avoid allocating.
func (e *Event) Stack() []uint64 {
	if e.StackLen() == 0 {
		return nil
	}
	return e.AppendStack(make([]uint64, 0, e.StackLen()))
}

// Frames iterates over the stack's addresses, leaf first.
func (e *Event) Frames() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for i, n := 0, e.StackLen(); i < n; i++ {
			if !yield(e.Frame(i)) {
				return
			}
		}
	}
}

// ProviderName is a shortcut for Metadata.ProviderName.
func (e *Event) ProviderName() string {
	if e.Metadata == nil {
		return ""
	}
	return e.Metadata.ProviderName
}

// Fields decodes the payload with the event's metadata. See DecodePayload.
func (e *Event) Fields() (Object, error) {
	return DecodePayload(e.Metadata, e.Payload)
}
