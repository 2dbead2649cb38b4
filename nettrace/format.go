package nettrace

// This file describes the wire format as data: magic strings, object and
// block kinds, type codes and tags. The reader, the writer and the payload
// decoder all use these tables.

import "fmt"

const (
	magicNettrace = "Nettrace"
	fastSerMagic  = "!FastSerialization.1"

	// FastSerialization tags.
	tagNullReference      = 1
	tagBeginObject        = 4
	tagBeginPrivateObject = 5
	tagEndObject          = 6

	// Sizes of fixed layouts.
	traceObjectSize       = 48 // Trace object payload, NetPerf V3 and NetTrace V4.
	blockHeaderMinSize    = 20 // HeaderSize+Flags+MinTimestamp+MaxTimestamp.
	netperfEventHeaderLen = 56 // NetPerf V3 fixed event header incl. EventSize.
	v4EventHeaderLen      = 80 // Uncompressed V4 event header incl. EventSize.
	v6EventHeaderLen      = 52 // Uncompressed V6 event header incl. EventSize.

	// MaxBlockSize bounds the size of one block. Real runtimes write blocks of
	// at most a few hundred kilobytes; V6 cannot express more than 16 MiB.
	defaultMaxBlockSize = 64 << 20
)

// Format identifies the container format of a trace.
type Format int

const (
	// FormatNetPerf is the FastSerialization stream without the "Nettrace"
	// magic written by .NET Core 2.x (only object version 3 is decoded).
	FormatNetPerf Format = iota + 1
	// FormatNetTrace is the stream starting with "Nettrace": versions 4 (and
	// its "V5" metadata tags) and 6.
	FormatNetTrace
)

