//go:build linux

package transport

import (
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of starttime in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// startSlack is how much earlier than the process's start, as computed from
// /proc/stat btime (whole seconds) and its starttime, a socket may have been
// created and still be accepted: it absorbs small steps of the system clock.
const startSlack = 2 * time.Second

// procIdent is what the ownership check needs to know about a process.
type procIdent struct {
	uids  [4]uint32 // real, effective, saved, file-system
	nspid []int     // outermost first
	start uint64    // clock ticks after boot
	err   error     // why the above could not be read
}

// ident reads (once per scan) the uids, NSpid and start time of pid.
func (s *procScanner) ident(pid int) *procIdent {
	if id, ok := s.idents[pid]; ok {
		return id
	}
	id := &procIdent{}
	s.idents[pid] = id
	base := filepath.Join(s.proc, strconv.Itoa(pid))
	status, err := readLimited(base+"/status", s.buf, maxStatusRead)
	if err != nil {
		id.err = err
		return id
	}
	s.buf = status[:0]
	if id.uids, err = parseStatusUIDs(status); err == nil {
		id.nspid, err = parseNSpid(status)
	}
	if err != nil {
		id.err = fmt.Errorf("%s/status: %w", base, err)
		return id
	}
	stat, err := readLimited(base+"/stat", s.buf, maxStatRead)
	if err != nil {
		id.err = err
		return id
	}
	s.buf = stat[:0]
	if id.start, err = parseStatStart(stat); err != nil {
		id.err = fmt.Errorf("%s/stat: %w", base, err)
	}
	return id
}

// bootTime reads (once per scan) the boot time from /proc/stat.
func (s *procScanner) bootTime() (time.Time, error) {
	if s.btime.IsZero() && s.btimeErr == nil {
		b, err := readLimited(filepath.Join(s.proc, "stat"), nil, 1<<20)
		var sec int64
		if err == nil {
			sec, err = parseBootTime(b)
		}
		if err != nil {
			s.btimeErr = fmt.Errorf("boot time from %s/stat: %w", s.proc, err)
		} else {
			s.btime = time.Unix(sec, 0)
		}
	}
	return s.btime, s.btimeErr
}

// claimant returns the process, other than pid, whose innermost pid is
// namePID and which started at key clock ticks after boot: the process a
// runtime socket named dotnet-diagnostic-namePID-key-socket belongs to when
// it lives in another PID namespace that shares this temp dir. 0 when there
// is none. The first call scans every process.
func (s *procScanner) claimant(pid, namePID int, key uint64) int {
	if s.claims == nil {
		s.claims = map[[2]uint64]int{}
		for _, name := range s.pidNames() {
			p, err := parsePID(name)
			if err != nil {
				continue
			}
			id := s.ident(p)
			if id.err != nil || len(id.nspid) < 2 {
				continue
			}
			s.claims[[2]uint64{uint64(id.nspid[len(id.nspid)-1]), id.start}] = p
		}
	}
	if c := s.claims[[2]uint64{uint64(namePID), key}]; c != pid {
		return c
	}
	return 0
}

// verify checks that candidate c, a socket named after a pid (namePID: pid
// itself, or its pid in its own PID namespace), belongs to
// process pid (as seen from here): its owner is the process's effective or
// file-system uid, it was created no earlier than the process started, and,
// for a runtime socket whose name does not record pid's start time, no
// process of another PID namespace with that inner pid and start time
// claims it.
func (s *procScanner) verify(pid int, c candidate) *UntrustedSocketError {
	namePID, _, _ := parseEndpointName(filepath.Base(c.path))
	refuse := func(format string, args ...any) *UntrustedSocketError {
		return &UntrustedSocketError{PID: pid, Path: c.path, Reason: fmt.Sprintf(format, args...)}
	}
	stale := func(format string, args ...any) *UntrustedSocketError {
		e := refuse(format, args...)
		e.Stale = true
		return e
	}
	st, ok := c.info.Sys().(*syscall.Stat_t)
	if !ok {
		return refuse("its owner cannot be read")
	}
	id := s.ident(pid)
	if id.err != nil {
		return refuse("the process's owner and start time cannot be read: %v", id.err)
	}
	if st.Uid != id.uids[1] && st.Uid != id.uids[3] {
		return refuse("the socket is owned by uid %d, but the process runs as uid %d", st.Uid, id.uids[1])
	}
	bt, err := s.bootTime()
	if err != nil {
		return refuse("the process's start time cannot be computed: %v", err)
	}
	started := bt.Add(time.Duration(id.start) * (time.Second / clockTicks))
	created := time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)) // int32 on 32-bit Linux
	if created.Before(started.Add(-startSlack)) {
		return stale("the socket was created at %s, %v before the process started at %s "+
			"(a stale socket of an earlier process with this pid, or one made in advance)",
			created.Format(time.RFC3339), started.Sub(created).Round(time.Millisecond), started.Format(time.RFC3339))
	}
	if !c.dsrouter {
		if key, ok := socketKey(filepath.Base(c.path)); ok && key != id.start {
			if other := s.claimant(pid, namePID, key); other != 0 {
				return refuse("the socket belongs to process %d, which is pid %d in another PID namespace "+
					"and started at the time the socket's name records", other, namePID)
			}
			// A runtime names its socket after its own start time, so
			// this socket is not pid's runtime's unless pid listens on it.
			// A stale one (its runtime is gone, often a process of a PID
			// namespace that has ended, its pid now the host's pid 1 or 2)
			// has no listener at all.
			if live, known := s.listening(pid, filepath.Base(c.path)); known && !live {
				return stale("nobody listens on it, and its name records a start time (%d) other than "+
					"the process's (%d): a stale socket of an exited runtime with this pid, in this or "+
					"another PID namespace", key, id.start)
			}
		}
	}
	return nil
}

// listening reports whether a Unix socket whose path ends in /base is
// listening in pid's network namespace, from /proc/PID/net/unix. known is
// false when that cannot be told (the file is unreadable or cut short).
func (s *procScanner) listening(pid int, base string) (live, known bool) {
	b, err := readLimited(filepath.Join(s.proc, strconv.Itoa(pid), "net/unix"), nil, maxNetUnixRead)
	if err != nil {
		return false, false
	}
	if listensOn(b, base) {
		return true, true
	}
	return false, len(b) < maxNetUnixRead
}

// pick returns the first of cands (best first) that belongs to pid, adding
// the refused ones to *refused. With TrustAnySocket the first is taken as
// is.
func (s *procScanner) pick(pid int, cands []candidate, refused *[]*UntrustedSocketError) (Endpoint, bool) {
	for _, c := range cands {
		if s.cfg.trustAny() {
			return Endpoint{Network: NetworkUnix, Address: c.path, PID: pid}, true
		}
		if err := s.verify(pid, c); err != nil {
			*refused = append(*refused, err)
			continue
		}
		return Endpoint{Network: NetworkUnix, Address: c.path, PID: pid, CheckPeer: true}, true
	}
	return Endpoint{}, false
}
