package clrevents

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decode decodes the payload of a native runtime event into the typed value
// of this package that matches (provider, id): for example a GCStart, a
// MethodLoadVerbose (also for the rundown's MethodDCEndVerbose), or an
// ExceptionClause. Stop events without payload decode to struct{}{}.
// ptrSize is the trace's pointer size, 4 or 8.
//
// Events that the table names but has no typed decoder for, and unknown
// events, give an error wrapping ErrUnknownEvent; DecodeFields decodes every
// event with a layout in the table.
func Decode(provider string, id uint16, version uint8, ptrSize int, payload []byte) (any, error) {
	if ptrSize != 4 && ptrSize != 8 {
		return nil, fmt.Errorf("clrevents: decode %s/%d: %w (got %d)", provider, id, ErrPointerSize, ptrSize)
	}
	p, _ := providerTable(provider)
	switch p {
	case ProviderRuntime:
		return decodeRuntime(id, version, ptrSize, payload)
	case ProviderRundown:
		return decodeRundown(id, version, payload)
	case ProviderSampleProfiler:
		if id == IDThreadSample {
			return DecodeThreadSample(payload, version)
		}
	}
	return nil, fmt.Errorf("clrevents: decode %s/%d: %w", provider, id, ErrUnknownEvent)
}

func decodeRuntime(id uint16, version uint8, ptrSize int, payload []byte) (any, error) {
	switch id {
	case IDGCStart:
		return DecodeGCStart(payload, version)
	case IDGCEnd:
		return DecodeGCEnd(payload, version)
	case IDGCRestartEEEnd, IDGCRestartEEBegin, IDGCSuspendEEEnd:
		return DecodeGCPhase(payload, version)
	case IDGCHeapStats:
		return DecodeGCHeapStats(payload, version)
	case IDGCSuspendEEBegin:
		return DecodeGCSuspendEEBegin(payload, version)
	case IDGCAllocationTick:
		return DecodeGCAllocationTick(payload, version, ptrSize)
	case IDGCTriggered:
		return DecodeGCTriggered(payload, version)
	case IDThreadPoolWorkerThreadStart, IDThreadPoolWorkerThreadStop, IDThreadPoolWorkerThreadWait:
		return DecodeThreadPoolWorkerThread(payload, version)
	case IDThreadPoolAdjustmentSample:
		return DecodeThreadPoolAdjustmentSample(payload, version)
	case IDThreadPoolAdjustment:
		return DecodeThreadPoolAdjustment(payload, version)
	case IDThreadPoolAdjustmentStats:
		return DecodeThreadPoolAdjustmentStats(payload, version)
	case IDThreadPoolEnqueue, IDThreadPoolDequeue:
		return DecodeThreadPoolWorkItem(payload, version, ptrSize)
	case IDExceptionThrown:
		return DecodeExceptionThrown(payload, version, ptrSize)
	case IDExceptionCatchStart, IDExceptionFinallyStart, IDExceptionFilterStart:
		return DecodeExceptionClause(payload, version)
	case IDExceptionCatchStop, IDExceptionFinallyStop, IDExceptionFilterStop:
		return struct{}{}, nil
	case IDContentionStart:
		return DecodeContentionStart(payload, version, ptrSize)
	case IDContentionStop:
		return DecodeContentionStop(payload, version)
	case IDMethodLoadVerbose, IDMethodUnloadVerbose:
		return DecodeMethodLoadVerbose(payload, version)
	case IDMethodJittingStarted:
		return DecodeMethodJittingStarted(payload, version)
	case IDMethodILToNativeMap:
		return DecodeMethodILToNativeMap(payload, version)
	case IDModuleLoad, IDModuleUnload:
		return DecodeModuleLoad(payload, version)
	case IDAssemblyLoad:
		return DecodeAssemblyLoad(payload, version)
	case IDRuntimeInformationStart:
		return DecodeRuntimeInformation(payload, version)
	case IDWaitHandleWaitStart:
		return DecodeWaitHandleWaitStart(payload, version, ptrSize)
	case IDWaitHandleWaitStop:
		return DecodeWaitHandleWaitStop(payload, version)
	}
	return nil, fmt.Errorf("clrevents: decode %s/%d: %w", ProviderRuntime, id, ErrUnknownEvent)
}

