package clrevents

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/wire"
)

// buildFromLayout writes a payload for layout with a distinct value in every
// field, and returns the values it wrote by field name, as DecodeFields gives
// them. Fields that are counts or lengths of later fields get 3.
func buildFromLayout(layout []Field, ptrSize int) ([]byte, map[string]any) {
	p := &wire.Builder{PtrSize: ptrSize}
	vals := map[string]any{}
	for _, fv := range writeFields(p, layout, 0) {
		vals[fv.Name] = fv.Value
	}
	return p.B, vals
}

// writeFields appends values for layout to p and returns them; seed makes
// the values of nested elements differ.
func writeFields(p *wire.Builder, layout []Field, seed int) []FieldValue {
	counts := map[string]bool{}
	for _, fd := range layout {
		counts[fd.Count], counts[fd.Length] = true, true
	}
	var out []FieldValue
	countVal := func(ref string) int {
		if n, err := strconv.Atoi(ref); err == nil {
			return n
		}
		return 3
	}
	for i, fd := range layout {
		n := uint64(seed*1000 + i + 1)
		var v any
		switch fd.Type {
		case TypeUint8, TypeUint16, TypeUint32, TypeUint64, TypePointer, TypeInt8, TypeInt16, TypeInt32, TypeInt64:
			if counts[fd.Name] {
				n = 3
			}
			v = writeScalar(p, fd.Type, n)
		case TypeFloat32, TypeFloat64, TypeBool32, TypeString, TypeAnsiString, TypeGUID:
			v = writeScalar(p, fd.Type, n)
		case TypeUint32Array:
			arr := make([]uint32, countVal(fd.Count))
			for j := range arr {
				arr[j] = uint32(i*100 + j)
				p.U32(arr[j])
			}
			v = arr
		case TypeArray:
			k := countVal(fd.Count)
			switch fd.Elem {
			case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
				arr := make([]int64, k)
				for j := range arr {
					arr[j] = writeScalar(p, fd.Elem, uint64(j+1)).(int64)
				}
				v = arr
			case TypeFloat32, TypeFloat64:
				arr := make([]float64, k)
				for j := range arr {
					arr[j] = writeScalar(p, fd.Elem, uint64(j+1)).(float64)
				}
				v = arr
			case TypeBool32:
				arr := make([]bool, k)
				for j := range arr {
					arr[j] = writeScalar(p, fd.Elem, uint64(j+1)).(bool)
				}
				v = arr
			default:
				arr := make([]uint64, k)
				for j := range arr {
					arr[j] = writeScalar(p, fd.Elem, uint64(j+1)).(uint64)
				}
				v = arr
			}
		case TypeStruct:
			elems := make([][]FieldValue, countVal(fd.Count))
			for j := range elems {
				if !fd.Aligned {
					elems[j] = writeFields(p, fd.Fields, seed*10+j+1)
					continue
				}
				// A C struct: fields at multiples of their size from the
				// element's start, the element padded to its widest field.
				start, widest := len(p.B), 1
				for k, sf := range fd.Fields {
					size := writeSize(sf.Type, p.PtrSize)
					a := min(size, 8)
					widest = max(widest, a)
					for (len(p.B)-start)%a != 0 {
						p.U8(0xEE)
					}
					val := writeScalar(p, sf.Type, uint64(seed*1000+j*10+k+1))
					elems[j] = append(elems[j], FieldValue{Name: sf.Name, Type: sf.Type, Value: val, Hex: sf.Hex})
				}
				for (len(p.B)-start)%widest != 0 {
					p.U8(0xEE)
				}
			}
			v = elems
		case TypeBinary:
			b := make([]byte, countVal(fd.Length))
			for j := range b {
				b[j] = byte(i + j)
			}
			p.B = append(p.B, b...)
			v = b
		}
		out = append(out, FieldValue{Name: fd.Name, Type: fd.Type, Value: v, Hex: fd.Hex, Elem: fd.Elem})
	}
	return out
}

