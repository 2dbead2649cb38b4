package transport

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Parsers for the few /proc/PID files discovery reads. They are pure
// functions over bytes so that they are fuzzed and tested on every OS.

// maxNSLevels bounds the NSpid entries accepted: the kernel nests PID
// namespaces at most 32 deep.
const maxNSLevels = 32

// procLine returns what follows prefix on the first line of a /proc file
// (status, stat) that starts with it.
func procLine(file []byte, prefix string) (rest []byte, ok bool) {
	for len(file) > 0 {
		line := file
		if i := bytes.IndexByte(file, '\n'); i >= 0 {
			line, file = file[:i], file[i+1:]
		} else {
			file = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
			return rest, true
		}
	}
	return nil, false
}

// parseNSpid returns the pids listed on the "NSpid:" line of a
// /proc/PID/status file, outermost namespace first. A status without an
// NSpid line (kernels before 4.1) yields nil and no error.
func parseNSpid(status []byte) ([]int, error) {
	if rest, ok := procLine(status, "NSpid:"); ok {
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return nil, errors.New("empty NSpid line")
		}
		if len(fields) > maxNSLevels {
			return nil, fmt.Errorf("NSpid line has %d entries, more than %d namespace levels", len(fields), maxNSLevels)
		}
		pids := make([]int, len(fields))
		for i, f := range fields {
			n, err := parsePID(string(f))
			if err != nil {
				return nil, fmt.Errorf("NSpid entry %q: %w", f, err)
			}
			pids[i] = n
		}
		return pids, nil
	}
	return nil, nil
}

// parsePID parses a positive decimal pid that fits in 31 bits.
func parsePID(s string) (int, error) {
	if s == "" || len(s) > 10 {
		return 0, errors.New("not a pid")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a pid")
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, errors.New("not a pid")
	}
	return int(n), nil
}

// environValue returns the value of key in a NUL-separated environment
// block such as /proc/PID/environ. With duplicates the first one wins, as
// with getenv(3), which is how the runtime reads it.
func environValue(environ []byte, key string) (string, bool) {
	for len(environ) > 0 {
		kv := environ
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			kv, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if len(kv) > len(key) && kv[len(key)] == '=' && string(kv[:len(key)]) == key {
			return string(kv[len(key)+1:]), true
		}
	}
	return "", false
}

// parseCmdline splits a /proc/PID/cmdline block into arguments. A process
// that rewrote its argv may use spaces instead of NULs; that yields one
// argument.
func parseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// commLen is the longest comm value the kernel keeps (TASK_COMM_LEN-1).
const commLen = 15

// processName returns the name tools show for a process: its comm, or the
// base name of argv[0] when comm is that name cut to 15 bytes.
func processName(comm string, args []string) string {
	comm = strings.TrimSuffix(comm, "\n")
	if len(comm) == commLen && len(args) > 0 {
		if base := path.Base(args[0]); len(base) > commLen && strings.HasPrefix(base, comm) {
			return base
		}
	}
	return comm
}

// parseStatState returns the state letter of a /proc/PID/stat line (R, S,
// D, Z, X, ...). The command name in parentheses may itself contain spaces
// and parentheses, so the state is found after the last ')'.
func parseStatState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, errors.New("malformed stat line")
	}
	st := stat[i+2]
	if st < 'A' || st > 'z' {
		return 0, fmt.Errorf("malformed stat state %q", st)
	}
	return st, nil
}

// parseStatusUIDs returns the real, effective, saved and file-system uids
// listed on the "Uid:" line of a /proc/PID/status file.
func parseStatusUIDs(status []byte) (uids [4]uint32, err error) {
	if rest, ok := procLine(status, "Uid:"); ok {
		fields := bytes.Fields(rest)
		if len(fields) != 4 {
			return uids, fmt.Errorf("status line Uid: has %d entries, want 4", len(fields))
		}
		for i, f := range fields {
			n, err := strconv.ParseUint(string(f), 10, 32)
			if err != nil {
				return uids, fmt.Errorf("status line Uid: entry %q is not a uid", f)
			}
			uids[i] = uint32(n)
		}
		return uids, nil
	}
	return uids, errors.New("no Uid line")
}

// parseStatStart returns field 22 of a /proc/PID/stat line, the time the
// process started in clock ticks after boot. The runtime names its socket
// after this value (dotnet-diagnostic-PID-STARTTIME-socket). Fields are
// counted after the last ')', as the command name may hold anything.
func parseStatStart(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat line")
	}
	// After ") " come field 3 (state) onwards: starttime is the 20th of them.
	fields := bytes.Fields(stat[i+1:])
	const idx = 22 - 3
	if len(fields) <= idx {
		return 0, fmt.Errorf("stat line has %d fields, want at least 22", len(fields)+2)
	}
	n, err := strconv.ParseUint(string(fields[idx]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat starttime %q: not a number", fields[idx])
	}
	return n, nil
}

// parseBootTime returns the "btime" value of /proc/stat: the boot time in
// whole seconds since the epoch.
func parseBootTime(stat []byte) (int64, error) {
	if rest, ok := procLine(stat, "btime "); ok {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("btime %q: not a time", bytes.TrimSpace(rest))
		}
		return n, nil
	}
	return 0, errors.New("no btime line")
}

// socketKey returns the disambiguation key of a runtime socket name
// (dotnet-diagnostic-PID-KEY-socket): the process start time, in clock ticks
// after boot on Linux. ok is false for names without one.
func socketKey(name string) (key uint64, ok bool) {
	rest, found := strings.CutSuffix(name, "-socket")
	if !found {
		return 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return 0, false
	}
	k, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return 0, false
	}
	return k, true
}

// listensOn reports whether a /proc/PID/net/unix table lists a listening
// socket whose path ends in /base. Its lines read
// "Num RefCount Protocol Flags Type St Inode Path", Flags in hex with
// __SO_ACCEPTCON (0x10000) set on a listening socket.
func listensOn(table []byte, base string) bool {
	for len(table) > 0 {
		line := table
		if i := bytes.IndexByte(table, '\n'); i >= 0 {
			line, table = table[:i], table[i+1:]
		} else {
			table = nil
		}
		f := strings.Fields(string(line))
		if len(f) < 8 {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&0x10000 == 0 {
			continue
		}
		path := strings.Join(f[7:], " ")
		if path == base || strings.HasSuffix(path, "/"+base) {
			return true
		}
	}
	return false
}
