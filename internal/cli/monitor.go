package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/internal/safefile"
	httpmon "github.com/clrdiag/clrdiag/monitor"
	"github.com/clrdiag/clrdiag/rules"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/reverse"
	"github.com/spf13/cobra"
)

func init() { register("monitor", newMonitorCmd) }

// monitorAddr turns --urls into a listen address (httpmon.ListenAddr);
// tls tells whether https was asked for.
func monitorAddr(urls string) (addr string, tls bool, err error) {
	addr, tls, err = httpmon.ListenAddr(urls)
	if errors.Is(err, httpmon.ErrURLScheme) {
		return "", false, fmt.Errorf("--urls %s: %w (https needs --tls-cert and --tls-key)", urls, err)
	} else if err != nil {
		return "", false, fmt.Errorf("--urls %s: %w", urls, err)
	}
	return addr, tls, nil
}

// monitorKeyEnv is the environment variable the monitor reads its API key
// from (not visible to other users, unlike the command line).
const monitorKeyEnv = "CLRDIAG_MONITOR_API_KEY"

// minKeyLen is the shortest API key accepted without a warning.
const minKeyLen = 16

// monitorAPIKey returns the API key from exactly one of --api-key-file, the
// environment and --api-key, warning about what weakens it; "" when none
// was given.
func monitorAPIKey(e *env, flagKey, keyFile string, flagSet bool) (string, error) {
	envKey, envSet := os.LookupEnv(monitorKeyEnv)
	n := 0
	for _, given := range []bool{keyFile != "", envSet, flagSet} {
		if given {
			n++
		}
	}
	if n > 1 {
		return "", usageErrorf("give the API key once: --api-key-file, %s or --api-key", monitorKeyEnv)
	}
	var key string
	switch {
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return "", &ExitError{Code: exitIO, Err: fmt.Errorf("--api-key-file: %w", err)}
		}
		key = strings.TrimSpace(string(b))
		if key == "" {
			return "", usageErrorf("--api-key-file %s is empty (make one with 'clrdiag monitor generatekey -o %s')", keyFile, keyFile)
		}
		if fi, err := os.Stat(keyFile); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(e.stderr, "warning: %s is readable by other users (mode %v): chmod 600 it\n", keyFile, fi.Mode().Perm())
		}
	case envSet:
		key = strings.TrimSpace(envKey)
		if key == "" {
			return "", usageErrorf("%s is set but empty", monitorKeyEnv)
		}
	case flagSet:
		key = flagKey
		if key == "" {
			return "", usageErrorf("--api-key is empty")
		}
		fmt.Fprintf(e.stderr, "warning: --api-key is visible to every user of this machine (ps, /proc/PID/cmdline); "+
			"prefer --api-key-file or %s\n", monitorKeyEnv)
	default:
		return "", nil
	}
	if len(key) < minKeyLen {
		fmt.Fprintf(e.stderr, "warning: the API key has %d characters; use at least %d ('clrdiag monitor generatekey')\n", len(key), minKeyLen)
	}
	return key, nil
}

// listenError explains why the monitor cannot serve on addr.
func listenError(addr, urls string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return ioError(fmt.Errorf("--urls %s: address %s is already in use by another program; give a free port with --urls (e.g. --urls http://127.0.0.1:0 picks one)", urls, addr))
	case errors.Is(err, syscall.EACCES), errors.Is(err, os.ErrPermission):
		return ioError(fmt.Errorf("--urls %s: not allowed to listen on %s (ports below 1024 need privileges); give another port with --urls", urls, addr))
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return usageErrorf("--urls %s: %s is not an address of this machine; give one of its addresses (or * for all) with --urls", urls, addr)
	}
	return ioError(fmt.Errorf("--urls %s: cannot listen on %s: %w", urls, addr, err))
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
	case runtime.GOOS != "windows" && st.Mode().Perm()&0o002 != 0:
		// Anyone could plant a link where a runtime will write a dump
		// (the runtime follows it), or read and replace the dumps.
		return usageErrorf("--dump-dir %s is writable by every user (mode %v): it must be writable only by its owner (chmod o-w %s, or choose another directory)", dir, st.Mode().Perm(), dir)
	}
	return nil
}