// writeSize is the wire size of a fixed-size type.
func writeSize(t FieldType, ptrSize int) int {
	switch t {
	case TypeUint8, TypeInt8:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32, TypeBool32:
		return 4
	case TypePointer:
		return ptrSize
	case TypeGUID:
		return 16
	}
	return 8
}

// writeScalar appends one value of type t made from n and returns it as
// DecodeFields gives it.
func writeScalar(p *wire.Builder, t FieldType, n uint64) any {
	switch t {
	case TypeUint8:
		v := n%200 + 0x10
		p.U8(uint8(v))
		return v
	case TypeUint16:
		v := n%60000 + 0x100
		if n == 3 {
			v = 3
		}
		p.U16(uint16(v))
		return v
	case TypeUint32:
		v := n + 0x10000
		if n == 3 {
			v = 3
		}
		p.U32(uint32(v))
		return v
	case TypeUint64:
		v := n + 0x1_0000_0000
		if n == 3 {
			v = 3
		}
		p.U64(v)
		return v
	case TypeInt8:
		p.U8(uint8(int8(-int64(n % 100))))
		return -int64(n % 100)
	case TypeInt16:
		p.U16(uint16(int16(-int64(n))))
		return -int64(n)
	case TypeInt32:
		p.U32(uint32(int32(-int64(n))))
		return -int64(n)
	case TypeInt64:
		p.U64(uint64(-int64(n)))
		return -int64(n)
	case TypeFloat32:
		v := float64(n) + 0.5
		p.U32(math.Float32bits(float32(v)))
		return v
	case TypeFloat64:
		v := float64(n) + 0.25
		p.F64(v)
		return v
	case TypeBool32:
		p.U32(uint32(n % 2))
		return n%2 == 1
	case TypePointer:
		v := n + 0x7000_0000
		p.Ptr(v)
		return v
	case TypeString:
		v := fmt.Sprintf("s%d é€😀", n)
		p.UTF16Z(v)
		return v
	case TypeAnsiString:
		v := fmt.Sprintf("a%d", n)
		p.B = append(append(p.B, v...), 0)
		return v
	case TypeGUID:
		var g [16]byte
		for j := range g {
			g[j] = byte(int(n)*16 + j)
		}
		p.GUID(g)
		return g
	}
	panic(fmt.Sprintf("writeScalar: type %v", t))
}

// typedField finds the value of a table field in a typed struct; ok is false
// when the struct has no counterpart (reserved fields).
func typedField(v reflect.Value, name string) (any, bool) {
	aliases := map[string]string{
		"ContentionFlags":    "Flags",
		"AllocationAmount64": "AllocationAmount",
		"ComObjectGuid":      "ComObjectGUID",
	}
	if a, ok := aliases[name]; ok {
		name = a
	}
	if name == "Reserved1" {
		return nil, false
	}
	if name == "CountOfMapEntries" {
		return uint64(v.FieldByName("ILOffsets").Len()), true
	}
	for _, prefix := range []string{"GenerationSize", "TotalPromotedSize"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && len(rest) == 1 {
			return v.FieldByName(prefix).Index(int(rest[0] - '0')).Uint(), true
		}
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return nil, false
	}
	switch f.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return f.Uint(), true
	}
	return f.Interface(), true
}

