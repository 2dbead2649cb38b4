package clrevents

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

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

// FieldValue is one decoded field. Value holds a uint64 for the unsigned
// integer and pointer types, an int64 for the signed ones, a float64 (also
// for TypeFloat32), a bool, a string, a [16]byte GUID, a []byte
// (TypeBinary, a copy), a []uint32 (TypeUint32Array), a []uint64, []int64,
// []float64 or []bool (TypeArray, by element type), or a [][]FieldValue
// (TypeStruct, one slice of fields per element).
type FieldValue struct {
	Name  string
	Value any
	Type  FieldType
	// Elem is the element type of a TypeArray.
	Elem FieldType
	// Hex marks addresses, ids, tokens and flags (String shows them in
	// hexadecimal).
	Hex bool
}

// String formats the value for display.
func (v FieldValue) String() string {
	return v.Name + "=" + formatValue(v.Value, v.IsHex())
}

// IsHex reports whether the value is best shown in hexadecimal: an address,
// id, token or flags, or an array of them.
func (v FieldValue) IsHex() bool {
	return v.Hex || v.Type == TypePointer || (v.Type == TypeArray && v.Elem == TypePointer)
}

func formatValue(val any, hex bool) string {
	switch x := val.(type) {
	case uint64:
		if hex {
			return fmt.Sprintf("0x%x", x)
		}
		return strconv.FormatUint(x, 10)
	case string:
		return strconv.Quote(x)
	case [16]byte:
		return wire.FormatGUID(x)
	case []byte:
		return fmt.Sprintf("%x", x)
	case []uint64:
		if hex {
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = fmt.Sprintf("0x%x", e)
			}
			return "[" + strings.Join(parts, " ") + "]"
		}
	case [][]FieldValue:
		var b strings.Builder
		b.WriteByte('[')
		for i, elem := range x {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte('{')
			for j, f := range elem {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(f.String())
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
		return b.String()
	}
	return fmt.Sprint(val)
}

// DecodeFields decodes any event whose layout is in the table, driven by the
// table alone; it is what a generic event dumper uses. Trailing bytes beyond
// the known layout are ignored (a newer version than the table knows
// appends fields).
func DecodeFields(provider string, id uint16, version uint8, ptrSize int, payload []byte) ([]FieldValue, error) {
	out, _, err := decodeFields(provider, id, version, ptrSize, payload)
	return out, err
}

// decodeFields is DecodeFields that also returns how many payload bytes the
// layout covered.
func decodeFields(provider string, id uint16, version uint8, ptrSize int, payload []byte) ([]FieldValue, int, error) {
	_, table := providerTable(provider)
	e, ok := findEntry(table, id)
	if !ok || e.layouts == nil {
		return nil, 0, fmt.Errorf("clrevents: decode %s/%d: %w", provider, id, ErrUnknownEvent)
	}
	if ptrSize != 4 && ptrSize != 8 {
		return nil, 0, fmt.Errorf("clrevents: decode %s: %w (got %d)", e.name, ErrPointerSize, ptrSize)
	}
	layout := e.layouts[min(int(version), len(e.layouts)-1)]
	if layout == nil {
		return nil, 0, fmt.Errorf("clrevents: decode %s v%d: the manifest has no such version: %w", e.name, version, ErrUnknownEvent)
	}
	d := fieldDecoder{c: wire.NewCursor(payload), payload: payload, ptrSize: ptrSize}
	out, err := d.fields(layout, e.name, version)
	return out, d.c.Offset(), err
}

// fieldDecoder decodes fields by layout.
type fieldDecoder struct {
	c       wire.Cursor
	payload []byte
	ptrSize int
}

// maxStructDepth bounds nested struct arrays (the manifest nests one level).
const maxStructDepth = 4

func (d *fieldDecoder) fields(layout []Field, event string, version uint8) ([]FieldValue, error) {
	return d.fieldsDepth(layout, event, version, 0)
}

func (d *fieldDecoder) fieldsDepth(layout []Field, event string, version uint8, depth int) ([]FieldValue, error) {
	out := make([]FieldValue, 0, len(layout))
	c := &d.c
	for _, fd := range layout {
		var v any
		switch fd.Type {
		// The common types first, read in place.
		case TypeUint8:
			v = uint64(c.U8(fd.Name))
		case TypeUint16:
			v = uint64(c.U16(fd.Name))
		case TypeUint32:
			v = uint64(c.U32(fd.Name))
		case TypeUint64:
			v = c.U64(fd.Name)
		case TypePointer:
			v = c.Ptr(fd.Name, d.ptrSize)
		case TypeString:
			v = c.UTF16Z(fd.Name)
		case TypeArray:
			n := d.c.Count(fd.Name, countOf(out, fd.Count), elemSize(fd.Elem, d.ptrSize))
			if d.c.Failed() {
				break
			}
			v = d.array(fd, n)
		case TypeUint32Array:
			n := d.c.Count(fd.Name, countOf(out, fd.Count), 4)
			if d.c.Failed() {
				break
			}
			arr := make([]uint32, n)
			for i := range arr {
				arr[i] = d.c.U32(fd.Name)
			}
			v = arr
		case TypeStruct:
			if depth >= maxStructDepth {
				d.c.Fail(fd.Name, fmt.Errorf("structs nested more than %d deep: %w", maxStructDepth, ErrUnknownEvent))
				break
			}
			size, align := minSize(fd.Fields, d.ptrSize), 1
			if fd.Aligned {
				size, align = alignedSize(fd.Fields, d.ptrSize)
			}
			n := d.c.Count(fd.Name, countOf(out, fd.Count), size)
			if d.c.Failed() {
				break
			}
			elems := make([][]FieldValue, 0, n)
			for range n {
				start := d.c.Offset()
				var e []FieldValue
				var err error
				if fd.Aligned {
					e, err = d.alignedFields(fd.Fields, start, event, version)
					d.pad(fd.Name, start, align)
				} else {
					e, err = d.fieldsDepth(fd.Fields, event, version, depth+1)
				}
				if err == nil {
					err = decodeError(&d.c, event, version)
				}
				if err != nil {
					return out, err
				}
				elems = append(elems, e)
			}
			v = elems
		case TypeBinary:
			n := d.c.Count(fd.Name, countOf(out, fd.Length), 1)
			if p := d.c.Take(fd.Name, n); p != nil || n == 0 {
				v = bytes.Clone(p)
				if v.([]byte) == nil {
					v = []byte{}
				}
			}
		default:
			v = d.scalar(fd.Type, fd.Name)
		}
		if err := decodeError(&d.c, event, version); err != nil {
			return out, err
		}
		out = append(out, FieldValue{Name: fd.Name, Type: fd.Type, Value: v, Hex: fd.Hex, Elem: fd.Elem})
	}
	return out, nil
}

// scalar reads one value of a fixed-size or string type.
func (d *fieldDecoder) scalar(t FieldType, name string) any {
	c := &d.c
	switch t {
	case TypeUint8:
		return uint64(c.U8(name))
	case TypeUint16:
		return uint64(c.U16(name))
	case TypeUint32:
		return uint64(c.U32(name))
	case TypeUint64:
		return c.U64(name)
	case TypeInt8:
		return int64(int8(c.U8(name)))
	case TypeInt16:
		return int64(int16(c.U16(name)))
	case TypeInt32:
		return int64(int32(c.U32(name)))
	case TypeInt64:
		return int64(c.U64(name))
	case TypeFloat32:
		return float64(math.Float32frombits(c.U32(name)))
	case TypeFloat64:
		return c.F64(name)
	case TypeBool32:
		return c.U32(name) != 0
	case TypePointer:
		return c.Ptr(name, d.ptrSize)
	case TypeString:
		return c.UTF16Z(name)
	case TypeAnsiString:
		rest := d.payload[c.Offset():]
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			c.Fail(name, wire.ErrUnterminated)
			return ""
		}
		s := string(c.Take(name, i))
		c.Take(name, 1)
		return s
	case TypeGUID:
		return c.GUID(name)
	}
	c.Fail(name, fmt.Errorf("field type %d: %w", t, ErrUnknownEvent))
	return nil
}