func newMonitorCmd(e *env) *cobra.Command {
	var (
		urls, apiKey, apiKeyFile, dumpDir, port string
		noAuth, noMetrics                       bool
		metricsWindow, discovery                time.Duration
		dumpTimeout                             time.Duration
		tlsCert, tlsKey                         string
		allowedHosts, corsOrigins               []string
		maxConns                                int
		queueTimeout, idleTimeout               time.Duration
		metricsCounters                         string
		metricsIdle                             time.Duration
		checkConfig, configPath, artifactDir    string
		logFormat                               string
	)
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Serve an HTTP API over the .NET processes (processes, info, env, dumps, traces, profiles, counters, Prometheus /metrics)",
		Long: "Serve a REST API in the spirit of dotnet-monitor. Every request needs\n" +
			"'Authorization: Bearer <key>': give the key in a file (--api-key-file, see 'clrdiag monitor\n" +
			"generatekey') or in " + monitorKeyEnv + ", or one is generated and printed; --api-key works\n" +
			"too but is visible to other users in the process list.\n" +
			"With --diagnostic-port PATH the monitor serves the runtimes that connect to that socket\n" +
			"(DOTNET_DiagnosticPorts=PATH in containers sharing a volume) instead of the local ones.\n" +
			"GET /metrics answers from one long-lived counters session per process (System.Runtime,\n" +
			"ASP.NET Core's request metrics and --metrics-counters), kept in the background (processes\n" +
			"are re-discovered every --discovery-interval; a failing session shows as\n" +
			"clrdiag_collector_up 0 and is retried); --no-metrics turns this off. On .NET 8 and later\n" +
			"its Meters (System.Diagnostics.Metrics) are read in the process's shared Metrics session,\n" +
			"with dotnet-counters' settings, only while someone reads the values (/metrics, the\n" +
			"dashboard, a counters request within --metrics-idle): dotnet-counters asks for a private\n" +
			"session, which the runtime refuses while another exists, so it works next to a monitor\n" +
			"nobody reads.\n" +
			"/ui/ is a dashboard for a browser: processes, live counter charts, CPU profiles and heap\n" +
			"snapshots as flame graphs, stacks, dumps. Open the 'Dashboard:' link printed at start (it\n" +
			"signs the browser in with a cookie), or sign in at /ui/login with the API key.\n" +
			"--config FILE (YAML or JSON) adds collection rules in dotnet-monitor's model, egress providers\n" +
			"(a directory, S3), telemetry pushed over OTLP, Prometheus remote write and to Pyroscope, and\n" +
			"providers for /metrics (Metrics: Providers, Meters, as --metrics-counters); CollectionRules__...,\n" +
			"Egress__..., Telemetry__... and Metrics__... environment variables set the same keys.\n" +
			"A configuration with any mistake stops the monitor before it starts (exit 2, every key named);\n" +
			"--check-config only checks and lists it. See GET /collectionrules and GET /operations.\n\n" +
			"Against hostile clients: requests must name the server by IP address or localhost in\n" +
			"their Host header (others: --allowed-hosts), cross-origin browser requests are refused\n" +
			"(--cors-origin allows an origin), at most --max-connections connections are held at\n" +
			"once (a new one replaces the oldest idle one), a request must send its headers within 10s and the whole request within 30s, idle\n" +
			"keep-alive connections close after --idle-timeout, short routes must be answered within\n" +
			"1m (routes to a process get their ?duration= plus the stop and rundown; a trace stream\n" +
			"whose client reads nothing for 30s is cut), and a request waits at most --queue-timeout\n" +
			"for its process's turn (then 503 with Retry-After). Serving on another address than\n" +
			"loopback over plain HTTP sends the key in clear: give --tls-cert and --tls-key.\n\n" +
			monitorRoutesHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if checkConfig != "" {
				// Validate the configuration only (the environment's
				// CollectionRules__..., Egress__... and Telemetry__...
				// variables apply over the file).
				fc, err := loadMonitorConfig(checkConfig)
				if err != nil {
					return err
				}
				return fc.WriteListing(e.stdout)
			}
			logger, err := monitorLogger(e, logFormat)
			if err != nil {
				return err
			}
			fleet, err := loadMonitorConfig(configPath)
			if err != nil {
				return err
			}
			if !fleet.Empty() || len(fleet.Ignored) > 0 || fleet.MetricsCounters != "" {
				if err := fleet.WriteListing(e.stderr); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			addr, wantTLS, err := monitorAddr(urls)
			if err != nil {
				return usageError(err)
			}
			if (tlsCert == "") != (tlsKey == "") {
				return usageErrorf("give both --tls-cert and --tls-key")
			}
			if wantTLS && tlsCert == "" {
				return usageErrorf("--urls %s: https needs --tls-cert and --tls-key", urls)
			}
			scheme := "http"
			if tlsCert != "" {
				scheme = "https"
			}
			key, err := monitorAPIKey(e, apiKey, apiKeyFile, cmd.Flags().Changed("api-key"))
			if err != nil {
				return err
			}
			if noAuth {
				if key != "" {
					return usageErrorf("--no-auth and an API key contradict each other")
				}
				fmt.Fprintln(e.stderr, "warning: --no-auth: anyone who can reach "+addr+" can read environments and write dumps")
			} else if key == "" {
				key = rand.Text()
				fmt.Fprintf(e.stderr, "API key (send 'Authorization: Bearer <key>'): %s\n", key)
			}
			if !httpmon.IsLoopback(addr) && scheme == "http" && !noAuth {
				fmt.Fprintf(e.stderr, "warning: %s is not a loopback address and traffic is plain HTTP: the API key, environments "+
					"and traces cross the network in clear; give --tls-cert and --tls-key, or put a TLS proxy in front\n", addr)
			}
			if err := checkMonitorDumpDir(dumpDir, port != ""); err != nil {
				return err
			}
			if dumpTimeout < 0 {
				return usageErrorf("--dump-timeout %v: give a positive duration", dumpTimeout)
			}
			cfg := httpmon.Config{APIKey: key, NoAuth: noAuth, DumpDir: dumpDir, DumpTimeout: dumpTimeout, Version: versionString(),
				MetricsWindow: metricsWindow, DiscoveryInterval: discovery, NoMetrics: noMetrics, MetricsCounters: httpmon.DefaultMetricsCounters, MetricsIdle: metricsIdle,
				Logger: logger, Fleet: fleet, ArtifactDir: artifactDir,
				AllowedHosts: allowedHosts, CORSOrigins: corsOrigins, MaxConns: maxConns,
				QueueTimeout: queueTimeout, IdleTimeout: idleTimeout}
			if metricsIdle <= 0 {
				return usageErrorf("--metrics-idle %v: give a positive duration", metricsIdle)
			}
			if metricsCounters != "" {
				if _, err := counters.ParseSpecs(metricsCounters); err != nil {
					return usageError(fmt.Errorf("--metrics-counters: %w", err))
				}
				cfg.MetricsCounters += "," + metricsCounters
			}
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
					return ioError(err)
				}
				defer srv.Close()
				fmt.Fprintf(e.stderr, "Waiting for runtimes to connect. Start applications with DOTNET_DiagnosticPorts=%s\n", path)
				src := httpmon.NewReverseSource(srv)
				go src.AcceptRuntimes(ctx, !dp.NoSuspend)
				cfg.Source = src
			}
			m, err := httpmon.New(cfg)
			if err != nil {
				if configPath != "" && errors.Is(err, rules.ErrConfig) {
					return usageErrorf("%s: %w", configPath, err)
				}
				return usageError(err)
			}
			defer m.Close() // stops the counters sessions of /metrics
			ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
			if err != nil {
				return listenError(addr, urls, err)
			}
			for _, n := range httpmon.CurrentPrivileges().Notes() {
				fmt.Fprintln(e.stderr, "note: "+n)
			}
			fmt.Fprintf(e.stderr, "Listening on %s://%s\n", scheme, ln.Addr())
			fmt.Fprintf(e.stderr, "Dashboard: %s%s\n", httpmon.LocalURL(scheme, ln.Addr()), m.DashboardPath())
			return m.Serve(ctx, ln, tlsCert, tlsKey)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&urls, "urls", "http://127.0.0.1:52323", "address to serve the API on: http://HOST:PORT (http://*:PORT or http://+:PORT: every interface; https:// with --tls-cert and --tls-key)")
	fl.DurationVar(&dumpTimeout, "dump-timeout", httpmon.DefaultDumpTimeout, "how long a dump request may take (createdump writes the whole dump first)")
	fl.StringVar(&apiKeyFile, "api-key-file", "", "file holding the API key clients must send as 'Authorization: Bearer <key>' (see 'clrdiag monitor generatekey')")
	fl.StringVar(&apiKey, "api-key", "", "the API key itself (visible to other users in the process list: prefer --api-key-file or "+monitorKeyEnv+"; default: generated and printed)")
	fl.BoolVar(&noAuth, "no-auth", false, "serve without authentication (dangerous outside a private network)")
	fl.StringVar(&dumpDir, "dump-dir", "", "directory where dumps are written (as seen by the targets); it must not be writable by every user (refused); dumps are disabled without it")
	fl.StringVar(&port, "diagnostic-port", "", "serve the runtimes that connect to this socket (DOTNET_DiagnosticPorts=PATH) instead of the local processes")
	fl.DurationVar(&metricsWindow, "metrics-window", httpmon.DefaultMetricsWindow, "refresh interval of the counters sessions behind /metrics (whole milliseconds)")
	fl.DurationVar(&discovery, "discovery-interval", httpmon.DefaultDiscovery, "how often /metrics looks for new and ended processes")
	fl.BoolVar(&noMetrics, "no-metrics", false, "disable /metrics and its background counters sessions")
	fl.DurationVar(&metricsIdle, "metrics-idle", httpmon.DefaultMetricsIdle, "close a process's Meters session when nobody read its values for this long (it leaves the runtime's one Metrics session to dotnet-counters)")
	fl.StringVar(&metricsCounters, "metrics-counters", "", `providers /metrics also reads, besides System.Runtime and Microsoft.AspNetCore.Hosting, in the --counters syntax of counters collect: "MyApp.Meter,My-EventSource[counter,...]" (--config's Metrics section adds more)`)
	fl.StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	fl.StringVar(&tlsKey, "tls-key", "", "private key of --tls-cert (PEM)")
	fl.StringSliceVar(&allowedHosts, "allowed-hosts", nil, "host names requests may use besides IP addresses and localhost (comma-separated; * allows any, which lets DNS-rebinding pages in)")
	fl.StringSliceVar(&corsOrigins, "cors-origin", nil, "web origin (scheme://host[:port]) allowed to call the API from a browser (repeatable; default: none)")
	fl.IntVar(&maxConns, "max-connections", httpmon.DefaultMaxConns, "connections held at once; a new one replaces the oldest that is not in a request, or waits")
	fl.DurationVar(&queueTimeout, "queue-timeout", httpmon.DefaultQueueTimeout, "how long a request waits for its process's turn before 503 Service Unavailable")
	fl.DurationVar(&idleTimeout, "idle-timeout", httpmon.DefaultIdleTimeout, "close keep-alive connections idle for this long")
	fl.StringVar(&checkConfig, "check-config", "", "only validate this configuration file (as --config, with the environment's variables), list what it sets up and exit: 2 names every bad setting")
	fl.StringVar(&configPath, "config", "", "collection rules, egress providers, telemetry and /metrics providers (YAML, or JSON when FILE ends in .json; CollectionRules__..., Egress__..., Telemetry__... and Metrics__... environment variables apply over it, also without a file)")
	fl.StringVar(&artifactDir, "artifact-dir", "", "where the rules' actions write artifacts before egress (the target writes dumps there: a path it can write; default --dump-dir, else a private temporary directory)")
	fl.StringVar(&logFormat, "log-format", "text", "the monitor's log on stderr (sessions, every rule trigger and action): text or json (one object a line)")
	cmd.AddCommand(newMonitorGenerateKeyCmd(e))
	return cmd
}

