package clrevents

import "testing"

func BenchmarkDecodeMethodLoadVerbose(b *testing.B) {
	p := (&payload{}).u64(1).u64(2).u64(0x7fff0000).u32(0x40).u32(0x06000001).u32(8).
		str("System.Collections.Generic.List`1[System.Int32]").str("Add").str("void  (!0)").u16(9).u64(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(p.b)))
	var m MethodLoadVerbose
	for b.Loop() {
		if err := DecodeMethodLoadVerboseInto(&m, p.b, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeGCStart(b *testing.B) {
	p := (&payload{}).u32(1).u32(2).u32(0).u32(0).u16(9).u64(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeGCStart(p.b, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFields decodes by the table, as trace events does: a
// verbose method event (strings) and a per-heap GC history (a struct
// array).
func BenchmarkDecodeFields(b *testing.B) {
	method := (&payload{}).u64(1).u64(2).u64(0x7fff0000).u32(0x40).u32(0x06000001).u32(8).
		str("System.Collections.Generic.List`1[System.Int32]").str("Add").str("void  (!0)").u16(9).u64(0)
	b.Run("MethodLoadVerbose", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(method.b)))
		for b.Loop() {
			if _, err := DecodeFields(ProviderRuntime, IDMethodLoadVerbose, 2, 8, method.b); err != nil {
				b.Fatal(err)
			}
		}
	})
	gcStart := (&payload{}).u32(1).u32(2).u32(0).u32(0).u16(9).u64(0)
	b.Run("GCStart", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeFields(ProviderRuntime, IDGCStart, 2, 8, gcStart.b); err != nil {
				b.Fatal(err)
			}
		}
	})
}
