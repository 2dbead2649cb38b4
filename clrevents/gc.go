package clrevents

// GCStart (runtime event 1) begins a garbage collection.
type GCStart struct {
	// Count is the collection's sequence number in the process.
	Count uint32
	// Depth is the generation collected (0, 1 or 2).
	Depth uint32
	// Reason is why the collection happened; see GCReason.
	Reason GCReason
	// Type is 0 blocking outside background GC, 1 background, 2 blocking
	// during background GC.
	Type                 uint32
	ClrInstanceID        uint16
	ClientSequenceNumber uint64
}

// DecodeGCStart decodes GCStart versions 0-2 (newer versions by prefix).
func DecodeGCStart(payload []byte, version uint8) (GCStart, error) {
	c := newCursor("GCStart", payload, version, 8)
	var e GCStart
	e.Count = c.u32("Count")
	if version == 0 {
		e.Reason = GCReason(c.u32("Reason"))
		return e, c.err
	}
	e.Depth = c.u32("Depth")
	e.Reason = GCReason(c.u32("Reason"))
	e.Type = c.u32("Type")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	if version >= 2 {
		e.ClientSequenceNumber = c.u64("ClientSequenceNumber")
	}
	return e, c.err
}

// GCReason says why a collection was triggered.
type GCReason uint32

var gcReasonNames = [...]string{
	"AllocSmall", "Induced", "LowMemory", "Empty", "AllocLarge", "OutOfSpaceSOH",
	"OutOfSpaceLOH", "InducedNotForced", "Internal", "InducedLowMemory",
	"InducedCompacting", "LowMemoryHost", "PMFullGC", "LowMemoryHostBlocking",
}

// String names the reason as the runtime's manifest does.
func (r GCReason) String() string {
	if int(r) < len(gcReasonNames) {
		return gcReasonNames[r]
	}
	return "Reason(" + itoa(uint64(r)) + ")"
}

// GCEnd (runtime event 2) ends a garbage collection.
type GCEnd struct {
	Count         uint32
	Depth         uint32
	ClrInstanceID uint16
}

// DecodeGCEnd decodes GCEnd versions 0-1.
func DecodeGCEnd(payload []byte, version uint8) (GCEnd, error) {
	c := newCursor("GCEnd", payload, version, 8)
	var e GCEnd
	e.Count = c.u32("Count")
	if version == 0 {
		e.Depth = uint32(c.u16("Depth"))
		return e, c.err
	}
	e.Depth = c.u32("Depth")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// GCPhase is the payload of GCRestartEEBegin (7), GCRestartEEEnd (3),
// GCSuspendEEEnd (8) and the other events that carry only ClrInstanceID
// (version 1 and later; version 0 is empty).
type GCPhase struct {
	ClrInstanceID uint16
}

// DecodeGCPhase decodes an event whose payload is only ClrInstanceID.
func DecodeGCPhase(payload []byte, version uint8) (GCPhase, error) {
	c := newCursor("GCPhase", payload, version, 8)
	var e GCPhase
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	return e, c.err
}

// GCSuspendEEBegin (runtime event 9) starts suspending managed threads. The
// pause of a collection runs from here to the next GCRestartEEEnd.
type GCSuspendEEBegin struct {
	// Reason: 0 Other, 1 GC, 2 AppDomain shutdown, 3 code pitching,
	// 4 shutdown, 5 debugger, 6 GC prep, 7 debugger sweep.
	Reason        uint32
	Count         uint32
	ClrInstanceID uint16
}

// DecodeGCSuspendEEBegin decodes GCSuspendEEBegin versions 0-1.
func DecodeGCSuspendEEBegin(payload []byte, version uint8) (GCSuspendEEBegin, error) {
	c := newCursor("GCSuspendEEBegin", payload, version, 8)
	var e GCSuspendEEBegin
	if version == 0 {
		e.Reason = uint32(c.u16("Reason"))
		return e, c.err
	}
	e.Reason = c.u32("Reason")
	e.Count = c.u32("Count")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// GCHeapStats (runtime event 4) is the heap after a collection.
type GCHeapStats struct {
	// GenerationSize and TotalPromotedSize are indexed by generation: 0,
	// 1, 2, 3 (large object heap) and 4 (pinned object heap, version 2).
	GenerationSize            [5]uint64
	TotalPromotedSize         [5]uint64
	FinalizationPromotedSize  uint64
	FinalizationPromotedCount uint64
	PinnedObjectCount         uint32
	SinkBlockCount            uint32
	GCHandleCount             uint32
	ClrInstanceID             uint16
}

// DecodeGCHeapStats decodes GCHeapStats versions 0-2.
func DecodeGCHeapStats(payload []byte, version uint8) (GCHeapStats, error) {
	c := newCursor("GCHeapStats", payload, version, 8)
	var e GCHeapStats
	for i := range 4 {
		e.GenerationSize[i] = c.u64("GenerationSize")
		e.TotalPromotedSize[i] = c.u64("TotalPromotedSize")
	}
	e.FinalizationPromotedSize = c.u64("FinalizationPromotedSize")
	e.FinalizationPromotedCount = c.u64("FinalizationPromotedCount")
	e.PinnedObjectCount = c.u32("PinnedObjectCount")
	e.SinkBlockCount = c.u32("SinkBlockCount")
	e.GCHandleCount = c.u32("GCHandleCount")
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	if version >= 2 {
		e.GenerationSize[4] = c.u64("GenerationSize4")
		e.TotalPromotedSize[4] = c.u64("TotalPromotedSize4")
	}
	return e, c.err
}

// GCAllocationTick (runtime event 10) is raised about every 100 KB of
// allocation; it names the type of the object that crossed the threshold.
type GCAllocationTick struct {
	// AllocationAmount is the bytes allocated since the previous tick
	// (AllocationAmount64 from version 2 on, which does not wrap).
	AllocationAmount uint64
	// AllocationKind: 0 small object heap, 1 large, 2 pinned.
	AllocationKind uint32
	ClrInstanceID  uint16
	TypeID         uint64
	TypeName       string
	HeapIndex      uint32
	Address        uint64
	ObjectSize     uint64
}

// DecodeGCAllocationTick decodes GCAllocationTick versions 0-4. ptrSize is
// the trace's pointer size (4 or 8).
func DecodeGCAllocationTick(payload []byte, version uint8, ptrSize int) (GCAllocationTick, error) {
	c := newCursor("GCAllocationTick", payload, version, ptrSize)
	var e GCAllocationTick
	e.AllocationAmount = uint64(c.u32("AllocationAmount"))
	e.AllocationKind = c.u32("AllocationKind")
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	if version >= 2 {
		e.AllocationAmount = c.u64("AllocationAmount64")
		e.TypeID = c.ptr("TypeID")
		e.TypeName = c.str("TypeName")
		e.HeapIndex = c.u32("HeapIndex")
	}
	if version >= 3 {
		e.Address = c.ptr("Address")
	}
	if version >= 4 {
		e.ObjectSize = c.u64("ObjectSize")
	}
	return e, c.err
}

// GCTriggered (runtime event 35) says why a collection is about to start.
type GCTriggered struct {
	Reason        GCReason
	ClrInstanceID uint16
}

// DecodeGCTriggered decodes GCTriggered version 0.
func DecodeGCTriggered(payload []byte, version uint8) (GCTriggered, error) {
	c := newCursor("GCTriggered", payload, version, 8)
	var e GCTriggered
	e.Reason = GCReason(c.u32("Reason"))
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