// TestTypedDecodersMatchTable checks every typed decoder against the layout
// table: a payload written from the table decodes to the same values with
// Decode and DecodeFields, at every known version and both pointer sizes; a
// newer version with extra trailing bytes still decodes; a payload one byte
// short fails with ErrTruncated.
func TestTypedDecodersMatchTable(t *testing.T) {
	tables := map[string][]entry{
		ProviderRuntime:        runtimeEvents[:],
		ProviderRundown:        rundownEvents[:],
		ProviderPrivate:        privateEvents[:],
		ProviderStress:         stressEvents[:],
		ProviderSampleProfiler: sampleProfilerEvents[:],
	}
	typed := 0
	for provider, table := range tables {
		for _, e := range table {
			for ver, layout := range e.layouts {
				if layout == nil {
					// A version the manifest does not define.
					if _, err := DecodeFields(provider, e.id, uint8(ver), 8, []byte{1, 2}); !errors.Is(err, ErrUnknownEvent) {
						t.Errorf("%s/%s/v%d (not in the manifest): err = %v, want ErrUnknownEvent", provider, e.name, ver, err)
					}
					continue
				}
				for _, ptrSize := range []int{4, 8} {
					name := fmt.Sprintf("%s/%s/v%d/ptr%d", provider, e.name, ver, ptrSize)
					b, want := buildFromLayout(layout, ptrSize)
					fields, err := DecodeFields(provider, e.id, uint8(ver), ptrSize, b)
					if err != nil {
						t.Fatalf("%s: DecodeFields: %v", name, err)
					}
					if len(fields) != len(layout) {
						t.Fatalf("%s: DecodeFields gave %d fields, want %d", name, len(fields), len(layout))
					}
					for _, fv := range fields {
						if !reflect.DeepEqual(fv.Value, want[fv.Name]) {
							t.Errorf("%s: DecodeFields %s = %v, want %v", name, fv.Name, fv.Value, want[fv.Name])
						}
					}
					got, err := Decode(provider, e.id, uint8(ver), ptrSize, b)
					if errors.Is(err, ErrUnknownEvent) {
						continue
					}
					if err != nil {
						t.Fatalf("%s: Decode: %v", name, err)
					}
					typed++
					rv := reflect.ValueOf(got)
					for _, fd := range layout {
						if fd.Name == "AllocationAmount" && len(layout) > 3 {
							continue // superseded by AllocationAmount64
						}
						v, ok := typedField(rv, fd.Name)
						if !ok {
							if fd.Name != "Reserved1" {
								t.Errorf("%s: %T has no field for %s", name, got, fd.Name)
							}
							continue
						}
						if !reflect.DeepEqual(v, want[fd.Name]) {
							t.Errorf("%s: typed %s = %v (%T), want %v", name, fd.Name, v, v, want[fd.Name])
						}
					}
					// A newer version with appended fields decodes the prefix.
					if _, err := Decode(provider, e.id, uint8(len(e.layouts)), ptrSize, append(b, 1, 2, 3)); ver == len(e.layouts)-1 && err != nil {
						t.Errorf("%s: newer version with trailing bytes: %v", name, err)
					}
					if len(b) > 0 {
						_, err := Decode(provider, e.id, uint8(ver), ptrSize, b[:len(b)-1])
						var de *DecodeError
						if !errors.As(err, &de) || !(errors.Is(err, ErrTruncated) || errors.Is(err, ErrUnterminatedString)) {
							t.Errorf("%s: one byte short: err = %v, want a DecodeError for truncation", name, err)
						}
						if _, err := DecodeFields(provider, e.id, uint8(ver), ptrSize, b[:len(b)-1]); err == nil {
							t.Errorf("%s: DecodeFields one byte short: no error", name)
						}
					}
				}
			}
		}
	}
	if typed < 60 {
		t.Errorf("only %d typed decodings checked", typed)
	}
}

