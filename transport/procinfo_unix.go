//go:build unix && !linux && !darwin

package transport

// processInfo is not implemented on this system: name and command line stay
// empty.
func processInfo(pid int) (name, cmdline string) { return "", "" }
