package clrevents

import (
	"slices"
	"sort"
)

// Keyword is a bit of a provider's keyword mask, as used to enable events.
type Keyword uint64

// Keywords of Microsoft-Windows-DotNETRuntime (the rundown provider reuses
// Loader, Jit and NGen; its start and end of enumeration are 0x40 and 0x100).
const (
	KeywordGC                        Keyword = 0x1
	KeywordGCHandle                  Keyword = 0x2
	KeywordBinder                    Keyword = 0x4
	KeywordLoader                    Keyword = 0x8
	KeywordJit                       Keyword = 0x10
	KeywordNGen                      Keyword = 0x20
	KeywordStartEnumeration          Keyword = 0x40
	KeywordEndEnumeration            Keyword = 0x80
	KeywordSecurity                  Keyword = 0x400
	KeywordAppDomainResource         Keyword = 0x800
	KeywordJitTracing                Keyword = 0x1000
	KeywordInterop                   Keyword = 0x2000
	KeywordContention                Keyword = 0x4000
	KeywordException                 Keyword = 0x8000
	KeywordThreading                 Keyword = 0x10000
	KeywordJittedMethodILToNativeMap Keyword = 0x20000
	KeywordType                      Keyword = 0x80000
	KeywordGCHeapDump                Keyword = 0x100000
	KeywordStack                     Keyword = 0x40000000
	KeywordThreadTransfer            Keyword = 0x80000000
	KeywordCompilation               Keyword = 0x1000000000
	KeywordWaitHandle                Keyword = 0x40000000000
	KeywordAllocationSampling        Keyword = 0x80000000000
)

// FieldType is the wire type of a payload field.
type FieldType uint8

// Field types. Integers are little-endian; nothing is aligned.
const (
	TypeUint8 FieldType = iota + 1
	TypeUint16
	TypeUint32
	TypeUint64
	TypeFloat64
	// TypePointer is 4 or 8 bytes depending on the trace's pointer size.
	TypePointer
	// TypeString is UTF-16LE terminated by a 16-bit NUL.
	TypeString
	TypeGUID
	// TypeUint32Array is a run of uint32 whose length is the value of the
	// earlier field named by Field.Count.
	TypeUint32Array
	TypeInt8
	TypeInt16
	TypeInt32
	TypeInt64
	TypeFloat32
	// TypeBool32 is the manifest's win:Boolean: 4 bytes, 0 false.
	TypeBool32
	// TypeAnsiString is 8-bit text terminated by a NUL byte.
	TypeAnsiString
	// TypeBinary is Field.Length bytes (a number, or the name of an earlier
	// field holding it).
	TypeBinary
	// TypeArray is Field.Count elements of type Field.Elem (an integer,
	// float, boolean or pointer type).
	TypeArray
	// TypeStruct is Field.Count repetitions of the fields Field.Fields.
	TypeStruct
)

var typeNames = [...]string{
	TypeUint8: "uint8", TypeUint16: "uint16", TypeUint32: "uint32", TypeUint64: "uint64",
	TypeFloat64: "float64", TypePointer: "pointer", TypeString: "string", TypeGUID: "guid",
	TypeUint32Array: "uint32[]", TypeInt8: "int8", TypeInt16: "int16", TypeInt32: "int32",
	TypeInt64: "int64", TypeFloat32: "float32", TypeBool32: "bool32", TypeAnsiString: "ansistring",
	TypeBinary: "binary", TypeArray: "array", TypeStruct: "struct",
}

func (t FieldType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "invalid"
}

// Field is one field of a payload layout.
type Field struct {
	Name string
	Type FieldType
	// Count gives the element count of a TypeUint32Array, TypeArray or
	// TypeStruct field: the name of an earlier field holding it, or a
	// decimal number.
	Count string
	// Length gives the byte length of a TypeBinary field, as Count does.
	Length string
	// Elem is the element type of a TypeArray field.
	Elem FieldType
	// Fields are the fields of each element of a TypeStruct field.
	Fields []Field
	// Aligned marks a TypeStruct whose elements are the runtime's C struct
	// copied as it is: each field at a multiple of its size (pointers: the
	// pointer size) from the element's start, the element padded to a
	// multiple of its largest field. The manifest does not say so; the
	// table does for the events that are sent that way (GCFitBucketInfo,
	// GCLOHCompact).
	Aligned bool
	// Hex marks addresses, ids, tokens and flags, best shown in
	// hexadecimal.
	Hex bool
}

// Info describes one event of a native runtime provider.
type Info struct {
	Provider string
	ID       uint16
	Name     string
	Keywords Keyword
	// MaxVersion is the newest payload version whose layout is known. Newer
	// versions only append fields, so they decode as MaxVersion.
	MaxVersion uint8
	// Aliases are other names people use for the event, such as
	// TraceEvent's "Task/Opcode" names ("GC/Start").
	Aliases []string
	// Task and Opcode are the manifest's task and opcode names of the
	// event's newest version ("GarbageCollection", "win:Start"); empty for
	// events the manifest does not describe.
	Task, Opcode string

	layouts [][]Field
}

// HasLayout reports whether the table knows the event's payload layout
// (DecodeFields decodes it).
func (i Info) HasLayout() bool { return len(i.layouts) > 0 }

// Fields returns the payload layout of the given version (the newest known
// layout for versions above MaxVersion); nil for a version below MaxVersion
// that the manifest does not define. The slice is a copy.
func (i Info) Fields(version uint8) []Field {
	if len(i.layouts) == 0 {
		return nil
	}
	if int(version) >= len(i.layouts) {
		version = uint8(len(i.layouts) - 1)
	}
	return slices.Clone(i.layouts[version])
}

// Lookup returns what the table knows about an event. Provider names match
// case-insensitively, as in the runtime.
func Lookup(provider string, id uint16) (Info, bool) {
	p, table := providerTable(provider)
	if table == nil {
		return Info{}, false
	}
	e, ok := findEntry(table, id)
	if !ok {
		return Info{}, false
	}
	return Info{Provider: p, ID: e.id, Name: e.name, Keywords: e.keywords,
		MaxVersion: uint8(max(len(e.layouts)-1, 0)), Aliases: slices.Clone(e.aliases),
		Task: e.task, Opcode: e.opcode, layouts: e.layouts}, true
}

// entry is a row of a provider table (events_gen.go). Rows are sorted by
// id.
type entry struct {
	id       uint16
	name     string
	keywords Keyword
	// layouts[v] is the payload of version v (nil for a version the
	// manifest does not define); nil for events known by name only.
	layouts [][]Field
	aliases []string
	// task and opcode are the manifest's names.
	task, opcode string
	// decode gives the typed value; nil for events without a typed
	// decoder.
	decode func(payload []byte, version uint8, ptrSize int) (any, error)
}

func findEntry(table []entry, id uint16) (entry, bool) {
	i := sort.Search(len(table), func(i int) bool { return table[i].id >= id })
	if i < len(table) && table[i].id == id {
		return table[i], true
	}
	return entry{}, false
}
