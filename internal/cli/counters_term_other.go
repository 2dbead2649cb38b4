//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package cli

// isTerminalFd reports false: terminal detection is not implemented here,
// so output is plain lines.
func isTerminalFd(uintptr) bool { return false }
