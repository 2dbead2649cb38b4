package nettrace

import (
	"errors"
	"fmt"
)

// maxFieldDepth bounds the nesting of Object and Array field descriptions.
const maxFieldDepth = 16

var errTooDeep = errors.New("field descriptions nested too deeply")

// parseMetadataV4 decodes a NetPerf V3 / NetTrace V4 metadata record with
// optional V5 tags.
func parseMetadataV4(b []byte) (*Metadata, error) {
	c := newCursor(b)
	md := &Metadata{}
	md.ID = c.U32("")
	md.ProviderName = c.utf16z()
	md.EventID = c.U32("")
	md.EventName = c.utf16z()
	md.Keywords = c.U64("")
	md.Version = c.U32("")
	md.Level = uint8(c.U32(""))
	if c.err() != nil {
		return nil, c.err()
	}
	if c.remaining() == 0 {
		return md, nil
	}
	// The V1 field list. Bad field lists are tolerated: the event becomes
	// field-less and the tags after the list cannot be found.
	fc := newCursorAt(b, c.Offset())
	fields := parseFieldsV1(&fc, 0)
	if fc.err() != nil {
		md.FieldsError = fc.err()
		return md, nil
	}
	md.Fields = fields
	c.Seek("", fc.Offset())
	// V5 tags.
	for c.remaining() > 0 && c.err() == nil {
		n := c.U32("")
		kind := c.U8("")
		body := c.Take("", int(min(n, 1<<30)))
		if c.err() != nil {
			md.FieldsError = fmt.Errorf("metadata tag: %w", c.err())
			break
		}
		tc := newCursor(body)
		switch kind {
		case tagKindOpCode:
			md.Opcode = tc.U8("")
		case tagKindV2Params:
			f := parseFieldsV2(&tc, 0)
			if tc.err() != nil {
				md.FieldsError = fmt.Errorf("V2Params tag: %w", tc.err())
				md.Fields = nil
			} else {
				md.Fields = f
			}
		}
	}
	return md, nil
}

func parseFieldsV1(c *cursor, depth int) []Field {
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return nil
	}
	n := c.U32("")
	if c.err() != nil {
		return nil
	}
	if int64(n)*6 > int64(c.remaining()) {
		c.fail("field count %d does not fit in %d bytes", n, c.remaining())
		return nil
	}
	fields := make([]Field, 0, min(int(n), 16)) // grows with what is parsed
	for i := uint32(0); i < n && c.err() == nil; i++ {
		var f Field
		f.Type = TypeCode(c.U32(""))
		if f.Type == TypeObject {
			f.Fields = parseFieldsV1(c, depth+1)
		}
		f.Name = c.utf16z()
		if c.err() == nil && !f.Type.Valid() {
			c.fail("field %q has unknown type code %d", f.Name, f.Type)
		}
		fields = append(fields, f)
	}
	return fields
}

func parseFieldsV2(c *cursor, depth int) []Field {
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return nil
	}
	n := c.U32("")
	if c.err() != nil {
		return nil
	}
	if int64(n)*4 > int64(c.remaining()) {
		c.fail("field count %d does not fit in %d bytes", n, c.remaining())
		return nil
	}
	fields := make([]Field, 0, min(int(n), 16)) // grows with what is parsed
	for i := uint32(0); i < n && c.err() == nil; i++ {
		start := c.Offset()
		size := c.U32("")
		if c.err() == nil && (size < 4 || int64(size) > int64(len(c.Bytes())-start)) {
			c.fail("field size %d is out of range", size)
			break
		}
		var f Field
		f.Name = c.utf16z()
		parseTypeV2(c, &f, depth)
		if c.err() == nil {
			if c.Offset() > start+int(size) {
				c.fail("field %q overruns its declared size %d", f.Name, size)
			}
			c.Seek("", start+int(size))
		}
		fields = append(fields, f)
	}
	return fields
}

