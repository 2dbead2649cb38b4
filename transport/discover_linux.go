//go:build linux

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Read limits for /proc files: environ may legitimately be large (ARG_MAX),
// status is a few KiB, comm is 16 bytes.
const (
	maxEnvironRead = 1 << 20
	maxStatusRead  = 64 << 10
	maxCmdlineRead = 64 << 10
	maxCommRead    = 64
	maxStatRead    = 4 << 10
	maxNetUnixRead = 16 << 20 // thousands of sockets on a busy host
)

func (c *DiscoverConfig) procRoot() string {
	if c != nil && c.ProcRoot != "" {
		return c.ProcRoot
	}
	return "/proc"
}

func (c *DiscoverConfig) localOnly() bool { return c != nil && c.LocalOnly }

// readLimited reads at most limit bytes of a file into buf (reused) and
// returns the bytes read. /proc files report size 0, so the file is read
// until EOF or limit.
func readLimited(name string, buf []byte, limit int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf = buf[:0]
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), limit)
		n, err := f.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// procScanner holds the state of one discovery pass: no state outlives it.
type procScanner struct {
	cfg   *DiscoverConfig
	proc  string
	tmp   string
	buf   []byte
	dirs  map[string]dirScan // scans of other TMPDIRs and container roots
	notes []string           // problems met (Resolve reports them)

	// For the ownership check (trust_linux.go).
	idents   map[int]*procIdent
	btime    time.Time
	btimeErr error
	claims   map[[2]uint64]int // (inner pid, start) -> pid, of processes in other PID namespaces
	names    []string          // the entries of /proc, once listed
	namesErr error
}

func newProcScanner(cfg *DiscoverConfig) *procScanner {
	return &procScanner{cfg: cfg, proc: cfg.procRoot(), tmp: filepath.Clean(cfg.tempDir()),
		buf: make([]byte, 0, 4096), dirs: map[string]dirScan{}, idents: map[int]*procIdent{}}
}

// pidNames lists /proc once per scan.
func (s *procScanner) pidNames() []string {
	if s.names == nil && s.namesErr == nil {
		f, err := os.Open(s.proc)
		if err != nil {
			s.namesErr = fmt.Errorf("transport: list processes: %w (is procfs mounted at %s?)", err, s.proc)
			return nil
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			s.namesErr = fmt.Errorf("transport: list processes in %s: %w", s.proc, err)
			return nil
		}
		s.names = names
	}
	return s.names
}

func (s *procScanner) scanCached(dir string) dirScan {
	if d, ok := s.dirs[dir]; ok {
		return d
	}
	d, err := scanDir(dir, true)
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("cannot list %s: %v", dir, err))
		d = dirScan{}
	}
	s.dirs[dir] = d
	return d
}

// targetDir returns where pid's runtime puts its socket as seen from here,
// and the pid its socket is named after. ok is false when the process is gone
// or its files are unreadable; the reason is added to s.notes.
func (s *procScanner) targetDir(pid int) (dir string, nsPID int, ok bool) {
	base := filepath.Join(s.proc, strconv.Itoa(pid))
	env, err := readLimited(base+"/environ", s.buf, maxEnvironRead)
	if err != nil {
		s.note(base+"/environ", err)
		return "", 0, false
	}
	s.buf = env[:0]
	tmp, found := environValue(env, "TMPDIR")
	if !found || tmp == "" {
		tmp = "/tmp"
	}
	tmp = filepath.Clean("/" + tmp)

	status, err := readLimited(base+"/status", s.buf, maxStatusRead)
	if err != nil {
		s.note(base+"/status", err)
		return "", 0, false
	}
	s.buf = status[:0]
	ns, err := parseNSpid(status)
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("%s/status: %v", base, err))
		return "", 0, false
	}
	if len(ns) > 1 {
		// Another PID namespace: its /tmp is reachable through the
		// process's root (needs CAP_SYS_PTRACE or the same user).
		return filepath.Join(base, "root", tmp), ns[len(ns)-1], true
	}
	return tmp, pid, true
}

func (s *procScanner) note(file string, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.notes = append(s.notes, file+": the process has exited")
	case errors.Is(err, fs.ErrPermission):
		s.notes = append(s.notes, file+": permission denied (run as the target's user or as root)")
	default:
		s.notes = append(s.notes, fmt.Sprintf("%s: %v", file, err))
	}
}

