package clrevents_test

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"

	"github.com/clrdiag/clrdiag/clrevents"
)

func utf16z(b []byte, s string) []byte {
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

// A MethodDCEndVerbose rundown event names the method that owns a code range.
func Example() {
	// Payload as the runtime writes it (version 2).
	var p []byte
	p = binary.LittleEndian.AppendUint64(p, 0x7ff81234) // MethodID
	p = binary.LittleEndian.AppendUint64(p, 0x7ff80000) // ModuleID
	p = binary.LittleEndian.AppendUint64(p, 0x7ff9a000) // MethodStartAddress
	p = binary.LittleEndian.AppendUint32(p, 0x120)      // MethodSize
	p = binary.LittleEndian.AppendUint32(p, 0x06000002) // MethodToken
	p = binary.LittleEndian.AppendUint32(p, 0x8)        // MethodFlags: jitted
	p = utf16z(p, "Program")
	p = utf16z(p, "Main")
	p = utf16z(p, "void  (class System.String[])")
	p = binary.LittleEndian.AppendUint16(p, 9) // ClrInstanceID
	p = binary.LittleEndian.AppendUint64(p, 0) // ReJITID

	info, _ := clrevents.Lookup(clrevents.ProviderRundown, 144)
	v, err := clrevents.Decode(clrevents.ProviderRundown, 144, 2, 8, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := v.(clrevents.MethodLoadVerbose)
	fmt.Printf("%s: %s [%#x, %#x)\n", info.Name, m.FullName(), m.MethodStartAddress, m.MethodStartAddress+uint64(m.MethodSize))

	// The same payload cut short.
	_, err = clrevents.DecodeMethodLoadVerbose(p[:40], 2)
	fmt.Println(err)
	// Output:
	// MethodDCEndVerbose: Program.Main [0x7ff9a000, 0x7ff9a120)
	// clrevents: decode MethodLoadVerbose v2: field MethodNamespace at offset 36: string not NUL-terminated
}

// DecodeFields decodes any event with a known layout, for generic dumps.
func ExampleDecodeFields() {
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, 12) // Count
	p = binary.LittleEndian.AppendUint32(p, 1)  // Depth
	p = binary.LittleEndian.AppendUint32(p, 1)  // Reason: Induced
	p = binary.LittleEndian.AppendUint32(p, 0)  // Type
	p = binary.LittleEndian.AppendUint16(p, 9)  // ClrInstanceID
	fields, err := clrevents.DecodeFields(clrevents.ProviderRuntime, clrevents.IDGCStart, 1, 8, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fields)
	// Output: [Count=12 Depth=1 Reason=1 Type=0 ClrInstanceID=9]
}
