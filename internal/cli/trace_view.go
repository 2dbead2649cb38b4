package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	pprofile "github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/viewer"
)

func init() { registerTrace(newTraceViewCmd) }

// viewMeasures are the --sample values of trace view.
var viewMeasures = []string{"wall", "cpu"}

// viewProfile reads FILE into the pprof profile the viewer shows, and a
// one-line summary of it.
func viewProfile(e *env, in, sample string, pf *profileFlags) (*pprofile.Profile, string, error) {
	cfg := pf.config(false)
	switch strings.ToLower(sample) {
	case "", "wall":
	case "cpu":
		cfg.ManagedOnly = true
	default:
		return nil, "", usageErrorf("unknown --sample %q: use %s", sample, strings.Join(viewMeasures, " or "))
	}
	p, err := readProfile(e, in, cfg)
	if err != nil {
		return nil, "", err
	}
	var samples int64
	for _, t := range p.Threads {
		samples += t.Managed + t.External
	}
	if samples == 0 {
		if len(pf.threads) > 0 {
			return nil, "", fmt.Errorf("%s: no samples of thread %v: nothing to show (clrdiag trace report %s lists the sampled threads)", in, pf.threads, in)
		}
		return nil, "", fmt.Errorf("%s: no CPU samples to show: collect the trace with --profile dotnet-sampled-thread-time", in)
	}
	pp, err := p.Pprof()
	if err != nil {
		return nil, "", err
	}
	summary := fmt.Sprintf("%s: %d samples on %d threads, period %s; %s", in, samples, len(p.Threads), p.Period, symbolSummary(p))
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
		sample    string
		pf        profileFlags
	)
	cmd := &cobra.Command{
		Use:   "view FILE",
		Short: "Show a trace's CPU profile in the browser: flame graph, top, peek, source, graph",
		Long: "Build the CPU profile of a nettrace file (\"-\" for standard input), as trace convert does,\n" +
			"and serve pprof's web UI for it on 127.0.0.1 (a free port unless --http): flame graph,\n" +
			"top, peek, source and, when Graphviz's dot is installed, the call graph. The URL is\n" +
			"printed on standard output and opened in the browser, unless --no-browser or there is no\n" +
			"display. Nothing is written to disk. Ctrl-C stops the server.\n" +
			"--sample wall (the default) weighs every sample: thread time, running or waiting;\n" +
			"--sample cpu keeps the Managed samples (running managed code).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr, err := viewAddr(httpAddr)
			if err != nil {
				return err
			}
			pp, summary, err := viewProfile(e, args[0], sample, &pf)
			if err != nil {
				return err
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
			return viewer.Serve(cmd.Context(), ln, v)
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:0", "address to serve on, HOST:PORT (port 0: a free one)")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the URL without opening a browser")
	cmd.Flags().StringVar(&sample, "sample", "", "what to weigh: "+strings.Join(viewMeasures, " or ")+" (default wall)")
	pf.register(cmd)
	return cmd
}