// exited reports whether pid is a zombie (killed or exited, not yet reaped
// by its parent): its socket is stale. An unreadable stat says no.
func (s *procScanner) exited(pid int) bool {
	b, err := readLimited(filepath.Join(s.proc, strconv.Itoa(pid), "stat"), s.buf, maxStatRead)
	if err != nil {
		return false
	}
	s.buf = b[:0]
	st, err := parseStatState(b)
	return err == nil && (st == 'Z' || st == 'X' || st == 'x')
}

// info fills in name and command line; unreadable files leave them empty.
func (s *procScanner) info(p *Process) {
	base := filepath.Join(s.proc, strconv.Itoa(p.PID))
	var args []string
	if b, err := readLimited(base+"/cmdline", s.buf, maxCmdlineRead); err == nil {
		args = parseCmdline(b)
		p.CommandLine = strings.Join(args, " ")
		s.buf = b[:0]
	}
	if b, err := readLimited(base+"/comm", s.buf, maxCommRead); err == nil {
		p.Name = processName(string(b), args)
		s.buf = b[:0]
	} else if len(args) > 0 {
		p.Name = filepath.Base(args[0])
	}
}

func discover(ctx context.Context, cfg *DiscoverConfig) ([]Process, error) {
	s := newProcScanner(cfg)
	local, err := scanDir(s.tmp, true)
	if err != nil {
		// Keep going: other TMPDIRs and containers may still be found.
		local = dirScan{}
	}
	s.dirs[s.tmp] = local

	names := s.pidNames()
	if s.namesErr != nil {
		return nil, s.namesErr
	}
	var out []Process
	for i, name := range names {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		pid, err := parsePID(name)
		if err != nil {
			continue
		}
		p := Process{PID: pid}
		var refused []*UntrustedSocketError
		ep, found := s.pick(pid, local[pid], &refused)
		if !found && !cfg.localOnly() {
			if dir, nsPID, ok := s.targetDir(pid); ok && (dir != s.tmp || nsPID != pid) {
				if ep, found = s.pick(pid, s.scanCached(dir)[nsPID], &refused); found && nsPID != pid {
					p.NamespacePID = nsPID
				}
			}
		}
		if (!found && len(refused) == 0) || s.exited(pid) {
			continue
		}
		if cfg != nil && cfg.Untrusted != nil {
			for _, r := range refused {
				cfg.Untrusted(r)
			}
		}
		if !found {
			continue
		}
		p.Endpoint = ep
		s.info(&p)
		out = append(out, p)
	}
	return out, nil
}

func resolve(ctx context.Context, pid int, cfg *DiscoverConfig) (Endpoint, error) {
	s := newProcScanner(cfg)
	nf := &NotFoundError{PID: pid}
	base := filepath.Join(s.proc, strconv.Itoa(pid))
	if _, err := os.Stat(base); err != nil || s.exited(pid) {
		if err == nil {
			nf.Notes = append(nf.Notes, fmt.Sprintf("process %d has exited (zombie, not yet reaped by its parent)", pid))
		} else if !errors.Is(err, fs.ErrNotExist) {
			nf.Notes = append(nf.Notes, fmt.Sprintf("%s: %v", base, err))
		}
		if c, ok := s.scanCached(s.tmp).best(pid); ok {
			nf.Notes = append(nf.Notes, "ignored stale socket "+c.path+" left by an exited process")
		}
		nf.Notes = append(nf.Notes, s.notes...)
		return Endpoint{}, nf
	}
	nf.Exists = true

	var cands []candidate
	consider := func(dir string, name int) {
		nf.Checked = append(nf.Checked, filepath.Join(dir, fmt.Sprintf("%s%d-*-socket", socketPrefix, name)))
		cands = append(cands, s.scanCached(dir)[name]...)
	}
	consider(s.tmp, pid)
	if !cfg.localOnly() {
		if dir, nsPID, ok := s.targetDir(pid); ok && (dir != s.tmp || nsPID != pid) {
			consider(dir, nsPID)
		}
	}
	sortCandidates(cands)
	var refused []*UntrustedSocketError
	ep, found := s.pick(pid, cands, &refused)
	if err := ctx.Err(); err != nil {
		return Endpoint{}, err
	}
	switch {
	case found:
		return ep, nil
	case len(refused) == 1:
		return Endpoint{}, refused[0]
	case len(refused) > 1:
		errs := make([]error, len(refused))
		for i, r := range refused {
			errs[i] = r
		}
		return Endpoint{}, errors.Join(errs...)
	}
	nf.Notes = append(nf.Notes, s.notes...)
	return Endpoint{}, nf
}