func decodeRundown(id uint16, version uint8, payload []byte) (any, error) {
	switch id {
	case IDMethodDCStartVerbose, IDMethodDCEndVerbose:
		return DecodeMethodLoadVerbose(payload, version)
	case IDDCStartComplete, IDDCEndComplete, IDDCStartInit, IDDCEndInit:
		return DecodeRundownMarker(payload, version)
	case IDMethodDCStartILToNativeMap, IDMethodDCEndILToNativeMap:
		return DecodeMethodILToNativeMap(payload, version)
	case IDModuleDCStart, IDModuleDCEnd:
		return DecodeModuleLoad(payload, version)
	case IDAssemblyDCStart, IDAssemblyDCEnd:
		return DecodeAssemblyLoad(payload, version)
	case IDRuntimeInformationDCStart:
		return DecodeRuntimeInformation(payload, version)
	}
	return nil, fmt.Errorf("clrevents: decode %s/%d: %w", ProviderRundown, id, ErrUnknownEvent)
}

// FieldValue is one decoded field. Value holds a uint64 for the integer and
// pointer types, a float64, a string, a [16]byte GUID or a []uint32.
type FieldValue struct {
	Name  string
	Type  FieldType
	Value any
}

// String formats the value for display.
func (v FieldValue) String() string {
	switch x := v.Value.(type) {
	case uint64:
		if v.Type == TypePointer {
			return fmt.Sprintf("%s=0x%x", v.Name, x)
		}
		return fmt.Sprintf("%s=%d", v.Name, x)
	case string:
		return fmt.Sprintf("%s=%q", v.Name, x)
	case [16]byte:
		return fmt.Sprintf("%s=%08x-%04x-%04x-%x-%x", v.Name, binary.LittleEndian.Uint32(x[0:]),
			binary.LittleEndian.Uint16(x[4:]), binary.LittleEndian.Uint16(x[6:]), x[8:10], x[10:])
	}
	return fmt.Sprintf("%s=%v", v.Name, v.Value)
}

// DecodeFields decodes any event whose layout is in the table, driven by the
// table alone; it is what a generic event dumper uses. Trailing bytes beyond
// the known layout are ignored.
func DecodeFields(provider string, id uint16, version uint8, ptrSize int, payload []byte) ([]FieldValue, error) {
	info, ok := Lookup(provider, id)
	if !ok || info.layouts == nil {
		return nil, fmt.Errorf("clrevents: decode %s/%d: %w", provider, id, ErrUnknownEvent)
	}
	if ptrSize != 4 && ptrSize != 8 {
		return nil, fmt.Errorf("clrevents: decode %s: %w (got %d)", info.Name, ErrPointerSize, ptrSize)
	}
	layout := info.layouts[min(int(version), len(info.layouts)-1)]
	c := newCursor(info.Name, payload, version, ptrSize)
	out := make([]FieldValue, 0, len(layout))
	for _, fd := range layout {
		var v any
		switch fd.Type {
		case TypeUint8:
			v = uint64(c.u8(fd.Name))
		case TypeUint16:
			v = uint64(c.u16(fd.Name))
		case TypeUint32:
			v = uint64(c.u32(fd.Name))
		case TypeUint64:
			v = c.u64(fd.Name)
		case TypeFloat64:
			v = c.f64(fd.Name)
		case TypePointer:
			v = c.ptr(fd.Name)
		case TypeString:
			v = c.str(fd.Name)
		case TypeGUID:
			v = c.guid(fd.Name)
		case TypeUint32Array:
			n := countOf(out, fd.Count)
			if c.err == nil && n > uint64(len(payload)-c.off)/4 {
				c.fail(fd.Name, ErrCountTooLarge)
			}
			if c.err != nil {
				break
			}
			arr := make([]uint32, n)
			for i := range arr {
				arr[i] = c.u32(fd.Name)
			}
			v = arr
		default:
			c.fail(fd.Name, fmt.Errorf("field type %d: %w", fd.Type, ErrUnknownEvent))
		}
		if c.err != nil {
			return out, c.err
		}
		out = append(out, FieldValue{Name: fd.Name, Type: fd.Type, Value: v})
	}
	return out, nil
}

func countOf(vals []FieldValue, name string) uint64 {
	for i := len(vals) - 1; i >= 0; i-- {
		if vals[i].Name == name {
			if n, ok := vals[i].Value.(uint64); ok {
				return n
			}
		}
	}
	return math.MaxUint64
}