// parseTypeV2 reads a V2Params type: code, then an element type for arrays
// or a nested field list for objects.
func parseTypeV2(c *cursor, f *Field, depth int) {
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return
	}
	f.Type = TypeCode(c.U32(""))
	switch f.Type {
	case TypeArray:
		f.Elem = &Field{}
		parseTypeV2(c, f.Elem, depth+1)
	case TypeObject:
		f.Fields = parseFieldsV2(c, depth+1)
	default:
		if c.err() == nil && (!f.Type.Valid() || f.Type > TypeArray) {
			c.fail("field %q has unknown type code %d", f.Name, f.Type)
		}
	}
}

// parseMetadataRowV6 decodes one V6 metadata row (after its size).
func parseMetadataRowV6(b []byte) (*Metadata, error) {
	c := newCursor(b)
	md := &Metadata{}
	md.ID = uint32(c.Uvarint(""))
	md.ProviderName = c.str8()
	md.EventID = uint32(c.Uvarint(""))
	md.EventName = c.str8()
	md.Fields = parseFieldsV6(&c, 0)
	if c.err() != nil {
		return nil, c.err()
	}
	if c.remaining() == 0 {
		return md, nil
	}
	osz := int(c.U16(""))
	ob := c.Take("", osz)
	if c.err() != nil {
		return nil, fmt.Errorf("optional metadata: %w", c.err())
	}
	oc := newCursor(ob)
	for oc.remaining() > 0 {
		switch kind := oc.U8(""); kind {
		case optOpCode:
			md.Opcode = oc.U8("")
		case optKeywords:
			md.Keywords = oc.U64("")
		case optMessageTemplate:
			md.MessageTemplate = oc.str8()
		case optDescription:
			md.Description = oc.str8()
		case optKeyValue:
			k, v := oc.str8(), oc.str8()
			if md.KeyValues == nil {
				md.KeyValues = make(map[string]string)
			}
			md.KeyValues[k] = v
		case optProviderGUID:
			md.ProviderGUID = oc.guid()
		case optLevel:
			md.Level = oc.U8("")
		case optVersion:
			md.Version = uint32(oc.U8(""))
		default:
			// Unknown kinds have no known size: stop reading options.
			oc.Seek("", len(oc.Bytes()))
		}
	}
	if oc.err() != nil {
		return nil, fmt.Errorf("optional metadata: %w", oc.err())
	}
	return md, nil
}

func parseFieldsV6(c *cursor, depth int) []Field {
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return nil
	}
	n := int(c.U16(""))
	if c.err() != nil {
		return nil
	}
	if n*4 > c.remaining() {
		c.fail("field count %d does not fit in %d bytes", n, c.remaining())
		return nil
	}
	fields := make([]Field, 0, min(int(n), 16)) // grows with what is parsed
	for i := 0; i < n && c.err() == nil; i++ {
		size := int(c.U16(""))
		body := c.Take("", size)
		if c.err() != nil {
			break
		}
		fc := newCursor(body)
		var f Field
		f.Name = fc.str8()
		parseTypeV6(&fc, &f, depth)
		if fc.err() != nil {
			c.fail("field %d: %v", i, fc.err())
			break
		}
		fields = append(fields, f)
	}
	return fields
}

func parseTypeV6(c *cursor, f *Field, depth int) {
	if depth > maxFieldDepth {
		c.fail("%w", errTooDeep)
		return
	}
	f.Type = TypeCode(c.U8(""))
	switch f.Type {
	case TypeArray, TypeFixedLengthArray, TypeRelLoc, TypeDataLoc:
		f.Elem = &Field{}
		parseTypeV6(c, f.Elem, depth+1)
		if f.Type == TypeFixedLengthArray {
			f.Count = int(c.U16(""))
		}
	case TypeObject:
		f.Fields = parseFieldsV6(c, depth+1)
	default:
		if c.err() == nil && !f.Type.Valid() {
			c.fail("field %q has unknown type code %d", f.Name, f.Type)
		}
	}
}
