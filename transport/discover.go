package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Process is a process that publishes a diagnostic endpoint.
type Process struct {
	PID         int      // process id as seen from here
	Name        string   // process name, as dotnet-trace ps shows it ("dotnet" for `dotnet app.dll`)
	CommandLine string   // arguments joined by spaces, when readable
	Endpoint    Endpoint // where its diagnostic server listens
	// NamespacePID is the pid inside the process's own PID namespace, when
	// it differs from PID (a process in a container); otherwise 0.
	NamespacePID int
}

// DiscoverConfig tunes discovery. A nil *DiscoverConfig, and the zero value
// of every field, selects the defaults.
type DiscoverConfig struct {
	// TempDir is the directory the runtime creates its sockets in when the
	// target's own TMPDIR is unknown. Default: $TMPDIR, or /tmp. Unused on
	// Windows, where the pipe namespace \\.\pipe\ is listed instead.
	TempDir string

	// ProcRoot is where procfs is mounted (Linux). Default: /proc. Tests
	// point it at a fake tree.
	ProcRoot string

	// LocalOnly skips the per-process /proc scan that finds targets with
	// another TMPDIR or in another PID/mount namespace (Linux).
	LocalOnly bool

	// TrustAnySocket turns off the ownership check (Linux): a socket named
	// after a process is then used even when another user owns it, it
	// predates the process, or it belongs to a process of another PID
	// namespace, and Dial does not check the listening process. Set it
	// only for a socket you know to be the target's.
	TrustAnySocket bool

	// Untrusted, when non-nil, is called by Discover for each socket it
	// leaves out because it fails the ownership check (a live process
	// whose other sockets pass is still listed). Resolve returns these as
	// errors instead.
	Untrusted func(*UntrustedSocketError)
}

func (c *DiscoverConfig) trustAny() bool { return c != nil && c.TrustAnySocket }

// Discover lists the processes that publish a diagnostic endpoint, sorted by
// pid. Sockets of processes that no longer exist are left out; when a process
// has several sockets the newest wins (a dsrouter socket at least as new is
// preferred). An unreadable /proc entry (kernel thread, another user's
// process, a process that just exited) is skipped, never an error.
func Discover(ctx context.Context, cfg *DiscoverConfig) ([]Process, error) {
	ps, err := discover(ctx, cfg)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ps, func(a, b Process) int { return a.PID - b.PID })
	return ps, nil
}

// Resolve finds the diagnostic endpoint of process pid. When there is none it
// returns a *NotFoundError that lists what was checked and what to try.
func Resolve(ctx context.Context, pid int, cfg *DiscoverConfig) (Endpoint, error) {
	if pid <= 0 {
		return Endpoint{}, fmt.Errorf("transport: invalid process id %d", pid)
	}
	if err := ctx.Err(); err != nil {
		return Endpoint{}, err
	}
	return resolve(ctx, pid, cfg)
}

// NameOf returns the name Discover gives process pid ("dotnet" for
// `dotnet app.dll`, as .NET's Process.ProcessName), or "" when pid is 0,
// publishes no diagnostic endpoint or cannot be listed: a name for a
// default file name or a report, where none is no failure.
func NameOf(ctx context.Context, pid int, cfg *DiscoverConfig) string {
	if pid == 0 {
		return ""
	}
	procs, err := Discover(ctx, cfg)
	if err != nil {
		return ""
	}
	for _, p := range procs {
		if p.PID == pid {
			return p.Name
		}
	}
	return ""
}