func TestTablesSortedAndUnique(t *testing.T) {
	for name, table := range map[string][]entry{"runtime": runtimeEvents[:], "rundown": rundownEvents[:],
		"private": privateEvents[:], "stress": stressEvents[:], "sample": sampleProfilerEvents[:]} {
		for i := 1; i < len(table); i++ {
			if table[i-1].id >= table[i].id {
				t.Errorf("%s table: id %d (%s) after %d (%s)", name, table[i].id, table[i].name, table[i-1].id, table[i-1].name)
			}
		}
		for _, e := range table {
			for v, l := range e.layouts {
				for _, fd := range l {
					if fd.Type.String() == "invalid" {
						t.Errorf("%s v%d field %s: invalid type", e.name, v, fd.Name)
					}
				}
			}
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		provider string
		id       uint16
		name     string
		ok       bool
	}{
		{ProviderRuntime, 1, "GCStart", true},
		{"microsoft-windows-dotnetruntime", 80, "ExceptionThrown", true},
		{ProviderRundown, 144, "MethodDCEndVerbose", true},
		{ProviderRuntime, 144, "MethodUnloadVerbose", true},
		{ProviderRundown, 146, "DCEndComplete", true},
		{ProviderSampleProfiler, 0, "ThreadSample", true},
		{ProviderRuntime, 9999, "", false},
		{"Some-EventSource", 1, "", false},
	}
	for _, tt := range tests {
		info, ok := Lookup(tt.provider, tt.id)
		if ok != tt.ok || info.Name != tt.name {
			t.Errorf("Lookup(%q, %d) = %q, %v; want %q, %v", tt.provider, tt.id, info.Name, ok, tt.name, tt.ok)
		}
	}
	info, _ := Lookup(ProviderRuntime, IDGCAllocationTick)
	if info.MaxVersion != 4 || info.Keywords != KeywordGC {
		t.Errorf("GCAllocationTick: MaxVersion %d Keywords %#x", info.MaxVersion, info.Keywords)
	}
	f2 := info.Fields(2)
	if len(f2) != 7 || f2[5].Name != "TypeName" || len(info.Fields(200)) != 9 {
		t.Errorf("GCAllocationTick fields v2 = %v, v200 len %d", f2, len(info.Fields(200)))
	}
	f2[0].Name = "mutated"
	if info.Fields(2)[0].Name != "AllocationAmount" {
		t.Error("Fields returned the table's own slice")
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(ProviderRuntime, IDGCStart, 2, 6, nil); !errors.Is(err, ErrPointerSize) {
		t.Errorf("pointer size 6: %v", err)
	}
	if _, err := Decode(ProviderRuntime, 15, 0, 8, nil); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("BulkType: %v", err)
	}
	if _, err := DecodeFields("x", 1, 0, 8, nil); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("unknown provider: %v", err)
	}
	// A string without terminator.
	p := (&wire.Builder{}).U64(1).U64(2).U64(3).U32(4).U32(5).U32(6).U16('A').U16('B')
	_, err := DecodeMethodLoadVerbose(p.B, 2)
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "MethodNamespace" || de.Offset != 36 || !errors.Is(err, ErrUnterminatedString) {
		t.Errorf("unterminated string: %v", err)
	}
	// IL map count larger than the payload.
	p = (&wire.Builder{}).U64(1).U64(2).U8(0).U16(60000).U32(1)
	if _, err := DecodeMethodILToNativeMap(p.B, 0); !errors.Is(err, ErrCountTooLarge) {
		t.Errorf("IL map count: %v", err)
	}
	if _, err := DecodeFields(ProviderRuntime, IDMethodILToNativeMap, 0, 8, p.B); !errors.Is(err, ErrCountTooLarge) {
		t.Errorf("DecodeFields IL map count: %v", err)
	}
	if got := err.Error(); !strings.Contains(got, "MethodLoadVerbose v2") {
		t.Errorf("message %q", got)
	}
}

func TestMethodLoadVerboseAllocs(t *testing.T) {
	p := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).
		UTF16Z("System.Collections.Generic.List`1[System.Int32]").UTF16Z("Add").UTF16Z("void  (!0)").U16(9).U64(0)
	var m MethodLoadVerbose
	allocs := testing.AllocsPerRun(100, func() {
		if err := DecodeMethodLoadVerboseInto(&m, p.B, 2); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("DecodeMethodLoadVerbose: %v allocations, want at most 3 (the strings)", allocs)
	}
	if m.FullName() != "System.Collections.Generic.List`1[System.Int32].Add" || m.MethodSize != 0x40 {
		t.Errorf("decoded %+v", m)
	}
}

func TestAppendMethodNames(t *testing.T) {
	full := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).
		UTF16Z("System.Collections.Generic.List`1[System.Int32]").UTF16Z("Add").UTF16Z("void  (!0)").U16(9).U64(0)
	noNS := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).
		UTF16Z("").UTF16Z("Main").UTF16Z("Ünïcödé 日本語 😀").U16(9)
	for _, tt := range []struct {
		payload []byte
		version uint8
	}{
		{full.B, 2}, {full.B, 1}, {full.B, 0}, {full.B[:len(full.B)-1], 2}, {full.B[:40], 0},
		{noNS.B, 1}, {noNS.B, 2}, {noNS.B[:30], 0},
	} {
		checkMethodNames(t, tt.payload, tt.version)
	}
	out, n, err := AppendMethodNames(nil, full.B, 2)
	if err != nil || string(out[:n]) != "System.Collections.Generic.List`1[System.Int32].Add" || string(out[n:]) != "void  (!0)" {
		t.Errorf("AppendMethodNames = %q, %d, %v", out, n, err)
	}
	buf := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = AppendMethodNames(buf, full.B, 2) }); allocs != 0 {
		t.Errorf("AppendMethodNames into a large enough buffer: %v allocations", allocs)
	}
}

