//go:build darwin

package transport

import (
	"golang.org/x/sys/unix"
)

// processInfo returns the process name from the kernel's process table. The
// command line (kern.procargs2) is not read.
func processInfo(pid int) (name, cmdline string) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return "", ""
	}
	return unix.ByteSliceToString(kp.Proc.P_comm[:]), ""
}
