package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/transport"
)

// procFS reads process facts from a /proc tree; tests use a fake one.
type procFS struct{ root string }

var hostProc = procFS{root: "/proc"}

func (p procFS) read(pid int, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(p.root, strconv.Itoa(pid), name))
}

// comm is the kernel's name of pid, or "".
func (p procFS) comm(pid int) string {
	b, err := p.read(pid, "comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// explainNotFound turns transport's *NotFoundError (which lists every
// possible cause) into one short message with the cause that applies, found
// by looking at the process; other errors pass through. It always exits
// exitNotFound.
func explainNotFound(err error, procs []transport.Process, proc procFS) error {
	var ue *transport.UntrustedSocketError
	if errors.As(err, &ue) {
		// The library's text names its own option; a user needs the flag.
		return &ExitError{Code: exitNotFound, Err: fmt.Errorf("refusing diagnostic socket %s for process %d: %s (anyone can create a socket with that name in a shared temp dir; if you know it is the target's, give --trust-socket)",
			termsafe.String(ue.Path), ue.PID, ue.Reason)}
	}
	var nf *transport.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	if nf.Name != "" {
		return &ExitError{Code: exitNotFound, Err: nameNotFound(nf.Name, procs)}
	}
	if !nf.Exists {
		return &ExitError{Code: exitNotFound, Err: fmt.Errorf("process %d does not exist (or is not visible from this PID namespace); run 'clrdiag ps' to list .NET processes", nf.PID)}
	}
	return &ExitError{Code: exitNotFound, Err: pidNotFound(nf, proc)}
}

// nameNotFound explains that no .NET process is named name.
func nameNotFound(name string, procs []transport.Process) error {
	if len(procs) == 0 {
		return fmt.Errorf("no .NET process named %q: clrdiag sees no .NET process at all (see 'clrdiag ps --help' for what makes one visible)", name)
	}
	// `dotnet target.dll` is named dotnet: find the app the user meant.
	want := strings.ToLower(strings.TrimSuffix(name, ".exe"))
	var hosted []string
	for _, p := range procs {
		for _, a := range strings.Fields(p.CommandLine) {
			base := strings.ToLower(filepath.Base(a))
			if base == want+".dll" || base == want {
				hosted = append(hosted, fmt.Sprintf("pid %d (%s)", p.PID, termsafe.String(p.CommandLine)))
				break
			}
		}
	}
	names := map[string][]int{}
	for _, p := range procs {
		names[termsafe.String(p.Name)] = append(names[termsafe.String(p.Name)], p.PID)
	}
	var list []string
	for n, pids := range names {
		list = append(list, fmt.Sprintf("%s (%s)", n, joinInts(pids)))
	}
	sort.Strings(list)
	if len(hosted) > 0 {
		return fmt.Errorf("no .NET process is named %q, but %s runs it: an app started with 'dotnet app.dll' is named dotnet; give -p PID (or -n dotnet when it is the only one)",
			name, strings.Join(hosted, ", "))
	}
	return fmt.Errorf("no .NET process is named %q; the .NET processes are: %s (apps started with 'dotnet app.dll' are named dotnet; see 'clrdiag ps')",
		name, strings.Join(list, ", "))
}

// pidNotFound explains why a live process has no diagnostic endpoint.
func pidNotFound(nf *transport.NotFoundError, proc procFS) error {
	who := fmt.Sprintf("process %d", nf.PID)
	if c := proc.comm(nf.PID); c != "" {
		who += " (" + termsafe.String(c) + ")"
	}
	maps, err := proc.read(nf.PID, "maps")
	switch {
	case errors.Is(err, fs.ErrPermission) || (err == nil && len(maps) == 0):
		return fmt.Errorf("%s publishes no diagnostic endpoint clrdiag can see, and its memory map is not readable: run clrdiag as the process's user or as root", who)
	case err != nil:
		return fmt.Errorf("%s publishes no diagnostic endpoint (%s cannot be read: %v)", who, filepath.Join(proc.root, strconv.Itoa(nf.PID), "maps"), err)
	case !bytes.Contains(maps, []byte("libcoreclr.")):
		return fmt.Errorf("%s is not a .NET process: no .NET runtime (libcoreclr) is loaded in it, and it publishes no diagnostic endpoint (a single-file app has no libcoreclr either: then see 'clrdiag ps --help')", who)
	}
	// A .NET process: find the cause that applies.
	if env, err := proc.read(nf.PID, "environ"); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			if (k == "DOTNET_EnableDiagnostics" || k == "COMPlus_EnableDiagnostics" || k == "DOTNET_EnableDiagnostics_IPC") && v == "0" {
				return fmt.Errorf("%s runs .NET with %s=0, which turns its diagnostic endpoint off", who, k)
			}
		}
	}
	if self, err := os.Readlink(filepath.Join(proc.root, "self", "ns", "mnt")); err == nil {
		if other, err := os.Readlink(filepath.Join(proc.root, strconv.Itoa(nf.PID), "ns", "mnt")); err == nil && other != self {
			return fmt.Errorf("%s is a .NET process in another mount namespace (a container) whose socket clrdiag cannot reach: share its /tmp, or run clrdiag with CAP_SYS_PTRACE so %s/%d/root is readable", who, proc.root, nf.PID)
		}
	}
	msg := fmt.Sprintf("%s is a .NET process but publishes no diagnostic endpoint", who)
	if len(nf.Checked) > 0 {
		msg += " (checked " + strings.Join(nf.Checked, ", ") + ")"
	}
	if len(nf.Notes) > 0 {
		msg += ": " + strings.Join(nf.Notes, "; ")
	} else {
		msg += ": its runtime may still be starting, its socket may have been deleted, or its TMPDIR is not readable from here (/proc/PID/environ)"
	}
	return errors.New(msg)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
