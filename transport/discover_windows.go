//go:build windows

package transport

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

const ipcNetwork = NetworkPipe

// ipcDir is the pipe namespace; the runtime's pipe is
// \\.\pipe\dotnet-diagnostic-PID with no key.
func ipcDir(cfg *DiscoverConfig) (string, bool) { return `\\.\pipe\`, false }

func ipcPattern(pid int) string { return fmt.Sprintf("%s%d", socketPrefix, pid) }

func processExists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// Access denied: the process exists but is protected.
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}

// processInfo returns the image name without ".exe" and, as the command
// line, the image path: the arguments would need the target's PEB.
func processInfo(pid int) (name, cmdline string) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return "", ""
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return "", ""
	}
	image := windows.UTF16ToString(buf[:n])
	return strings.TrimSuffix(filepath.Base(image), ".exe"), image
}
