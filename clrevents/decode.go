package clrevents

import (
	"fmt"
	"math"

	"github.com/clrdiag/clrdiag/internal/wire"
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
	p, table := providerTable(provider)
	if e, ok := findEntry(table, id); ok && e.decode != nil {
		return e.decode(payload, version, ptrSize)
	}
	if p == "" {
		p = provider
	}
	return nil, fmt.Errorf("clrevents: decode %s/%d: %w", p, id, ErrUnknownEvent)
}

// decodeError turns the cursor's failure, if any, into a *DecodeError.
func decodeError(c *wire.Cursor, event string, version uint8) error {
	f := c.Failure()
	if f == nil {
		return nil
	}
	err := f.Err
	switch err {
	case wire.ErrShort:
		err = ErrTruncated
	case wire.ErrUnterminated:
		err = ErrUnterminatedString
	case wire.ErrCount:
		err = ErrCountTooLarge
	case wire.ErrPointerSize:
		err = ErrPointerSize
	}
	return &DecodeError{Event: event, Version: version, Field: f.Field, Offset: f.Offset, Err: err}
}

// FieldValue is one decoded field. Value holds a uint64 for the integer and
// pointer types, a float64, a string, a [16]byte GUID or a []uint32.
type FieldValue struct {
	Name  string
	Type  FieldType
	Value any
	// Hex marks addresses, ids, tokens and flags (String shows them in
	// hexadecimal).
	Hex bool
}

// String formats the value for display.
func (v FieldValue) String() string {
	switch x := v.Value.(type) {
	case uint64:
		if v.Hex || v.Type == TypePointer {
			return fmt.Sprintf("%s=0x%x", v.Name, x)
		}
		return fmt.Sprintf("%s=%d", v.Name, x)
	case string:
		return fmt.Sprintf("%s=%q", v.Name, x)
	case [16]byte:
		return v.Name + "=" + wire.FormatGUID(x)
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
	c := wire.NewCursor(payload)
	out := make([]FieldValue, 0, len(layout))
	for _, fd := range layout {
		var v any
		switch fd.Type {
		case TypeUint8:
			v = uint64(c.U8(fd.Name))
		case TypeUint16:
			v = uint64(c.U16(fd.Name))
		case TypeUint32:
			v = uint64(c.U32(fd.Name))
		case TypeUint64:
			v = c.U64(fd.Name)
		case TypeFloat64:
			v = c.F64(fd.Name)
		case TypePointer:
			v = c.Ptr(fd.Name, ptrSize)
		case TypeString:
			v = c.UTF16Z(fd.Name)
		case TypeGUID:
			v = c.GUID(fd.Name)
		case TypeUint32Array:
			n := c.Count(fd.Name, countOf(out, fd.Count), 4)
			if c.Failed() {
				break
			}
			arr := make([]uint32, n)
			for i := range arr {
				arr[i] = c.U32(fd.Name)
			}
			v = arr
		default:
			c.Fail(fd.Name, fmt.Errorf("field type %d: %w", fd.Type, ErrUnknownEvent))
		}
		if err := decodeError(&c, info.Name, version); err != nil {
			return out, err
		}
		out = append(out, FieldValue{Name: fd.Name, Type: fd.Type, Value: v, Hex: fd.Hex})
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
