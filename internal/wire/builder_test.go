package wire

import "testing"

// What a Builder writes, a Cursor reads back, field by field, with both
// pointer sizes and text outside the BMP.
func TestBuilderRoundTrip(t *testing.T) {
	for _, ps := range []int{4, 8} {
		g := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		b := (&Builder{PtrSize: ps}).U8(7).U16(0xBEEF).U32(0xDEADBEEF).U64(1<<40 + 3).
			F64(2.5).Ptr(0x12345678).UTF16Z("héllo 🙂").GUID(g).B
		// The text is 6 BMP units and a surrogate pair, then the zero unit.
		if want := 1 + 2 + 4 + 8 + 8 + ps + 2*(6+2+1) + 16; len(b) != want {
			t.Fatalf("ptr %d: %d bytes, want %d", ps, len(b), want)
		}
		c := NewCursor(b)
		if v := c.U8("u8"); v != 7 {
			t.Errorf("U8 %d", v)
		}
		if v := c.U16("u16"); v != 0xBEEF {
			t.Errorf("U16 %#x", v)
		}
		if v := c.U32("u32"); v != 0xDEADBEEF {
			t.Errorf("U32 %#x", v)
		}
		if v := c.U64("u64"); v != 1<<40+3 {
			t.Errorf("U64 %d", v)
		}
		if v := c.F64("f64"); v != 2.5 {
			t.Errorf("F64 %v", v)
		}
		if v := c.Ptr("ptr", ps); v != 0x12345678 {
			t.Errorf("Ptr %#x", v)
		}
		if v := c.UTF16Z("s"); v != "héllo 🙂" {
			t.Errorf("UTF16Z %q", v)
		}
		if v := c.GUID("g"); v != g {
			t.Errorf("GUID %v", v)
		}
		if err := c.Err(); err != nil || c.Remaining() != 0 {
			t.Errorf("err %v, %d bytes left", err, c.Remaining())
		}
	}
}
