package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	pprofile "github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/viewer"
)

func init() { registerTrace("view", newTraceViewCmd) }

// isHeapSnapshot tells whether FILE is a heap snapshot (.gcdump) rather
// than a trace.
func isHeapSnapshot(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".gcdump")
}

// viewProfile reads FILE into the pprof profile the viewer shows and a
// one-line summary of it. A damaged trace gives the profile of what was
// read and an *ExitError (exitDamaged) to return once the viewer stops.
func viewProfile(e *env, in string, pf *profileFlags) (*pprofile.Profile, string, error) {
	if isHeapSnapshot(in) {
		return viewHeap(e, in, pf)
	}
	measure, err := pf.measure()
	if err != nil {
		return nil, "", err
	}
	p, readErr := readProfile(e, in, pf.config(false))
	if p == nil {
		return nil, "", readErr
	}
	m := pf.measureInfo(measure)
	if err := checkMeasured(p, m, in, "show", pf, readErr); err != nil {
		return nil, "", err
	}
	wp, err := p.Weighted(measure)
	if err != nil {
		return nil, "", usageError(err)
	}
	if wp.Name == "" && in != "-" {
		wp.Name = filepath.Base(in)
	}
	pp, err := wp.Pprof()
	if err != nil {
		return nil, "", err
	}
	for _, n := range p.NotesFor(m.Name) {
		fmt.Fprintf(e.stderr, "clrdiag: note: %s\n", n)
	}
	summary := fmt.Sprintf("%s: %s (the Sample menu switches)", in, p.WeightedSummary(wp, m, true))
	return pp, summary, readErr
}

// viewHeap reads a heap snapshot into the pprof profile of its flame graph
// (objects on the dominator-tree path from their kind of root, weighing
// their size); --sample picks one of its sample types.
func viewHeap(e *env, in string, pf *profileFlags) (*pprofile.Profile, string, error) {
	if len(pf.threads) > 0 || pf.managedOnly {
		return nil, "", usageErrorf("--thread and --managed-only apply to traces, not to heap snapshots (%s)", in)
	}
	g, err := loadGraph(e, in)
	if err != nil {
		return nil, "", err
	}
	f := gcdump.BuildFlame(g, nil, gcdump.FlameConfig{})
	pp, err := f.Pprof()
	if err != nil {
		return nil, "", err
	}
	if pf.sample != "" {
		var names []string
		for _, st := range pp.SampleType {
			names = append(names, st.Type)
			if strings.EqualFold(st.Type, pf.sample) {
				pp.DefaultSampleType = st.Type
			}
		}
		if !strings.EqualFold(pp.DefaultSampleType, pf.sample) {
			return nil, "", usageErrorf("unknown --sample %q for a heap snapshot: use %s", pf.sample, strings.Join(names, " or "))
		}
	}
	summary := fmt.Sprintf("%s: %d objects, %d bytes of heap in %d stacks (by retention path from their roots), weighed by %s",
		in, f.Objects, f.Bytes, len(f.Stacks), pp.DefaultSampleType)
	return pp, summary, nil
}

// viewAddr checks --http: host:port, with 127.0.0.1 when the host is empty.
func viewAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", usageErrorf("--http %q: want HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free one)", s)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// browserCommand returns the command that opens a URL in the user's
// browser: $BROWSER when set, else xdg-open (when a display exists), open
// or start. ok is false when there is no display to open it on.
func browserCommand(goos string, getenv func(string) string) (name string, args []string, ok bool) {
	if b := getenv("BROWSER"); b != "" {
		f := strings.Fields(b)
		return f[0], f[1:], true
	}
	switch goos {
	case "darwin":
		return "open", nil, true
	case "windows":
		return "cmd", []string{"/c", "start", ""}, true
	default:
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
			return "", nil, false
		}
		return "xdg-open", nil, true
	}
}

// openBrowser opens url in the user's browser, or says why it does not.
func openBrowser(e *env, url string) {
	name, args, ok := browserCommand(runtime.GOOS, os.Getenv)
	if !ok {
		fmt.Fprintf(e.stderr, "No display (DISPLAY and WAYLAND_DISPLAY are unset): open %s in a browser\n", url)
		return
	}
	cmd := exec.Command(name, append(args, url)...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "Could not start a browser (%v): open %s in a browser\n", err, url)
		return
	}
	go func() { _ = cmd.Wait() }()
}

func newTraceViewCmd(e *env) *cobra.Command {
	var (
		httpAddr  string
		noBrowser bool
		pf        profileFlags
	)
	cmd := &cobra.Command{
		Use:   "view FILE",
		Short: "Show a trace's profile (CPU, allocations, locks, exceptions), or a .gcdump heap, in the browser: flame graph, top, peek, graph",
		Long: "Build the profile of a nettrace file (\"-\" for standard input), as trace convert does,\n" +
			"and serve pprof's web UI for it on 127.0.0.1 (a free port unless --http): flame graph,\n" +
			"top, peek and, when Graphviz's dot is installed, the call graph (pprof's source and\n" +
			"disassembly views need binaries and line numbers a .NET profile has not: not offered).\n" +
			"A CPU profile with threads that waited the whole trace opens on wall_ran, the wall time\n" +
			"of the threads that ran, as trace report ranks (the Sample menu's wall has every sample).\n" +
			"The URL is printed on standard output and opened in the browser, unless --no-browser or\n" +
			"there is no display. Nothing is written to disk. Ctrl-C stops the server.\n" +
			"What the profile weighs (the page's Sample menu switches between a measure's types):\n" +
			sampleHelp() +
			"A FILE ending in .gcdump (clrdiag gcdump collect, dotnet-gcdump) shows the heap: objects\n" +
			"on their retention path from the kind of root that holds them, weighing their size\n" +
			"(--sample inuse_space, the default) or their count (--sample inuse_objects).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr, err := viewAddr(httpAddr)
			if err != nil {
				return err
			}
			pp, summary, readErr := viewProfile(e, args[0], &pf)
			if pp == nil {
				return readErr
			}
			v, err := viewer.New(pp, viewer.Config{Log: e.stderr})
			if errors.Is(err, viewer.ErrEmpty) {
				return fmt.Errorf("%s: nothing to show: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			ln, err := (&net.ListenConfig{}).Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", addr, err)
			}
			url := viewer.URL(ln.Addr())
			fmt.Fprintln(e.stderr, summary)
			fmt.Fprintf(e.stderr, "Serving the profile at %s (Ctrl-C stops; nothing is written to disk)\n", url)
			fmt.Fprintln(e.stdout, url)
			if !noBrowser {
				openBrowser(e, url)
			}
			if err := viewer.Serve(cmd.Context(), ln, v); err != nil {
				return err
			}
			return readErr // a damaged trace exits 5 once the viewer stops
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:0", "address to serve on, HOST:PORT (port 0: a free one)")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the URL without opening a browser")
	pf.register(cmd)
	return cmd
}
