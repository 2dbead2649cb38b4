package gcdump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// Event ids of Microsoft-Windows-DotNETRuntime that a heap snapshot uses
// (keywords GCHeapDump 0x100000 and Type 0x80000). Their layouts are those
// of the runtime's manifest (ClrEtwAll.man); pointer-sized fields are 4 or
// 8 bytes as the trace says.
const (
	IDBulkType                 = 15 // BulkType: the types of the objects
	IDGCBulkRootEdge           = 16 // roots: stack, handles, finalizer queue
	IDGCBulkRootCWTElementEdge = 17 // ConditionalWeakTable (dependent handle) entries
	IDGCBulkNode               = 18 // objects
	IDGCBulkEdge               = 19 // references of the objects, in node order
	IDGCBulkRootCCW            = 36 // COM callable wrappers (Windows)
	IDGCBulkRCW                = 37 // runtime callable wrappers (Windows)
	IDGCBulkRootStaticVar      = 38 // static fields
)

// ErrPayload is wrapped by the errors of a heap-walk event whose payload
// does not match its layout.
var ErrPayload = errors.New("bad heap-walk event payload")

func payloadErr(event string, format string, args ...any) error {
	return fmt.Errorf("gcdump: %s: %w: %s", event, ErrPayload, fmt.Sprintf(format, args...))
}

func checkPtr(event string, ptrSize int) error {
	if ptrSize != 4 && ptrSize != 8 {
		return payloadErr(event, "pointer size %d (must be 4 or 8)", ptrSize)
	}
	return nil
}

func ptrAt(b []byte, off, ptrSize int) uint64 {
	if ptrSize == 4 {
		return uint64(binary.LittleEndian.Uint32(b[off:]))
	}
	return binary.LittleEndian.Uint64(b[off:])
}

// bulkHeader decodes Index, Count and ClrInstanceID (10 bytes) and checks
// that Count elements of elemSize bytes follow.
func bulkHeader(event string, p []byte, elemSize int) (index, count uint32, err error) {
	if len(p) < 10 {
		return 0, 0, payloadErr(event, "%d bytes, shorter than its 10-byte header", len(p))
	}
	index, count = binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
	if uint64(count)*uint64(elemSize) > uint64(len(p)-10) {
		return 0, 0, payloadErr(event, "%d values of %d bytes announced, %d bytes present", count, elemSize, len(p)-10)
	}
	return index, count, nil
}

// BulkNode is one object of a GCBulkNode event.
type BulkNode struct {
	Address uint64
	Size    uint64
	TypeID  uint64
	// EdgeCount is how many of the following GCBulkEdge values are this
	// object's references.
	EdgeCount uint64
}

// BulkNodes is a decoded GCBulkNode event. Index numbers the events of one
// heap walk from 0; At reads the values in place.
type BulkNodes struct {
	Index, Count uint32
	data         []byte
	ptr          int
}

// DecodeBulkNodes decodes a GCBulkNode payload (event 18, version 0). The
// result aliases payload.
func DecodeBulkNodes(payload []byte, ptrSize int) (BulkNodes, error) {
	if err := checkPtr("GCBulkNode", ptrSize); err != nil {
		return BulkNodes{}, err
	}
	idx, n, err := bulkHeader("GCBulkNode", payload, ptrSize+24)
	return BulkNodes{Index: idx, Count: n, data: payload[min(10, len(payload)):], ptr: ptrSize}, err
}

// At returns value i (i < Count).
func (b BulkNodes) At(i int) BulkNode {
	o := i * (b.ptr + 24)
	return BulkNode{
		Address:   ptrAt(b.data, o, b.ptr),
		Size:      binary.LittleEndian.Uint64(b.data[o+b.ptr:]),
		TypeID:    binary.LittleEndian.Uint64(b.data[o+b.ptr+8:]),
		EdgeCount: binary.LittleEndian.Uint64(b.data[o+b.ptr+16:]),
	}
}

// BulkEdges is a decoded GCBulkEdge event: the targets of object
// references, in the order of the nodes that hold them.
type BulkEdges struct {
	Index, Count uint32
	data         []byte
	ptr          int
}

