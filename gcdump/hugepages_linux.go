package gcdump

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back the memory of a large array with
// transparent huge pages (madvise MADV_HUGEPAGE), where the system leaves
// that to the program (/sys/kernel/mm/transparent_hugepage/enabled set to
// madvise, the default of many distributions). The analyses of a large
// heap read their arrays at random: with 4 KiB pages nearly every read
// also misses the TLB, with 2 MiB pages they rarely do. Only the 2 MiB
// pages inside the array are advised, and only memory not yet touched is
// affected; the advice is a hint, whose failure changes nothing.
func adviseHuge[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < 8<<20 {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(s))
	p := uintptr(base)
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + n) &^ (hugePage - 1)
	if end <= start {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, start-p)), end-start), madvHugepage)
}

const (
	hugePage     = 2 << 20
	madvHugepage = 14 // MADV_HUGEPAGE
)
