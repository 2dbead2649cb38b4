package clrevents

import (
	"strconv"

	"github.com/clrdiag/clrdiag/nettrace"
)

// Hex is an address, id, token or flags field of a runtime event, as Fields
// gives it: it prints as 0x..., and is a JSON string so that 64-bit values
// survive JSON tools that read numbers as doubles.
type Hex uint64

// String formats h as 0x followed by lower-case hexadecimal digits.
func (h Hex) String() string { return "0x" + strconv.FormatUint(uint64(h), 16) }

// MarshalText formats h as String does (used by JSON encoding).
func (h Hex) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// EventVersion is the event's payload version: the V6 label list's when it
// overrides the metadata's.
func EventVersion(ev *nettrace.Event) uint32 {
	if ev.Labels != nil && ev.Labels.Version != nil {
		return uint32(*ev.Labels.Version)
	}
	return ev.Metadata.Version
}

// HasFields reports whether Fields can name the payload of events of md:
// self-describing events, and the runtime's events this package has a
// layout for.
func HasFields(md *nettrace.Metadata) bool {
	if len(md.Fields) > 0 {
		return true
	}
	if md.EventID > 0xFFFF {
		return false
	}
	info, ok := Lookup(md.ProviderName, uint16(md.EventID))
	return ok && info.HasLayout()
}

// Fields decodes an event's payload into named fields: with the trace's
// field metadata for self-describing events, with this package's table
// for the runtime's own events (addresses and ids as Hex, GUIDs as
// nettrace.GUID, struct arrays as []any of nettrace.Object). It returns
// nil for events whose layout nobody knows. ptrSize is the trace's pointer
// size (nettrace.Header.PointerSize).
func Fields(ev *nettrace.Event, ptrSize int) (nettrace.Object, error) {
	md := ev.Metadata
	if len(md.Fields) > 0 {
		return ev.Fields()
	}
	if !HasFields(md) {
		return nil, nil
	}
	return NativeFields(ev, ptrSize)
}

// NativeFields is Fields for a runtime event that HasFields accepts and
// that carries no field metadata.
func NativeFields(ev *nettrace.Event, ptrSize int) (nettrace.Object, error) {
	md := ev.Metadata
	fs, err := DecodeFields(md.ProviderName, uint16(md.EventID), uint8(min(EventVersion(ev), 255)), ptrSize, ev.Payload)
	if err != nil {
		return nil, err
	}
	return nativeObject(fs), nil
}

// nativeObject turns decoded runtime-event fields into an Object.
func nativeObject(fs []FieldValue) nettrace.Object {
	obj := make(nettrace.Object, len(fs))
	for i, fv := range fs {
		v := fv.Value
		switch x := v.(type) {
		case uint64:
			if fv.IsHex() {
				v = Hex(x)
			}
		case [16]byte:
			v = nettrace.GUID(x)
		case []uint64:
			if fv.IsHex() {
				a := make([]any, len(x))
				for j, e := range x {
					a[j] = Hex(e)
				}
				v = a
			}
		case [][]FieldValue:
			a := make([]any, len(x))
			for j, e := range x {
				a[j] = nativeObject(e)
			}
			v = a
		}
		obj[i] = nettrace.NamedValue{Name: fv.Name, Value: v}
	}
	return obj
}
