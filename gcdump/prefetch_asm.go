//go:build (amd64 || arm64) && !purego

package gcdump

import "unsafe"

// prefetch asks the processor to bring the cache line at p into its
// caches, and returns without waiting for the memory: unlike a load, a
// prefetch that misses does not hold back the instructions after it, so a
// loop can have many misses in flight while it works on what is already
// in the cache. (It may wait for the address's translation: on a virtual
// machine whose host maps memory in small pages, CPU profiles show the
// prefetches of random addresses taking samples.) It never faults,
// whatever p is.
//
//go:noescape
func prefetch(p unsafe.Pointer)
