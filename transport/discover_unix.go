//go:build unix && !linux

package transport

import (
	"errors"
	"fmt"
	"syscall"
)

const ipcNetwork = NetworkUnix

func ipcDir(cfg *DiscoverConfig) (string, bool) { return cfg.tempDir(), true }

// ipcPattern names the sockets of pid; on macOS and the BSDs the key is the
// process start time in seconds since the epoch.
func ipcPattern(pid int) string { return fmt.Sprintf("%s%d-*-socket", socketPrefix, pid) }

// processExists reports whether pid exists; EPERM means it does but belongs
// to someone else.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