// newMonitorGenerateKeyCmd is 'clrdiag monitor generatekey', as
// dotnet-monitor's: a new random API key.
func newMonitorGenerateKeyCmd(e *env) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "generatekey",
		Short: "Print a new random API key for the monitor (or write it to a file, mode 0600)",
		Long: "Make a new API key (128 bits of randomness, base32). With -o the key is written to a\n" +
			"file created mode 0600, for --api-key-file; otherwise it is printed, to put in\n" +
			monitorKeyEnv + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key := rand.Text()
			if out == "" {
				fmt.Fprintln(e.stdout, key)
				fmt.Fprintf(e.stderr, "Start the monitor with %s=<key>, or save it to a file (mode 0600) for --api-key-file.\n", monitorKeyEnv)
				return nil
			}
			f, err := safefile.Create(out, safefile.Options{Overwrite: force, Private: true})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(f, key); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "Wrote a new API key to %s. Start the monitor with --api-key-file %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the key to this file (created mode 0600) instead of printing it")
	addForceFlag(cmd, &force)
	return cmd
}

// loadMonitorConfig reads the monitor's configuration file (none when
// path is "") and the environment's variables of its sections; a
// configuration that cannot be used is a usage error (exit 2) naming
// every key at fault.
func loadMonitorConfig(path string) (*httpmon.FleetConfig, error) {
	fc, err := httpmon.LoadFleetConfig(path, os.Environ())
	switch {
	case errors.Is(err, rules.ErrConfig) && path != "":
		return nil, usageErrorf("%s: %w", path, err)
	case errors.Is(err, rules.ErrConfig):
		return nil, usageErrorf("the environment's configuration variables: %w", err)
	case err != nil:
		return nil, &ExitError{Code: exitIO, Err: err}
	}
	return fc, nil
}

// monitorLogger is the monitor's log on stderr in --log-format.
func monitorLogger(e *env, format string) (*slog.Logger, error) {
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(e.stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, nil)), nil
	}
	return nil, usageErrorf("--log-format %q: give text or json", format)
}

// monitorRoutesHelp lists the API's routes for 'clrdiag monitor --help',
// from the table the server serves and GET / lists.
func monitorRoutesHelp() string {
	var b strings.Builder
	b.WriteString("Routes (GET / lists them as JSON, with their parameters):\n")
	dm := false
	for _, rt := range httpmon.Routes() {
		if rt.DotnetMonitor && !dm {
			b.WriteString("dotnet-monitor's spellings (the process as ?pid=N or ?name=NAME):\n")
			dm = true
		}
		var q []string
		for _, p := range rt.Params {
			if p.In == "query" && p.Name != "pid" && p.Name != "name" {
				q = append(q, p.Name+"=")
			}
		}
		path := rt.Path
		if len(q) > 0 {
			path += "?" + strings.Join(q, "&")
		}
		fmt.Fprintf(&b, "  %-4s %-40s %s\n", rt.Method, path, rt.Summary)
	}
	b.WriteString("duration= also takes dotnet-monitor's durationSeconds=.")
	return b.String()
}
