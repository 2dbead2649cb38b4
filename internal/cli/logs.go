package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/logs"
)

func init() { register("logs", newLogsCmd) }

func newLogsCmd(e *env) *cobra.Command {
	tf := e.sessionTargetFlags(nil) // an EventPipe session: --force, --timeout bounds its start
	var (
		level, format string
		filters       []string
		useApp        bool
		duration      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Print the ILogger messages of a running process (Microsoft-Extensions-Logging EventSource)",
		Long: "Read what the process logs through Microsoft.Extensions.Logging, as dotnet-monitor's /logs does:\n" +
			"level, category, event id, message, scopes and exception of every message at --level or\n" +
			"above (--filter CATEGORY:LEVEL sets another level for a category, or for a prefix ending in\n" +
			"'*'; --use-app-filters keeps the application's own Logging:LogLevel settings for the other\n" +
			"categories). The process filters before sending. Runs until --duration passes, the process\n" +
			"exits or Ctrl-C. --format text is the console logger's layout, json one JSON object a line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := logsConfig(level, filters, useApp)
			if err != nil {
				return usageError(err)
			}
			if duration < 0 {
				return usageErrorf("--duration %v: give a positive duration, or 0 to run until Ctrl-C", duration)
			}
			var w logs.Writer
			switch strings.ToLower(format) {
			case "text":
				w = logs.NewTextWriter(termsafeWriter{e.stdout})
			case "json":
				w = logs.NewJSONWriter(e.stdout, false)
			case "json-seq":
				w = logs.NewJSONWriter(e.stdout, true)
			default:
				return usageErrorf("--format %q: use text, json or json-seq", format)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			fmt.Fprintf(e.stderr, "Reading logs of process %d (%s); Ctrl-C to stop.\n", t.PID, cfg.FilterSpecs())
			// --timeout bounds the start of the session.
			cctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			errStart := fmt.Errorf("no answer within --timeout %v: no logs session was opened", t.startTimeout)
			limit := time.AfterFunc(time.Hour, func() { cancel(errStart) })
			limit.Stop()
			if t.startTimeout > 0 {
				limit.Reset(t.startTimeout)
			}
			defer limit.Stop()
			var opened bool
			var begin time.Time
			messages := 0
			err = logs.Collect(cctx, t.Client, cfg, logs.CollectConfig{Duration: duration, Started: func(ctx context.Context) error {
				limit.Stop()
				opened, begin = true, time.Now()
				return t.started(ctx)
			}}, func(en *logs.Entry) error {
				messages++
				return w.Write(en)
			})
			switch {
			case context.Cause(cctx) == errStart:
				msg := errStart.Error()
				if h := stoppedHint(t.PID, hostProc); h != "" {
					msg += "; " + h
				}
				return &ExitError{Code: exitRuntime, Err: errors.New(msg)}
			case !opened && ctx.Err() != nil:
				return fmt.Errorf("before the logs session opened: %w", ctx.Err()) // exitInterrupted
			case errors.Is(err, context.Canceled) && ctx.Err() != nil:
				return nil // Ctrl-C is how a collection normally ends
			case err == nil && opened && (duration == 0 || time.Since(begin) < duration):
				// The stream ended before --duration: the target ended it.
				if messages == 0 {
					return &ExitError{Code: exitTargetGone, Err: errors.New("the target ended the session before sending any log message (it exited or was killed)")}
				}
				fmt.Fprintf(e.stderr, "The target ended the session (it exited or was killed) after %d messages.\n", messages)
			}
			return err
		},
	}
	tf.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&level, "level", "Information", "lowest level printed: Trace, Debug, Information, Warning, Error or Critical")
	fl.StringArrayVar(&filters, "filter", nil, "CATEGORY:LEVEL for one category, or for a prefix ending in '*' (repeatable)")
	fl.BoolVar(&useApp, "use-app-filters", false, "keep the application's own logging levels for categories no --filter names (instead of --level)")
	fl.StringVar(&format, "format", "text", "output: text, json (one object a line) or json-seq (RFC 7464)")
	fl.DurationVar(&duration, "duration", 0, "stop after this long (0: until Ctrl-C or the process exits)")
	return cmd
}

// logsConfig reads the level and filter flags.
func logsConfig(level string, filters []string, useApp bool) (logs.Config, error) {
	var cfg logs.Config
	l, err := logs.ParseLevel(level)
	if err != nil {
		return cfg, fmt.Errorf("--level: %w", err)
	}
	cfg.DefaultLevel, cfg.UseAppFilters = l, useApp
	for _, f := range filters {
		i := strings.LastIndexByte(f, ':')
		if i <= 0 {
			return cfg, fmt.Errorf("--filter %q: give CATEGORY:LEVEL, e.g. Microsoft.AspNetCore*:Warning", f)
		}
		fl, err := logs.ParseLevel(f[i+1:])
		if err != nil {
			return cfg, fmt.Errorf("--filter %q: %w", f, err)
		}
		if strings.ContainsAny(f[:i], ";:") {
			return cfg, fmt.Errorf("--filter %q: a category must not contain ';' or ':'", f)
		}
		cfg.Filters = append(cfg.Filters, logs.Filter{Category: f[:i], Level: fl})
	}
	return cfg, nil
}

// termsafeWriter escapes what a target wrote before it reaches a terminal
// (line breaks are kept).
type termsafeWriter struct{ w io.Writer }

func (t termsafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termsafe.Lines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