// FindByName returns the processes named name (compared without regard to
// case, and without a trailing ".exe") that publish a diagnostic endpoint,
// like dotnet-trace -n. The name is the process name ("dotnet" for
// `dotnet app.dll`). No match is a *NotFoundError; several matches are all
// returned, and callers that need one target should refuse them.
func FindByName(ctx context.Context, name string, cfg *DiscoverConfig) ([]Process, error) {
	want := strings.TrimSuffix(strings.ToLower(name), ".exe")
	if want == "" {
		return nil, errors.New("transport: empty process name")
	}
	all, err := Discover(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, p := range all {
		if strings.TrimSuffix(strings.ToLower(p.Name), ".exe") == want {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, &NotFoundError{Name: name, Checked: []string{fmt.Sprintf("%d processes with a diagnostic endpoint", len(all))}}
	}
	return out, nil
}

// candidate is one socket (or pipe) found for a pid.
type candidate struct {
	path     string
	mtime    time.Time
	dsrouter bool
	info     fs.FileInfo // from Lstat, for the ownership check
}

// better reports whether c should replace old: newer wins, and a dsrouter
// socket at least as new as a runtime socket wins.
func (c candidate) better(old candidate) bool {
	if old.path == "" {
		return true
	}
	if c.mtime.Equal(old.mtime) {
		return c.dsrouter && !old.dsrouter
	}
	if c.dsrouter && !old.dsrouter && !c.mtime.Before(old.mtime) {
		return true
	}
	return c.mtime.After(old.mtime)
}

// sortCandidates orders cs best first (see better); ties keep name order.
func sortCandidates(cs []candidate) {
	slices.SortStableFunc(cs, func(a, b candidate) int {
		switch {
		case a.better(b):
			return -1
		case b.better(a):
			return 1
		}
		return strings.Compare(a.path, b.path)
	})
}

const (
	socketPrefix   = "dotnet-diagnostic-"
	dsrouterPrefix = "dotnet-diagnostic-dsrouter-"
)

// parseEndpointName recognises the names a runtime or dsrouter publishes:
// dotnet-diagnostic-PID-KEY-socket, dotnet-diagnostic-PID (Windows pipe),
// and dotnet-diagnostic-dsrouter-PID[-KEY-socket].
func parseEndpointName(name string) (pid int, dsrouter, ok bool) {
	rest, ok := strings.CutPrefix(name, socketPrefix)
	if !ok {
		return 0, false, false
	}
	if r, isRouter := strings.CutPrefix(rest, "dsrouter-"); isRouter {
		rest, dsrouter = r, true
	}
	if r, isSocket := strings.CutSuffix(rest, "-socket"); isSocket {
		p, key, found := strings.Cut(r, "-")
		if !found || !allDigits(key) || len(key) > 20 {
			return 0, false, false
		}
		rest = p
	}
	pid, err := parsePID(rest)
	if err != nil {
		return 0, false, false
	}
	return pid, dsrouter, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dirScan is the endpoints found in one directory per pid, best first.
type dirScan map[int][]candidate

// best returns the best endpoint of pid, if any.
func (d dirScan) best(pid int) (candidate, bool) {
	if cs := d[pid]; len(cs) > 0 {
		return cs[0], true
	}
	return candidate{}, false
}

// scanDirBatch is how many entries scanDir reads at a time.
const scanDirBatch = 512

// scanDir lists dir once and keeps every endpoint per pid, best first. With
// wantSockets, entries that are not sockets are ignored. A missing
// directory is an empty result.
//
// The listing is read in batches and not sorted (os.ReadDir would hold and
// sort every entry): dir is usually /tmp, which can hold tens of thousands
// of files of which a few are endpoints, and sortCandidates orders those.
func scanDir(dir string, wantSockets bool) (dirScan, error) {
	f, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return dirScan{}, nil
		}
		return nil, err
	}
	defer f.Close()
	out := dirScan{}
	for {
		ents, err := f.ReadDir(scanDirBatch)
		for _, e := range ents {
			pid, dsr, ok := parseEndpointName(e.Name())
			if !ok {
				continue
			}
			if wantSockets && e.Type()&fs.ModeSocket == 0 {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed since ReadDir
			}
			c := candidate{path: filepath.Join(dir, e.Name()), mtime: info.ModTime(), dsrouter: dsr, info: info}
			out[pid] = append(out[pid], c)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	for _, cs := range out {
		sortCandidates(cs)
	}
	return out, nil
}
