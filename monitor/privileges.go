package monitor

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Privileges is what the monitor's own process may do to others: its user
// and the Linux capabilities that matter to it.
type Privileges struct {
	UID int
	// Known is false where capabilities are not read (not Linux).
	Known bool
	// DACOverride (CAP_DAC_OVERRIDE) opens other users' diagnostic
	// sockets and dumps; FOwner (CAP_FOWNER) makes their dumps private;
	// SysPtrace (CAP_SYS_PTRACE) reaches other users' /proc/PID/root, where
	// the sockets of processes in other containers are.
	DACOverride, FOwner, SysPtrace bool
}

// The capability bits of /proc/self/status.
const (
	capDACOverride = 1
	capFOwner      = 3
	capSysPtrace   = 19
)

// CurrentPrivileges reads this process's user and effective capabilities
// (/proc/self/status on Linux).
func CurrentPrivileges() Privileges {
	p := Privileges{UID: os.Getuid()}
	if runtime.GOOS != "linux" {
		return p
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return p
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return p
			}
			p.Known = true
			p.DACOverride = caps&(1<<capDACOverride) != 0
			p.FOwner = caps&(1<<capFOwner) != 0
			p.SysPtrace = caps&(1<<capSysPtrace) != 0
		}
	}
	return p
}

// Notes say what the monitor can reach with these privileges, and what a
// dump needs: one line each, for the monitor's start.
func (p Privileges) Notes() []string {
	if !p.Known {
		return nil
	}
	var notes []string
	switch {
	case p.UID == 0 && p.DACOverride && p.FOwner && p.SysPtrace:
		notes = append(notes, "running as root: in a cluster, run the monitor as the application's user with no capabilities (sidecar) or with only CAP_SYS_PTRACE, CAP_DAC_OVERRIDE and CAP_FOWNER (one per node); see docs/kubernetes.md")
	default:
		var have, lack []string
		for _, c := range []struct {
			ok   bool
			name string
			what string
		}{
			{p.DACOverride, "CAP_DAC_OVERRIDE", "connect to the diagnostic sockets of other users' processes and read their dumps"},
			{p.SysPtrace, "CAP_SYS_PTRACE", "find the sockets of other users' processes in other containers (their /proc/PID/root)"},
			{p.FOwner, "CAP_FOWNER", "make the dumps other users' processes write private (mode 0600)"},
		} {
			if c.ok {
				have = append(have, c.name)
			} else {
				lack = append(lack, c.name+" to "+c.what)
			}
		}
		if len(have) == 0 {
			notes = append(notes, fmt.Sprintf("running as uid %d with no capabilities: serving the .NET processes of uid %d", p.UID, p.UID))
		} else {
			notes = append(notes, fmt.Sprintf("running as uid %d with %s", p.UID, strings.Join(have, ", ")))
		}
		if len(lack) > 0 {
			notes = append(notes, "it would need "+strings.Join(lack, "; "))
		}
	}
	notes = append(notes, "a dump is written by the target's runtime (createdump, as the target's user) into --dump-dir or --artifact-dir: "+
		"that directory must be writable by the target's user and be the same path for the target and the monitor (a shared volume), "+
		"and the kernel must let createdump trace its parent (kernel.yama.ptrace_scope 0 or 1, a seccomp profile that allows ptrace)")
	return notes
}
