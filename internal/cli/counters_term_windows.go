//go:build windows

package cli

import "golang.org/x/sys/windows"

// isTerminalFd reports whether fd is a console that understands the ANSI
// sequences of the redrawn view (virtual terminal processing is switched
// on when possible; an old console without it gets plain lines).
func isTerminalFd(fd uintptr) bool {
	var mode uint32
	h := windows.Handle(fd)
	if windows.GetConsoleMode(h, &mode) != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