// array reads n elements of a TypeArray field.
func (d *fieldDecoder) array(fd Field, n int) any {
	switch fd.Elem {
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i], _ = d.scalar(fd.Elem, fd.Name).(int64)
		}
		return a
	case TypeFloat32, TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i], _ = d.scalar(fd.Elem, fd.Name).(float64)
		}
		return a
	case TypeBool32:
		a := make([]bool, n)
		for i := range a {
			a[i], _ = d.scalar(fd.Elem, fd.Name).(bool)
		}
		return a
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64, TypePointer:
		a := make([]uint64, n)
		for i := range a {
			a[i], _ = d.scalar(fd.Elem, fd.Name).(uint64)
		}
		return a
	}
	d.c.Fail(fd.Name, fmt.Errorf("array of field type %d: %w", fd.Elem, ErrUnknownEvent))
	return nil
}

// elemSize is the wire size of a fixed-size type; the smallest size for
// the others (a string is at least its terminator).
func elemSize(t FieldType, ptrSize int) int {
	switch t {
	case TypeUint8, TypeInt8, TypeAnsiString:
		return 1
	case TypeUint16, TypeInt16, TypeString:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32, TypeBool32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	case TypePointer:
		return ptrSize
	case TypeGUID:
		return 16
	}
	return 0 // arrays, structs and binary may be empty
}

