package nettrace

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestAppendStack checks that AppendStack appends the frames Frame reads,
// after what dst holds, for both pointer sizes, and leaves dst alone for an
// event without a stack.
func TestAppendStack(t *testing.T) {
	frames := []uint64{0x7ff0_0000_1234, 0x10, 0xffff_ffff, 0x8000_0000_0000_0001}
	for _, size := range []int{4, 8} {
		var raw []byte
		for _, f := range frames {
			if size == 4 {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(f))
			} else {
				raw = binary.LittleEndian.AppendUint64(raw, f)
			}
		}
		ev := Event{stack: raw, pointerSize: size}
		want := []uint64{1, 2}
		for i := range ev.StackLen() {
			want = append(want, ev.Frame(i))
		}
		if size == 4 && want[2+3] != 1 || size == 8 && !slices.Equal(want[2:], frames) {
			t.Fatalf("size %d: Frame read %x from %x", size, want[2:], frames)
		}
		prefix := make([]uint64, 2, 3) // too small: AppendStack must grow it
		prefix[0], prefix[1] = 1, 2
		if got := ev.AppendStack(prefix); !slices.Equal(got, want) {
			t.Errorf("size %d: AppendStack = %x, want %x", size, got, want)
		}
	}
	dst := []uint64{7}
	if got := (&Event{}).AppendStack(dst); !slices.Equal(got, dst) {
		t.Errorf("no stack: AppendStack = %x, want %x", got, dst)
	}
}
