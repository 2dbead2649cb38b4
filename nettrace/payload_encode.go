package nettrace

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unicode/utf16"
)

// AppendPayload encodes values (one per field, in order, with the Go types
// DecodePayload produces; see Object) as an event payload and appends it to
// dst. RelLoc and DataLoc data is placed after the last field.
func AppendPayload(dst []byte, fields []Field, values Object) ([]byte, error) {
	e := payloadEncoder{b: dst, base: len(dst)}
	if err := e.object(fields, values); err != nil {
		return dst, err
	}
	// Place deferred location data and patch the location words.
	for _, l := range e.locs {
		off := len(e.b) - e.base
		e.b = append(e.b, l.data...)
		if l.rel {
			off -= l.after
		}
		if off > 0xFFFF || len(l.data) > 0xFFFF || off < 0 {
			return dst, fmt.Errorf("nettrace: encode payload: location data out of 16-bit range")
		}
		binary.LittleEndian.PutUint32(e.b[e.base+l.at:], uint32(len(l.data))<<16|uint32(off))
	}
	return e.b, nil
}

type payloadEncoder struct {
	b    []byte
	base int
	locs []loc
}

type loc struct {
	at, after int // payload offsets of the location word and of the byte after it
	rel       bool
	data      []byte
}

func (e *payloadEncoder) object(fields []Field, values Object) error {
	if len(values) != len(fields) {
		return fmt.Errorf("nettrace: encode payload: %d values for %d fields", len(values), len(fields))
	}
	for i := range fields {
		if err := e.value(&fields[i], values[i].Value); err != nil {
			return fmt.Errorf("field %q: %w", fields[i].Name, err)
		}
	}
	return nil
}

func typeErr(f *Field, v any) error {
	return fmt.Errorf("nettrace: encode payload: %v field needs another Go type, got %T", f.Type, v)
}

func (e *payloadEncoder) value(f *Field, v any) error {
	le := binary.LittleEndian
	ok := true
	switch f.Type {
	case TypeObject:
		o, isObj := v.(Object)
		if !isObj {
			return typeErr(f, v)
		}
		return e.object(f.Fields, o)
	case TypeBoolean, TypeBoolean8:
		x, isB := v.(bool)
		var n uint32
		if x {
			n = 1
		}
		ok = isB
		if f.Type == TypeBoolean {
			e.b = le.AppendUint32(e.b, n)
		} else {
			e.b = append(e.b, byte(n))
		}
	case TypeChar:
		s, isS := v.(string)
		u := utf16.Encode([]rune(s))
		ok = isS && len(u) == 1
		if ok {
			e.b = le.AppendUint16(e.b, u[0])
		}
	case TypeSByte:
		x, isT := v.(int8)
		ok, e.b = isT, append(e.b, byte(x))
	case TypeByte, TypeUTF8CodeUnit:
		x, isT := v.(uint8)
		ok, e.b = isT, append(e.b, x)
	case TypeInt16:
		x, isT := v.(int16)
		ok, e.b = isT, le.AppendUint16(e.b, uint16(x))
	case TypeUInt16:
		x, isT := v.(uint16)
		ok, e.b = isT, le.AppendUint16(e.b, x)
	case TypeInt32:
		x, isT := v.(int32)
		ok, e.b = isT, le.AppendUint32(e.b, uint32(x))
	case TypeUInt32:
		x, isT := v.(uint32)
		ok, e.b = isT, le.AppendUint32(e.b, x)
	case TypeInt64:
		x, isT := v.(int64)
		ok, e.b = isT, le.AppendUint64(e.b, uint64(x))
	case TypeUInt64:
		x, isT := v.(uint64)
		ok, e.b = isT, le.AppendUint64(e.b, x)
	case TypeSingle:
		x, isT := v.(float32)
		ok, e.b = isT, le.AppendUint32(e.b, math.Float32bits(x))
	case TypeDouble:
		x, isT := v.(float64)
		ok, e.b = isT, le.AppendUint64(e.b, math.Float64bits(x))
	case TypeDecimal:
		x, isT := v.(Decimal)
		ok, e.b = isT, append(e.b, x[:]...)
	case TypeDateTime:
		x, isT := v.(time.Time)
		ft := x.Unix()*1e7 + int64(x.Nanosecond()/100) + 116444736000000000
		ok, e.b = isT, le.AppendUint64(e.b, uint64(ft))
	case TypeGUID:
		x, isT := v.(GUID)
		ok, e.b = isT, append(e.b, x[:]...)
	case TypeString:
		x, isT := v.(string)
		ok, e.b = isT, appendUTF16z(e.b, x)
	case TypeVarInt:
		x, isT := v.(int64)
		ok, e.b = isT, binary.AppendUvarint(e.b, uint64(x<<1^(x>>63)))
	case TypeVarUInt:
		x, isT := v.(uint64)
		ok, e.b = isT, binary.AppendUvarint(e.b, x)
	case TypeArray, TypeFixedLengthArray:
		n, err := arrayLen(f, v)
		if err != nil {
			return err
		}
		if f.Type == TypeArray {
			if n > 0xFFFF {
				return fmt.Errorf("nettrace: encode payload: array of %d elements exceeds 65535", n)
			}
			e.b = le.AppendUint16(e.b, uint16(n))
		} else if n != f.Count {
			return fmt.Errorf("nettrace: encode payload: fixed-length array needs %d elements, got %d", f.Count, n)
		}
		return e.elems(f.Elem, v)
	case TypeRelLoc, TypeDataLoc:
		sub := payloadEncoder{}
		if err := sub.elems(f.Elem, v); err != nil {
			return err
		}
		at := len(e.b) - e.base
		e.b = le.AppendUint32(e.b, 0)
		e.locs = append(e.locs, loc{at: at, after: at + 4, rel: f.Type == TypeRelLoc, data: sub.b})
	default:
		return fmt.Errorf("nettrace: encode payload: unknown type code %d", f.Type)
	}
	if !ok {
		return typeErr(f, v)
	}
	return nil
}

func arrayLen(f *Field, v any) (int, error) {
	switch x := v.(type) {
	case []byte:
		return len(x), nil
	case string:
		if f.Elem != nil && f.Elem.Type == TypeChar {
			return len(utf16.Encode([]rune(x))), nil
		}
		return len(x), nil
	case []any:
		return len(x), nil
	}
	return 0, typeErr(f, v)
}

func (e *payloadEncoder) elems(elem *Field, v any) error {
	if elem == nil {
		return fmt.Errorf("nettrace: encode payload: array without element type")
	}
	switch x := v.(type) {
	case []byte:
		e.b = append(e.b, x...)
	case string:
		if elem.Type == TypeChar {
			for _, u := range utf16.Encode([]rune(x)) {
				e.b = binary.LittleEndian.AppendUint16(e.b, u)
			}
		} else {
			e.b = append(e.b, x...)
		}
	case []any:
		for _, el := range x {
			if err := e.value(elem, el); err != nil {
				return err
			}
		}
	}
	return nil
}
