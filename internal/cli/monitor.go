package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	httpmon "github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
	"github.com/spf13/cobra"
)

func init() { register(newMonitorCmd) }

// monitorAddr turns --urls (http://host:port, or host:port) into a listen
// address. The ASP.NET and dotnet-monitor wildcards http://*:PORT and
// http://+:PORT mean every interface.
func monitorAddr(s string) (string, error) {
	orig := s
	if strings.Contains(s, ";") {
		return "", fmt.Errorf("--urls %s: give one URL (the monitor serves one address)", orig)
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if !strings.EqualFold(scheme, "http") {
			return "", fmt.Errorf("--urls %s: only http is supported (put a TLS proxy in front)", orig)
		}
		s = strings.TrimSuffix(rest, "/")
		if strings.Contains(s, "/") {
			return "", fmt.Errorf("--urls %s: give scheme, host and port only (no path)", orig)
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("--urls %s: %w (want http://HOST:PORT, e.g. http://127.0.0.1:52323 or http://*:52323)", orig, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("--urls %s: port %q is not a number from 0 to 65535", orig, port)
	}
	if host == "*" || host == "+" {
		host = "" // every interface
	}
	return net.JoinHostPort(host, port), nil
}

// listenError explains why the monitor cannot serve on addr.
func listenError(addr, urls string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return usageErrorf("--urls %s: address %s is already in use by another program; give a free port with --urls (e.g. --urls http://127.0.0.1:0 picks one)", urls, addr)
	case errors.Is(err, syscall.EACCES), errors.Is(err, os.ErrPermission):
		return usageErrorf("--urls %s: not allowed to listen on %s (ports below 1024 need privileges); give another port with --urls", urls, addr)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return usageErrorf("--urls %s: %s is not an address of this machine; give one of its addresses (or * for all) with --urls", urls, addr)
	}
	return usageErrorf("--urls %s: cannot listen on %s: %w", urls, addr, err)
}

// checkDumpDir checks --dump-dir at start, for local targets: the
// directory must exist (the runtime creates no directory).
func checkMonitorDumpDir(dir string, reverse bool) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case reverse && err != nil:
		return nil // a path in the connecting containers' file systems
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("--dump-dir %s does not exist: create it, writable by the users of the target processes (the runtime writes the dumps and creates no directory)", dir)
	case err != nil:
		return usageErrorf("--dump-dir %s: %w", dir, err)
	case !st.IsDir():
		return usageErrorf("--dump-dir %s is not a directory", dir)
	}
	return nil
}

func newMonitorCmd(e *env) *cobra.Command {
	var (
		urls, apiKey, dumpDir, port string
		noAuth, noMetrics           bool
		metricsWindow, discovery    time.Duration
		dumpTimeout                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Serve an HTTP API over the .NET processes (processes, info, env, dumps, traces, counters, Prometheus /metrics)",
		Long: "Serve a REST API in the spirit of dotnet-monitor. Every request needs\n" +
			"'Authorization: Bearer <key>': give --api-key, or one is generated and printed.\n" +
			"With --diagnostic-port PATH the monitor serves the runtimes that connect to that socket\n" +
			"(DOTNET_DiagnosticPorts=PATH in containers sharing a volume) instead of the local ones.\n" +
			"GET /metrics answers from one long-lived System.Runtime counters session per process,\n" +
			"kept in the background (processes are re-discovered every --discovery-interval; a failing\n" +
			"session shows as clrdiag_collector_up 0 and is retried); --no-metrics turns this off.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			addr, err := monitorAddr(urls)
			if err != nil {
				return usageError(err)
			}
			if noAuth {
				apiKey = ""
				fmt.Fprintln(e.stderr, "warning: --no-auth: anyone who can reach "+addr+" can read environments and write dumps")
			} else if apiKey == "" {
				apiKey = rand.Text()
				fmt.Fprintf(e.stderr, "API key (send 'Authorization: Bearer <key>'): %s\n", apiKey)
			}
			if err := checkMonitorDumpDir(dumpDir, port != ""); err != nil {
				return err
			}
			if dumpTimeout < 0 {
				return usageErrorf("--dump-timeout %v: give a positive duration", dumpTimeout)
			}
			cfg := httpmon.Config{APIKey: apiKey, NoAuth: noAuth, DumpDir: dumpDir, DumpTimeout: dumpTimeout,
				MetricsWindow: metricsWindow, DiscoveryInterval: discovery, NoMetrics: noMetrics,
				Logger: slog.New(slog.NewTextHandler(e.stderr, nil))}
			if dc := e.global.discoverConfig(); dc != nil {
				cfg.Source = httpmon.LocalSource{Discover: dc}
			}
			if port != "" {
				dp, err := transport.ParseDiagnosticPort(port)
				if err != nil {
					return usageError(err)
				}
				if dp.Mode != transport.PortListen {
					return usageError(errors.New("--diagnostic-port: the monitor listens for runtimes; give a path without ,connect"))
				}
				path, err := reverseAddress(dp.Address)
				if err != nil {
					return usageError(err)
				}
				srv, err := reverse.Listen(path, nil)
				if err != nil {
					return usageError(err)
				}
				defer srv.Close()
				fmt.Fprintf(e.stderr, "Waiting for runtimes to connect. Start applications with DOTNET_DiagnosticPorts=%s\n", path)
				go resumeArrivals(ctx, srv, !dp.NoSuspend)
				cfg.Source = httpmon.ReverseSource{Server: srv}
			}
			m, err := httpmon.New(cfg)
			if err != nil {
				return usageError(err)
			}
			defer m.Close() // stops the counters sessions of /metrics
			ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
			if err != nil {
				return listenError(addr, urls, err)
			}
			hs := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(e.stderr, "Listening on http://%s\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return hs.Shutdown(sctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&urls, "urls", "http://127.0.0.1:52323", "address to serve the API on: http://HOST:PORT (http://*:PORT or http://+:PORT: every interface)")
	fl.DurationVar(&dumpTimeout, "dump-timeout", httpmon.DefaultDumpTimeout, "how long a dump request may take (createdump writes the whole dump first)")
	fl.StringVar(&apiKey, "api-key", "", "API key clients must send as 'Authorization: Bearer <key>' (default: generated and printed)")
	fl.BoolVar(&noAuth, "no-auth", false, "serve without authentication (dangerous outside a private network)")
	fl.StringVar(&dumpDir, "dump-dir", "", "directory where dumps are written (as seen by the targets); dumps are disabled without it")
	fl.StringVar(&port, "diagnostic-port", "", "serve the runtimes that connect to this socket (DOTNET_DiagnosticPorts=PATH) instead of the local processes")
	fl.DurationVar(&metricsWindow, "metrics-window", httpmon.DefaultMetricsWindow, "refresh interval of the counters sessions behind /metrics (whole milliseconds)")
	fl.DurationVar(&discovery, "discovery-interval", httpmon.DefaultDiscovery, "how often /metrics looks for new and ended processes")
	fl.BoolVar(&noMetrics, "no-metrics", false, "disable /metrics and its background counters sessions")
	return cmd
}

// resumeArrivals resumes each runtime that connects to the monitor's socket,
// as dotnet-monitor does in listen mode: a runtime with the default suspend
// waits for it.
func resumeArrivals(ctx context.Context, srv *reverse.Server, suspends bool) {
	for {
		rt, err := srv.Accept(ctx)
		if err != nil {
			return
		}
		if !suspends {
			continue
		}
		go func() {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = diag.NewClient(rt, nil).ResumeRuntime(rctx)
		}()
	}
}
