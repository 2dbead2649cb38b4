//go:build !linux

package gcdump

// adviseHuge does nothing here: transparent huge pages are Linux's.
func adviseHuge[T any](s []T) {}