// DecodeBulkEdges decodes a GCBulkEdge payload (event 19, version 0).
func DecodeBulkEdges(payload []byte, ptrSize int) (BulkEdges, error) {
	if err := checkPtr("GCBulkEdge", ptrSize); err != nil {
		return BulkEdges{}, err
	}
	idx, n, err := bulkHeader("GCBulkEdge", payload, ptrSize+4)
	return BulkEdges{Index: idx, Count: n, data: payload[min(10, len(payload)):], ptr: ptrSize}, err
}

// Target returns the address that reference i points to.
func (b BulkEdges) Target(i int) uint64 { return ptrAt(b.data, i*(b.ptr+4), b.ptr) }

// FieldID returns the ReferencingFieldID of reference i (0 on CoreCLR).
func (b BulkEdges) FieldID(i int) uint32 {
	return binary.LittleEndian.Uint32(b.data[i*(b.ptr+4)+b.ptr:])
}

// RootKind is the kind of a GC root (GCBulkRootEdge).
type RootKind uint8

// Root kinds.
const (
	RootStack     RootKind = 0
	RootFinalizer RootKind = 1
	RootHandle    RootKind = 2
	RootOlder     RootKind = 3
	RootSizedRef  RootKind = 4
	RootOverflow  RootKind = 5
)

// RootFlags qualify a root.
type RootFlags uint32

// Root flags.
const (
	RootPinning    RootFlags = 0x1
	RootWeakRef    RootFlags = 0x2
	RootInterior   RootFlags = 0x4
	RootRefCounted RootFlags = 0x8
)

// RootEdge is one root of a GCBulkRootEdge event.
type RootEdge struct {
	Object uint64
	Kind   RootKind
	Flags  RootFlags
	// ID identifies the root (a handle's address; 0 for most stack roots).
	ID uint64
}

// RootEdges is a decoded GCBulkRootEdge event.
type RootEdges struct {
	Index, Count uint32
	data         []byte
	ptr          int
}

// DecodeRootEdges decodes a GCBulkRootEdge payload (event 16, version 0).
func DecodeRootEdges(payload []byte, ptrSize int) (RootEdges, error) {
	if err := checkPtr("GCBulkRootEdge", ptrSize); err != nil {
		return RootEdges{}, err
	}
	idx, n, err := bulkHeader("GCBulkRootEdge", payload, 2*ptrSize+5)
	return RootEdges{Index: idx, Count: n, data: payload[min(10, len(payload)):], ptr: ptrSize}, err
}

// At returns root i.
func (b RootEdges) At(i int) RootEdge {
	o := i * (2*b.ptr + 5)
	return RootEdge{
		Object: ptrAt(b.data, o, b.ptr),
		Kind:   RootKind(b.data[o+b.ptr]),
		Flags:  RootFlags(binary.LittleEndian.Uint32(b.data[o+b.ptr+1:])),
		ID:     ptrAt(b.data, o+b.ptr+5, b.ptr),
	}
}

// CWTEdge is an entry of a ConditionalWeakTable: Value stays alive as long
// as Key does (a dependent handle).
type CWTEdge struct{ Key, Value, ID uint64 }

// CWTEdges is a decoded GCBulkRootConditionalWeakTableElementEdge event.
type CWTEdges struct {
	Index, Count uint32
	data         []byte
	ptr          int
}

// DecodeCWTEdges decodes a GCBulkRootConditionalWeakTableElementEdge
// payload (event 17, version 0).
func DecodeCWTEdges(payload []byte, ptrSize int) (CWTEdges, error) {
	const ev = "GCBulkRootConditionalWeakTableElementEdge"
	if err := checkPtr(ev, ptrSize); err != nil {
		return CWTEdges{}, err
	}
	idx, n, err := bulkHeader(ev, payload, 3*ptrSize)
	return CWTEdges{Index: idx, Count: n, data: payload[min(10, len(payload)):], ptr: ptrSize}, err
}

// At returns entry i.
func (b CWTEdges) At(i int) CWTEdge {
	o := i * 3 * b.ptr
	return CWTEdge{Key: ptrAt(b.data, o, b.ptr), Value: ptrAt(b.data, o+b.ptr, b.ptr), ID: ptrAt(b.data, o+2*b.ptr, b.ptr)}
}

