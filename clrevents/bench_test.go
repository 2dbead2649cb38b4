package clrevents

import (
	"testing"

	"github.com/clrdiag/clrdiag/internal/wire"
)

func BenchmarkDecodeMethodLoadVerbose(b *testing.B) {
	p := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).
		UTF16Z("System.Collections.Generic.List`1[System.Int32]").UTF16Z("Add").UTF16Z("void  (!0)").U16(9).U64(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(p.B)))
	var m MethodLoadVerbose
	for b.Loop() {
		if err := DecodeMethodLoadVerboseInto(&m, p.B, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeGCStart(b *testing.B) {
	p := (&wire.Builder{}).U32(1).U32(2).U32(0).U32(0).U16(9).U64(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeGCStart(p.B, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFields decodes by the table, as trace events does: a
// verbose method event (strings) and a per-heap GC history (a struct
// array).
func BenchmarkDecodeFields(b *testing.B) {
	method := (&wire.Builder{}).U64(1).U64(2).U64(0x7fff0000).U32(0x40).U32(0x06000001).U32(8).
		UTF16Z("System.Collections.Generic.List`1[System.Int32]").UTF16Z("Add").UTF16Z("void  (!0)").U16(9).U64(0)
	b.Run("MethodLoadVerbose", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(method.B)))
		for b.Loop() {
			if _, err := DecodeFields(ProviderRuntime, IDMethodLoadVerbose, 2, 8, method.B); err != nil {
				b.Fatal(err)
			}
		}
	})
	gcStart := (&wire.Builder{}).U32(1).U32(2).U32(0).U32(0).U16(9).U64(0)
	b.Run("GCStart", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeFields(ProviderRuntime, IDGCStart, 2, 8, gcStart.B); err != nil {
				b.Fatal(err)
			}
		}
	})
}