func (f Format) String() string {
	switch f {
	case FormatNetPerf:
		return "NetPerf"
	case FormatNetTrace:
		return "NetTrace"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Block kinds of the FastSerialization formats, by object type name.
const (
	objTrace         = "Trace"
	objEventBlock    = "EventBlock"
	objMetadataBlock = "MetadataBlock"
	objStackBlock    = "StackBlock"
	objSPBlock       = "SPBlock"
	objLegacyTrace   = "Microsoft.DotNet.Runtime.EventPipeFile"
)

// V6 block kinds (high byte of the block header).
const (
	v6EndOfStream   = 0
	v6Trace         = 1
	v6Event         = 2
	v6Metadata      = 3
	v6SequencePoint = 4
	v6Stack         = 5
	v6Thread        = 6
	v6RemoveThread  = 7
	v6LabelList     = 8
)

var v6BlockNames = [...]string{
	v6EndOfStream:   "EndOfStream",
	v6Trace:         "Trace",
	v6Event:         "Event",
	v6Metadata:      "Metadata",
	v6SequencePoint: "SequencePoint",
	v6Stack:         "Stack",
	v6Thread:        "Thread",
	v6RemoveThread:  "RemoveThread",
	v6LabelList:     "LabelList",
}

// Compressed event header flag bits.
const (
	flagMetadataID      = 0x01
	flagCaptureThread   = 0x02 // sequence delta, capture thread, processor
	flagThreadID        = 0x04
	flagStackID         = 0x08
	flagActivityID      = 0x10 // V6: label list id
	flagRelatedActivity = 0x20 // unused in V6
	flagSorted          = 0x40
	flagPayloadSize     = 0x80

	blockFlagCompressed = 0x1
)

// V5 metadata tags.
const (
	tagKindOpCode   = 1
	tagKindV2Params = 2
)

// V6 optional metadata kinds.
const (
	optOpCode          = 1
	optKeywords        = 3
	optMessageTemplate = 4
	optDescription     = 5
	optKeyValue        = 6
	optProviderGUID    = 7
	optLevel           = 8
	optVersion         = 9
)

// V6 thread block entry kinds.
const (
	threadName        = 1
	threadOSProcessID = 2
	threadOSThreadID  = 3
	threadKeyValue    = 4
)

// V6 label kinds; labelLast marks the last label of a list.
const (
	labelActivityID        = 1
	labelRelatedActivityID = 2
	labelTraceID           = 3
	labelSpanID            = 4
	labelKeyValueString    = 5
	labelKeyValueVarInt    = 6
	labelOpCode            = 7
	labelKeywords          = 8
	labelLevel             = 9
	labelVersion           = 10
	labelLast              = 0x80
)

// V6 sequence point flags.
const (
	spFlushThreads  = 1
	spFlushMetadata = 2
)

// TypeCode is the type of a payload field, as written in event metadata.
// Codes 1-18 follow System.TypeCode; 19 and up were added by later formats.
type TypeCode uint8

// Type codes.
const (
	TypeObject           TypeCode = 1
	TypeBoolean          TypeCode = 3 // 4 bytes (Boolean32 in V6)
	TypeChar             TypeCode = 4 // one UTF-16 code unit
	TypeSByte            TypeCode = 5
	TypeByte             TypeCode = 6
	TypeInt16            TypeCode = 7
	TypeUInt16           TypeCode = 8
	TypeInt32            TypeCode = 9
	TypeUInt32           TypeCode = 10
	TypeInt64            TypeCode = 11
	TypeUInt64           TypeCode = 12
	TypeSingle           TypeCode = 13
	TypeDouble           TypeCode = 14
	TypeDecimal          TypeCode = 15
	TypeDateTime         TypeCode = 16 // 8-byte FILETIME
	TypeGUID             TypeCode = 17
	TypeString           TypeCode = 18 // UTF-16, NUL-terminated
	TypeArray            TypeCode = 19 // uint16 count + elements
	TypeVarInt           TypeCode = 20 // V6: zig-zag LEB128
	TypeVarUInt          TypeCode = 21 // V6: LEB128
	TypeFixedLengthArray TypeCode = 22 // V6: count in metadata
	TypeUTF8CodeUnit     TypeCode = 23 // V6
	TypeRelLoc           TypeCode = 24 // V6: u32 size<<16|offset after field
	TypeDataLoc          TypeCode = 25 // V6: u32 size<<16|offset from payload start
	TypeBoolean8         TypeCode = 26 // V6: 1 byte
)

// typeInfo describes one type code: its name and its fixed size in payloads
// (0 when variable or composite).
type typeInfo struct {
	name string
	size int
}

var typeTable = [...]typeInfo{
	TypeObject:           {"Object", 0},
	TypeBoolean:          {"Boolean", 4},
	TypeChar:             {"Char", 2},
	TypeSByte:            {"SByte", 1},
	TypeByte:             {"Byte", 1},
	TypeInt16:            {"Int16", 2},
	TypeUInt16:           {"UInt16", 2},
	TypeInt32:            {"Int32", 4},
	TypeUInt32:           {"UInt32", 4},
	TypeInt64:            {"Int64", 8},
	TypeUInt64:           {"UInt64", 8},
	TypeSingle:           {"Single", 4},
	TypeDouble:           {"Double", 8},
	TypeDecimal:          {"Decimal", 16},
	TypeDateTime:         {"DateTime", 8},
	TypeGUID:             {"Guid", 16},
	TypeString:           {"String", 0},
	TypeArray:            {"Array", 0},
	TypeVarInt:           {"VarInt", 0},
	TypeVarUInt:          {"VarUInt", 0},
	TypeFixedLengthArray: {"FixedLengthArray", 0},
	TypeUTF8CodeUnit:     {"UTF8CodeUnit", 1},
	TypeRelLoc:           {"RelLoc", 4},
	TypeDataLoc:          {"DataLoc", 4},
	TypeBoolean8:         {"Boolean8", 1},
}

// Valid reports whether t is a type code this package knows.
func (t TypeCode) Valid() bool {
	return int(t) < len(typeTable) && typeTable[t].name != ""
}

// fixedSize is the payload size of t, or 0 if it is variable or composite.
func (t TypeCode) fixedSize() int {
	if !t.Valid() {
		return 0
	}
	return typeTable[t].size
}

func (t TypeCode) String() string {
	if t.Valid() {
		return typeTable[t].name
	}
	return fmt.Sprintf("TypeCode(%d)", uint8(t))
}
