package nettrace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/clrdiag/clrdiag/internal/wire"
)

// NamedValue is one decoded payload field.
type NamedValue struct {
	Name  string
	Value any
}

// Object is a decoded payload or nested object: its fields in payload order.
//
// Values have these Go types, by TypeCode: Boolean/Boolean8 bool, Char
// string, SByte int8, Byte uint8, Int16 int16, UInt16 uint16, Int32 int32,
// UInt32 uint32, Int64 int64, UInt64 uint64, Single float32, Double float64,
// Decimal Decimal, DateTime time.Time (UTC), Guid GUID, String string, VarInt
// int64, VarUInt uint64, UTF8CodeUnit uint8, Object Object; arrays (Array,
// FixedLengthArray, RelLoc, DataLoc) are []byte for bytes, string for Char
// and UTF8CodeUnit elements, and []any otherwise.
type Object []NamedValue

// Get returns the value of the first field called name.
func (o Object) Get(name string) (any, bool) {
	for _, f := range o {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes o as a JSON object with its fields in payload order.
// Non-finite floats become strings ("NaN", "+Inf", "-Inf").
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(jsonValue(f.Value))
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x)
		}
	case time.Time:
		if y := x.Year(); y < 0 || y > 9999 {
			// encoding/json refuses such years; keep the raw value.
			return x.Format("2006-01-02T15:04:05.9999999Z07:00")
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	}
	return v
}

// MarshalText formats g as text (used by JSON encoding).
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// Decimal is a .NET System.Decimal in its 16-byte wire layout.
type Decimal [16]byte

// String formats d in decimal notation.
func (d Decimal) String() string {
	flags := binary.LittleEndian.Uint32(d[0:])
	hi := binary.LittleEndian.Uint32(d[4:])
	lo := binary.LittleEndian.Uint32(d[8:])
	mid := binary.LittleEndian.Uint32(d[12:])
	scale := int(flags>>16) & 0xff
	n := new(big.Int).SetUint64(uint64(hi))
	n.Lsh(n, 64).Or(n, new(big.Int).SetUint64(uint64(mid)<<32|uint64(lo)))
	s := n.String()
	if scale > 0 && scale <= 28 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if flags&(1<<31) != 0 {
		s = "-" + s
	}
	return s
}

// MarshalText formats d as text.
func (d Decimal) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// maxPayloadValues bounds the number of values one payload may decode to,
// so nested arrays of empty objects cannot make decoding explode.
const maxPayloadValues = 1 << 20

// ErrNoFields is returned by DecodePayload for events whose metadata carries
// no field descriptions (the runtime's own events): their layout comes from
// the runtime's manifest, not from the trace.
var ErrNoFields = errors.New("event has no field metadata")

// DecodePayload decodes payload with the field descriptions of md. It
// returns ErrNoFields when md describes no fields but the payload is not
// empty, and an error naming the field when the payload does not match.
// Trailing bytes after the last field are ignored (newer event versions
// append fields). The result does not alias payload.
func DecodePayload(md *Metadata, payload []byte) (Object, error) {
	if md == nil {
		return nil, errors.New("nettrace: decode payload: no metadata")
	}
	if len(md.Fields) == 0 {
		if len(payload) == 0 {
			return Object{}, nil
		}
		return nil, fmt.Errorf("nettrace: decode payload of %s/%d: %w (%d bytes)", md.ProviderName, md.EventID, ErrNoFields, len(payload))
	}
	d := payloadDecoder{c: newCursor(payload), budget: maxPayloadValues}
	obj := d.object(md.Fields, 0)
	if d.c.err() != nil {
		return obj, fmt.Errorf("nettrace: decode payload of %s/%d %q: %w", md.ProviderName, md.EventID, md.EventName, d.c.err())
	}
	return obj, nil
}

type payloadDecoder struct {
	c      cursor
	budget int
}

func (d *payloadDecoder) object(fields []Field, depth int) Object {
	obj := make(Object, 0, len(fields))
	for i := range fields {
		f := &fields[i]
		v := d.value(f, depth)
		if d.c.err() != nil {
			d.c.setErr(fmt.Errorf("field %q (%v): %w", f.Name, f.Type, d.c.err()))
			return obj
		}
		obj = append(obj, NamedValue{Name: f.Name, Value: v})
	}
	return obj
}