func TestGCStartVersion0(t *testing.T) {
	p := (&wire.Builder{}).U32(7).U32(1)
	e, err := DecodeGCStart(p.B, 0)
	if err != nil || e.Count != 7 || e.Reason != 1 || e.Reason.String() != "Induced" {
		t.Errorf("GCStart v0 = %+v, %v", e, err)
	}
	if GCReason(99).String() != "Reason(99)" {
		t.Errorf("unknown reason: %s", GCReason(99))
	}
}

func TestDecodeMethodRange(t *testing.T) {
	p := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).UTF16Z("N").UTF16Z("M").UTF16Z("S").U16(9)
	r, err := DecodeMethodRange(p.B, 1)
	if err != nil || r != (MethodRange{1, 2, 0x7fff0000, 0x40, 0x06000001, 8}) {
		t.Errorf("DecodeMethodRange = %+v, %v", r, err)
	}
	if _, err := DecodeMethodRange(p.B[:35], 1); !errors.Is(err, ErrTruncated) {
		t.Errorf("short: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeMethodRange(p.B, 1) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func TestEventNames(t *testing.T) {
	tests := []struct {
		provider string
		id       uint32
		md, want string
	}{
		{ProviderRuntime, 1, "", "GCStart"},
		{ProviderRundown, 144, "", "MethodDCEndVerbose"},
		{"microsoft-windows-dotnetruntimeprivate", 199, "", "PinPlugAtGCTime"},
		{ProviderSampleProfiler, 0, "", "ThreadSample"},
		{ProviderRuntime, 9999, "", ""},
		{ProviderRuntime, 1 << 20, "", ""},
		{"MySource", 1, "Tick", "Tick"},
		{ProviderRuntime, 1, "FromMetadata", "FromMetadata"},
	}
	for _, tt := range tests {
		if got := EventName(tt.provider, tt.id, tt.md); got != tt.want {
			t.Errorf("EventName(%s, %d, %q) = %q, want %q", tt.provider, tt.id, tt.md, got, tt.want)
		}
	}
	matches := []struct {
		provider string
		id       uint32
		md, want string
		ok       bool
	}{
		{ProviderRuntime, 80, "", "ExceptionThrown", true},
		{ProviderRuntime, 80, "", "exceptionthrown_v1", true},
		{ProviderRuntime, 80, "", "Exception/Start", true},
		{ProviderRuntime, 80, "", "80", true},
		{ProviderRuntime, 80, "", "81", false},
		{ProviderRuntime, 80, "", "ExceptionThrown_Vx", false},
		{ProviderRuntime, 80, "", "ExceptionThrownStop", false},
		{ProviderRuntime, 145, "", "Method/JittingStarted", true},
		{ProviderRundown, 144, "", "MethodDCEndVerbose_V2", true},
		{ProviderRundown, 144, "", "Method/DCStopVerbose", true},
		{ProviderRuntime, 144, "", "MethodDCEndVerbose", false},
		{"MySource", 3, "Request/Start", "request", true},
		{"MySource", 3, "Request/Start", "request/start", true},
		{"MySource", 3, "Request/Start", "Response", false},
		{"MySource", 3, "", "", false},
		{"MySource", 3, "", "  ", false},
	}
	for _, tt := range matches {
		if got := MatchEventName(tt.provider, tt.id, tt.md, tt.want); got != tt.ok {
			t.Errorf("MatchEventName(%s, %d, %q, %q) = %v, want %v", tt.provider, tt.id, tt.md, tt.want, got, tt.ok)
		}
	}
}