// alignedFields reads the fixed-size fields of an Aligned struct element
// that starts at payload offset start.
func (d *fieldDecoder) alignedFields(fs []Field, start int, event string, version uint8) ([]FieldValue, error) {
	out := make([]FieldValue, 0, len(fs))
	for _, f := range fs {
		size := elemSize(f.Type, d.ptrSize)
		if size == 0 || f.Type == TypeString || f.Type == TypeAnsiString {
			d.c.Fail(f.Name, fmt.Errorf("%s field in an aligned struct: %w", f.Type, ErrUnknownEvent))
			return out, decodeError(&d.c, event, version)
		}
		d.pad(f.Name, start, min(size, 8))
		out = append(out, FieldValue{Name: f.Name, Type: f.Type, Value: d.scalar(f.Type, f.Name), Hex: f.Hex})
	}
	return out, decodeError(&d.c, event, version)
}

// pad skips to the next multiple of align bytes from start.
func (d *fieldDecoder) pad(field string, start, align int) {
	if k := (d.c.Offset() - start) % align; k != 0 {
		d.c.Take(field, align-k)
	}
}

// alignedSize is the size of one element of an Aligned struct and its
// alignment (its largest field's).
func alignedSize(fs []Field, ptrSize int) (size, align int) {
	align = 1
	for _, f := range fs {
		s := max(elemSize(f.Type, ptrSize), 1)
		a := min(s, 8)
		size = (size+a-1)/a*a + s
		align = max(align, a)
	}
	return (size + align - 1) / align * align, align
}

// minSize is the smallest wire size of one element of a struct.
func minSize(fs []Field, ptrSize int) int {
	n := 0
	for _, f := range fs {
		n += elemSize(f.Type, ptrSize)
	}
	return n
}

// countOf resolves a Count or Length: a decimal number, or the value of the
// earlier integer field of that name (MaxUint64, which no payload can hold,
// when there is none).
func countOf(vals []FieldValue, ref string) uint64 {
	if n, err := strconv.ParseUint(ref, 10, 32); err == nil {
		return n
	}
	for i := len(vals) - 1; i >= 0; i-- {
		if vals[i].Name == ref {
			switch n := vals[i].Value.(type) {
			case uint64:
				return n
			case int64:
				if n >= 0 {
					return uint64(n)
				}
			}
		}
	}
	return math.MaxUint64
}
