//go:build !unix && !windows

package transport

import "fmt"

const ipcNetwork = NetworkUnix

func ipcDir(cfg *DiscoverConfig) (string, bool) { return cfg.tempDir(), true }

func ipcPattern(pid int) string { return fmt.Sprintf("%s%d-*-socket", socketPrefix, pid) }

// processExists cannot be answered here; no process is reported.
func processExists(pid int) bool { return false }

func processInfo(pid int) (name, cmdline string) { return "", "" }