// TypeFlags describe a type of a BulkType event.
type TypeFlags uint32

// Type flags.
const (
	TypeDelegate          TypeFlags = 0x1
	TypeFinalizable       TypeFlags = 0x2
	TypeExternalCOMObject TypeFlags = 0x4 // an RCW type
	TypeArray             TypeFlags = 0x8
	TypeModuleBaseAddress TypeFlags = 0x10 // ModuleID is an image base (NativeAOT)
)

// BulkType is one type of a BulkType event.
type BulkType struct {
	TypeID   uint64 // the MethodTable pointer
	ModuleID uint64
	// TypeNameID is the metadata token of the type.
	TypeNameID     uint32
	Flags          TypeFlags
	CorElementType uint8
	// Name is in the runtime's syntax: List`1[System.String], Int32[].
	Name string
	// TypeParameters are the TypeIDs of generic arguments or of an
	// array's element type.
	TypeParameters []uint64
}

// DecodeBulkType decodes a BulkType payload (event 15, version 0).
func DecodeBulkType(payload []byte) ([]BulkType, error) {
	const ev = "BulkType"
	if len(payload) < 6 {
		return nil, payloadErr(ev, "%d bytes, shorter than its 6-byte header", len(payload))
	}
	n := binary.LittleEndian.Uint32(payload)
	// Each value takes at least 31 bytes.
	if uint64(n)*31 > uint64(len(payload)-6) {
		return nil, payloadErr(ev, "%d types announced in %d bytes", n, len(payload))
	}
	out := make([]BulkType, 0, n)
	p := 6
	for i := range n {
		if len(payload)-p < 25 {
			return out, payloadErr(ev, "type %d cut at offset %d", i, p)
		}
		t := BulkType{
			TypeID:         binary.LittleEndian.Uint64(payload[p:]),
			ModuleID:       binary.LittleEndian.Uint64(payload[p+8:]),
			TypeNameID:     binary.LittleEndian.Uint32(payload[p+16:]),
			Flags:          TypeFlags(binary.LittleEndian.Uint32(payload[p+20:])),
			CorElementType: payload[p+24],
		}
		var ok bool
		t.Name, p, ok = utf16z(payload, p+25)
		if !ok {
			return out, payloadErr(ev, "name of type %d not terminated", i)
		}
		if len(payload)-p < 4 {
			return out, payloadErr(ev, "type %d cut at offset %d", i, p)
		}
		np := binary.LittleEndian.Uint32(payload[p:])
		p += 4
		if uint64(np)*8 > uint64(len(payload)-p) {
			return out, payloadErr(ev, "type %d announces %d type parameters at offset %d", i, np, p)
		}
		if np > 0 {
			t.TypeParameters = make([]uint64, np)
			for k := range t.TypeParameters {
				t.TypeParameters[k] = binary.LittleEndian.Uint64(payload[p:])
				p += 8
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// StaticVar is one static field of a GCBulkRootStaticVar event.
type StaticVar struct {
	// RootID is the address of the static's slot.
	RootID   uint64
	ObjectID uint64
	// TypeID is the type of the object the field holds (not the type
	// that declares the field: the event does not say which that is).
	TypeID    uint64
	Flags     uint32 // 1: thread-static
	FieldName string
}

// DecodeStaticVars decodes a GCBulkRootStaticVar payload (event 38,
// version 0).
func DecodeStaticVars(payload []byte) ([]StaticVar, error) {
	const ev = "GCBulkRootStaticVar"
	if len(payload) < 14 {
		return nil, payloadErr(ev, "%d bytes, shorter than its 14-byte header", len(payload))
	}
	n := binary.LittleEndian.Uint32(payload)
	if uint64(n)*30 > uint64(len(payload)-14) {
		return nil, payloadErr(ev, "%d statics announced in %d bytes", n, len(payload))
	}
	out := make([]StaticVar, 0, n)
	p := 14
	for i := range n {
		if len(payload)-p < 28 {
			return out, payloadErr(ev, "static %d cut at offset %d", i, p)
		}
		s := StaticVar{
			RootID:   binary.LittleEndian.Uint64(payload[p:]),
			ObjectID: binary.LittleEndian.Uint64(payload[p+8:]),
			TypeID:   binary.LittleEndian.Uint64(payload[p+16:]),
			Flags:    binary.LittleEndian.Uint32(payload[p+24:]),
		}
		var ok bool
		s.FieldName, p, ok = utf16z(payload, p+28)
		if !ok {
			return out, payloadErr(ev, "field name of static %d not terminated", i)
		}
		out = append(out, s)
	}
	return out, nil
}

// CCW is a COM callable wrapper of a GCBulkRootCCW event.
type CCW struct {
	RootID, ObjectID, TypeID, IUnknown uint64
	RefCount, PeggedRefCount, Flags    uint32
}

// DecodeCCWs decodes a GCBulkRootCCW payload (event 36, version 0).
func DecodeCCWs(payload []byte) ([]CCW, error) {
	const ev, size = "GCBulkRootCCW", 44
	if len(payload) < 6 {
		return nil, payloadErr(ev, "%d bytes, shorter than its 6-byte header", len(payload))
	}
	n := binary.LittleEndian.Uint32(payload)
	if uint64(n)*size > uint64(len(payload)-6) {
		return nil, payloadErr(ev, "%d wrappers announced in %d bytes", n, len(payload))
	}
	out := make([]CCW, n)
	for i := range out {
		b := payload[6+i*size:]
		out[i] = CCW{
			RootID: binary.LittleEndian.Uint64(b), ObjectID: binary.LittleEndian.Uint64(b[8:]),
			TypeID: binary.LittleEndian.Uint64(b[16:]), IUnknown: binary.LittleEndian.Uint64(b[24:]),
			RefCount: binary.LittleEndian.Uint32(b[32:]), PeggedRefCount: binary.LittleEndian.Uint32(b[36:]),
			Flags: binary.LittleEndian.Uint32(b[40:]),
		}
	}
	return out, nil
}

// RCW is a runtime callable wrapper of a GCBulkRCW event.
type RCW struct {
	ObjectID, TypeID, IUnknown, VTable uint64
	RefCount, Flags                    uint32
}

// DecodeRCWs decodes a GCBulkRCW payload (event 37, version 0).
func DecodeRCWs(payload []byte) ([]RCW, error) {
	const ev, size = "GCBulkRCW", 40
	if len(payload) < 6 {
		return nil, payloadErr(ev, "%d bytes, shorter than its 6-byte header", len(payload))
	}
	n := binary.LittleEndian.Uint32(payload)
	if uint64(n)*size > uint64(len(payload)-6) {
		return nil, payloadErr(ev, "%d wrappers announced in %d bytes", n, len(payload))
	}
	out := make([]RCW, n)
	for i := range out {
		b := payload[6+i*size:]
		out[i] = RCW{
			ObjectID: binary.LittleEndian.Uint64(b), TypeID: binary.LittleEndian.Uint64(b[8:]),
			IUnknown: binary.LittleEndian.Uint64(b[16:]), VTable: binary.LittleEndian.Uint64(b[24:]),
			RefCount: binary.LittleEndian.Uint32(b[32:]), Flags: binary.LittleEndian.Uint32(b[36:]),
		}
	}
	return out, nil
}

// utf16z decodes a NUL-terminated UTF-16LE string at b[p:] and returns it
// with the offset after the terminator.
func utf16z(b []byte, p int) (string, int, bool) {
	for i := p; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			ascii := true
			for k := p; k < i; k += 2 {
				if b[k+1] != 0 || b[k] >= 0x80 {
					ascii = false
					break
				}
			}
			if ascii {
				s := make([]byte, (i-p)/2)
				for k := range s {
					s[k] = b[p+2*k]
				}
				return string(s), i + 2, true
			}
			u := make([]uint16, (i-p)/2)
			for k := range u {
				u[k] = binary.LittleEndian.Uint16(b[p+2*k:])
			}
			return string(utf16.Decode(u)), i + 2, true
		}
	}
	return "", p, false
}