func (d *payloadDecoder) value(f *Field, depth int) any {
	c := &d.c
	if d.budget--; d.budget < 0 {
		c.fail("payload decodes to more than %d values", maxPayloadValues)
		return nil
	}
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return nil
	}
	switch f.Type {
	case TypeObject:
		return d.object(f.Fields, depth+1)
	case TypeBoolean:
		return c.U32("") != 0
	case TypeBoolean8:
		return c.U8("") != 0
	case TypeChar:
		return string(rune(c.U16("")))
	case TypeSByte:
		return int8(c.U8(""))
	case TypeByte, TypeUTF8CodeUnit:
		return c.U8("")
	case TypeInt16:
		return int16(c.U16(""))
	case TypeUInt16:
		return c.U16("")
	case TypeInt32:
		return int32(c.U32(""))
	case TypeUInt32:
		return c.U32("")
	case TypeInt64:
		return int64(c.U64(""))
	case TypeUInt64:
		return c.U64("")
	case TypeSingle:
		return math.Float32frombits(c.U32(""))
	case TypeDouble:
		return math.Float64frombits(c.U64(""))
	case TypeDecimal:
		return Decimal(c.guid())
	case TypeDateTime:
		return fileTime(int64(c.U64("")))
	case TypeGUID:
		return c.guid()
	case TypeString:
		return c.utf16z()
	case TypeVarInt:
		return c.varint()
	case TypeVarUInt:
		return c.Uvarint("")
	case TypeArray:
		n := int(c.U16(""))
		return d.array(f.Elem, n, depth)
	case TypeFixedLengthArray:
		return d.array(f.Elem, f.Count, depth)
	case TypeRelLoc, TypeDataLoc:
		loc := c.U32("")
		size, off := int(loc>>16), int(loc&0xffff)
		if f.Type == TypeRelLoc {
			off += c.Offset()
		}
		if c.err() != nil {
			return nil
		}
		if f.Elem == nil || f.Elem.Type.fixedSize() == 0 {
			c.fail("location field needs a fixed-size element type")
			return nil
		}
		if off > len(c.Bytes()) || size > len(c.Bytes())-off {
			c.fail("%w: data at offset %d size %d is outside the %d-byte payload", errShort, off, size, len(c.Bytes()))
			return nil
		}
		sub := payloadDecoder{c: newCursor(c.Bytes()[off : off+size]), budget: d.budget}
		v := sub.array(f.Elem, size/f.Elem.Type.fixedSize(), depth)
		d.budget = sub.budget
		if sub.c.err() != nil {
			c.fail("%v", sub.c.err())
		}
		return v
	}
	c.fail("unknown type code %d", f.Type)
	return nil
}

func (d *payloadDecoder) array(elem *Field, n int, depth int) any {
	c := &d.c
	if c.err() != nil {
		return nil
	}
	if elem == nil {
		c.fail("array without element type")
		return nil
	}
	if sz := elem.Type.fixedSize(); sz > 0 && n*sz > c.remaining() {
		c.fail("%w: array of %d %v needs %d bytes, %d left", errShort, n, elem.Type, n*sz, c.remaining())
		return nil
	}
	switch elem.Type {
	case TypeByte:
		return bytes.Clone(c.Take("", n))
	case TypeUTF8CodeUnit:
		return string(c.Take("", n))
	case TypeChar:
		b := c.Take("", 2*n)
		return wire.DecodeUTF16(b)
	}
	if d.budget < n {
		c.fail("payload decodes to more than %d values", maxPayloadValues)
		return nil
	}
	out := make([]any, 0, min(n, 1024))
	for i := 0; i < n && c.err() == nil; i++ {
		out = append(out, d.value(elem, depth+1))
	}
	return out
}

// fileTime converts a Windows FILETIME (100 ns since 1601-01-01 UTC).
func fileTime(ft int64) time.Time {
	const epochDiff = 116444736000000000 // 1601 to 1970 in 100 ns units
	d := ft - epochDiff
	return time.Unix(d/1e7, (d%1e7)*100).UTC()
}
