//go:build (!amd64 && !arm64) || purego

package gcdump

import "unsafe"

// prefetch does nothing here: the loops that call it are correct without
// it, only slower on large heaps.
func prefetch(p unsafe.Pointer) {}
