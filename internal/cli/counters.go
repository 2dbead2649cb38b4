package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/internal/counterview"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() { register("counters", newCountersCmd) }

func newCountersCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "counters",
		Short: "Watch or record live metrics: EventCounters and System.Diagnostics.Metrics",
		Long: "counters reads live metrics from a .NET process as dotnet-counters does: the EventCounters of any\n" +
			"EventSource (System.Runtime by default) and, on .NET 6 and later, System.Diagnostics.Metrics instruments.",
	}
	cmd.AddCommand(newCountersMonitorCmd(e), newCountersCollectCmd(e), newCountersListCmd(e))
	return cmd
}

// countersFlags are the options monitor and collect share.
type countersFlags struct {
	counters      string
	refresh       float64
	duration      string
	maxHistograms int
	maxTimeSeries int
}

func (f *countersFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.counters, "counters", "", `counters to read: "Provider[counter,...],Provider,EventCounters\Provider" (default System.Runtime); a provider is read both as a Meter and as an EventSource unless prefixed with EventCounters\`)
	fl.Float64Var(&f.refresh, "refresh-interval", 1, "seconds between updates")
	fl.StringVar(&f.duration, "duration", "", "stop after this long: a Go duration (30s, 5m) or dd:hh:mm:ss")
	fl.IntVar(&f.maxHistograms, "max-histograms", counters.DefaultMaxHistograms, "most histograms the target's MetricsEventSource tracks")
	fl.IntVar(&f.maxTimeSeries, "max-time-series", counters.DefaultMaxTimeSeries, "most time series (tag combinations) the target's MetricsEventSource tracks")
	fl.IntVar(&f.maxHistograms, "maxHistograms", counters.DefaultMaxHistograms, "alias of --max-histograms")
	fl.IntVar(&f.maxTimeSeries, "maxTimeSeries", counters.DefaultMaxTimeSeries, "alias of --max-time-series")
	_ = fl.MarkHidden("maxHistograms")
	_ = fl.MarkHidden("maxTimeSeries")
}

// config checks the flags; errors are usage errors (exitUsage).
func (f *countersFlags) config() (counters.Config, time.Duration, error) {
	usage := func(err error) (counters.Config, time.Duration, error) {
		return counters.Config{}, 0, usageError(err)
	}
	specs, err := counters.ParseSpecs(f.counters)
	if err != nil {
		return usage(err)
	}
	if math.IsNaN(f.refresh) || f.refresh < 0.001 || f.refresh > 86400 {
		return usage(fmt.Errorf("--refresh-interval %v: give seconds between 0.001 and 86400", f.refresh))
	}
	if f.maxHistograms <= 0 || f.maxTimeSeries <= 0 {
		return usage(fmt.Errorf("--max-histograms %d and --max-time-series %d must be positive", f.maxHistograms, f.maxTimeSeries))
	}
	dur, err := parseDuration(f.duration)
	if err != nil {
		return usage(fmt.Errorf("--duration: %w", err))
	}
	cfg := counters.Config{
		Specs:           specs,
		RefreshInterval: time.Duration(math.Round(f.refresh*1000)) * time.Millisecond,
		MaxHistograms:   f.maxHistograms,
		MaxTimeSeries:   f.maxTimeSeries,
	}
	if _, err := counters.NewPlan(cfg); err != nil {
		return usage(err)
	}
	return cfg, dur, nil
}

// nameWidth is the width of the name column of counters monitor's table
// on the terminal w: what the value columns (17 characters each) leave of
// its width; 0 (the View's default) when the width is unknown.
func nameWidth(w io.Writer, deltas bool) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return 0
	}
	values := 17
	if deltas {
		values = 34
	}
	return max(cols-values-1, 30)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := unwrapWriter(w).(*os.File)
	return ok && isTerminalFd(f.Fd())
}

// followCounters reads the target's counters with counters.Follow until
// ctx ends (it carries --duration), reopening a session that stalls, and
// says so on errOut. first, when set, runs once the first session is open
// (after the runtime is resumed and the warnings printed); its error ends
// the collection.
func followCounters(ctx context.Context, t *target, cfg counters.Config, errOut io.Writer, first func() error, fn func(counters.Update) error) error {
	// --timeout bounds the wait for the first session.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errStart := fmt.Errorf("no answer within --timeout %v: no counters session was opened", t.startTimeout)
	limit := time.AfterFunc(time.Hour, func() { cancel(errStart) })
	limit.Stop()
	if t.startTimeout > 0 {
		limit.Reset(t.startTimeout)
	}
	defer limit.Stop()
	err := counters.Follow(ctx, t.Client, cfg, counters.FollowConfig{
		Started: func(s *counters.Session, reopened bool) error {
			limit.Stop()
			if reopened {
				fmt.Fprintln(errOut, "clrdiag: the counters session was reopened; values resume with the next refresh")
				return nil
			}
			for _, w := range s.Warnings {
				fmt.Fprintf(errOut, "clrdiag: warning: %s\n", w)
			}
			if err := t.started(ctx); err != nil {
				fmt.Fprintf(errOut, "clrdiag: warning: resuming the runtime: %v\n", err)
			}
			if first != nil {
				return first()
			}
			return nil
		},
		Stalled: func(err error) {
			fmt.Fprintf(errOut, "clrdiag: warning: the target stopped publishing counters (%v); on .NET Core 3.x this happens when any other counters session in the process ends. Reopening the session.\n", err)
		},
	}, fn)
	if context.Cause(ctx) == errStart {
		msg := errStart.Error()
		if h := stoppedHint(t.PID, hostProc); h != "" {
			msg += "; " + h
		}
		return &ExitError{Code: exitRuntime, Err: errors.New(msg)}
	}
	return err
}

// childResult passes a launched child's exit status through once the
// session has ended; otherwise it returns err.
func childResult(t *target, err error) error {
	if t.Exited == nil || t.ExitCode == nil {
		return err
	}
	select {
	case <-t.Exited:
		if code := t.ExitCode(); code != 0 {
			return &ExitError{Code: code}
		}
		return nil
	case <-time.After(2 * time.Second):
		return err
	}
}

// finished turns the end of a counters collection into the command's
// result: the end of ctx (the user's Ctrl-C, q, or --duration) is the
// normal end; anything else is an error, also a timeout of the client
// talking to a runtime that does not answer (it wraps
// context.DeadlineExceeded too, but ctx has not ended).
func finished(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return nil
	case errors.Is(err, counters.ErrStreamCut):
		return fmt.Errorf("the target process exited or closed the connection before sending any counter value (%w)", err)
	case errors.Is(err, counters.ErrStalled):
		return fmt.Errorf("%w (a .NET Core 3.1 runtime before 3.1.9 can deadlock its counters and its diagnostic server when counters sessions start and stop, dotnet/runtime#40190: update the runtime)", err)
	}
	return err
}

// countersRun is how a counters collection went, for its result.
type countersRun struct {
	// opened is set once the first session is open.
	opened bool
	// samples counts the values received.
	samples int
	start   time.Time
}

// result turns the end of a counters collection into the command's
// result. cmdCtx is the command's context (it ends at a signal), ctx the
// collection's (it also ends at --duration). A runtime that never opened
// the session is an error (exitRuntime: it did not answer), also when
// --duration ended the wait; a target that went away after sending values
// ends the collection normally, with a note (what arrived is kept).
func (r *countersRun) result(cmdCtx, ctx context.Context, errOut io.Writer, t *target, dur time.Duration, err error) error {
	// A wait that --duration cut short may fail a hair before ctx ends (a
	// socket deadline is ctx's deadline): look at the clock.
	dl, ok := ctx.Deadline()
	durationPassed := ctx.Err() != nil || ok && !time.Now().Before(dl)
	switch {
	case !r.opened && cmdCtx.Err() == nil && durationPassed:
		msg := fmt.Sprintf("no answer from the runtime within --duration %v: no counters session was opened", dur)
		if h := stoppedHint(t.PID, hostProc); h != "" {
			msg += "; " + h
		}
		return &ExitError{Code: exitRuntime, Err: errors.New(msg)}
	case !r.opened && cmdCtx.Err() != nil:
		// A signal before the collection began: exitInterrupted.
		return fmt.Errorf("before the counters session opened: %w", cmdCtx.Err())
	case errors.Is(err, counters.ErrStreamCut) && r.samples > 0:
		fmt.Fprintf(errOut, "The target process exited or closed the connection after %v: the collection ended with the %d values it sent.\n", time.Since(r.start).Round(time.Second), r.samples)
		return nil
	}
	return finished(ctx, err)
}

func processLabel(t *target) string {
	switch {
	case t.PID != 0 && t.Name != "":
		return fmt.Sprintf("%d (%s)", t.PID, t.Name)
	case t.PID != 0:
		return strconv.Itoa(t.PID)
	case t.Name != "":
		return t.Name
	}
	return t.Endpoint.String()
}

// targetProcessName is the JSON file's TargetProcess as dotnet-counters
// writes it: the process name (.NET's Process.ProcessName: "dotnet" for an
// app run with "dotnet app.dll"), or "" when it cannot be found (a runtime
// reached through --diagnostic-port only, a process that is gone).
func targetProcessName(ctx context.Context, e *env, t *target) string {
	if t.Name != "" || t.PID == 0 {
		return t.Name
	}
	return transport.NameOf(ctx, t.PID, e.global.discoverConfig())
}

func newCountersMonitorCmd(e *env) *cobra.Command {
	tf := e.sessionTargetFlags(nil)
	var f countersFlags
	var showDeltas, abbreviate bool
	cmd := &cobra.Command{
		Use:   "monitor (-p PID | -n NAME | --diagnostic-port PATH) [--counters SPEC] [--show-deltas]",
		Short: "Show live counter values, refreshed in place",
		Long: "monitor shows the latest value of each counter. On a terminal the table is redrawn in place;\n" +
			"otherwise each changed value is printed as a line. Ctrl-C stops. When stdin and stdout are both\n" +
			"terminals, p pauses the display, r resumes it and q quits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, dur, err := f.config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			t, err := tf.resolve(ctx)
			if err != nil {
				return finished(ctx, err)
			}
			defer t.close()
			cfg.NewID = tf.g.idSource() // the same ids under --record-ipc and --replay-ipc
			v := &counterview.View{
				Terminal:    isTerminal(e.stdout),
				Title:       "Press Ctrl-C to quit. Process " + processLabel(t),
				ShowDeltas:  showDeltas,
				FullNumbers: !abbreviate,
				NameWidth:   nameWidth(e.stdout, showDeltas),
			}
			out, errOut := e.stdout, e.stderr
			keys, restore, err := rawStdin(e)
			defer restore() // also when monitor fails or panics; Ctrl-C and SIGTERM end ctx, so monitor returns
			if err != nil {
				fmt.Fprintf(e.stderr, "clrdiag: warning: keys p, r and q are not available: %v\n", err)
			}
			if keys != nil {
				v.Title = keysTitle + " Process " + processLabel(t)
				out = crlfWriter{out}
				if isTerminal(errOut) {
					errOut = crlfWriter{errOut}
				}
			}
			run := &countersRun{start: time.Now()}
			err = monitor(ctx, out, errOut, v, cfg.RefreshInterval, keys, func(ctx context.Context, fn func(counters.Update) error) error {
				return followCounters(ctx, t, cfg, errOut, func() error { run.opened = true; return nil }, func(u counters.Update) error {
					if u.Sample != nil {
						run.samples++
					}
					return fn(u)
				})
			})
			restore()
			return childResult(t, run.result(cmd.Context(), ctx, e.stderr, t, dur, err))
		},
	}
	tf.register(cmd)
	tf.registerLaunch(cmd)
	f.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&showDeltas, "show-deltas", false, "add a column with the change of each value since the previous refresh")
	fl.BoolVar(&showDeltas, "showDeltas", false, "alias of --show-deltas")
	fl.BoolVar(&abbreviate, "abbreviate-large-numbers", true, "show values of 1e8 and more in scientific notation (--abbreviate-large-numbers=false prints them in full)")
	fl.BoolVar(&abbreviate, "abbreviateLargeNumbers", true, "alias of --abbreviate-large-numbers")
	_ = fl.MarkHidden("showDeltas")
	_ = fl.MarkHidden("abbreviateLargeNumbers")
	return cmd
}

// monitor runs the counters (run: a session's Run, or followCounters)
// into the view, rendering every refresh. With keys (a raw terminal) p
// pauses the display, r resumes it and q or Ctrl-C ends the session like
// an interrupt; out and errOut are where the view and warnings go.
func monitor(ctx context.Context, out, errOut io.Writer, v *counterview.View, refresh time.Duration, keys io.Reader, run func(context.Context, func(counters.Update) error) error) error {
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	m := newMonitorView(v, out)
	m.render()
	if keys != nil {
		// Not waited for: a Read of the terminal cannot be interrupted, and
		// the goroutine ends with the next key or the process.
		go func() {
			_ = readKeys(ctx, keys, func(k monitorKey) bool {
				if !m.key(k) {
					quit() // as Ctrl-C: the session stops and the command succeeds
					return false
				}
				return true
			})
		}()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(refresh)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				m.render()
			}
		}
	}()
	err := run(ctx, func(u counters.Update) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.err != nil {
			return m.err
		}
		if u.Sample != nil {
			v.Update(u.Sample)
			return nil
		}
		if v.Terminal {
			m.warning = u.Warning.String()
		} else {
			fmt.Fprintf(errOut, "clrdiag: warning: %s\n", u.Warning)
		}
		return nil
	})
	close(done)
	wg.Wait()
	m.stop()
	if m.err != nil {
		return fmt.Errorf("write the view: %w", m.err)
	}
	return finished(ctx, err)
}

func newCountersCollectCmd(e *env) *cobra.Command {
	var format, output string
	var force bool
	tf := e.sessionTargetFlags(&force)
	var f countersFlags
	cmd := &cobra.Command{
		Use:   "collect (-p PID | -n NAME | --diagnostic-port PATH) [--counters SPEC] [--format csv|json] [-o FILE]",
		Short: "Record counter values to a CSV or JSON file",
		Long: "collect writes every counter value to a file in dotnet-counters' CSV or JSON format until Ctrl-C\n" +
			"or --duration. The file is complete and valid however the collection ends.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, dur, err := f.config()
			if err != nil {
				return err
			}
			format = strings.ToLower(format)
			if format != "csv" && format != "json" {
				return usageErrorf("--format %q: use csv or json", format)
			}
			plan, err := planOutput(output, force)
			if err != nil {
				return err
			}
			if output, err = plan.name("counter." + format); err != nil {
				return err
			}
			ctx := cmd.Context()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			t, err := tf.resolve(ctx)
			if err != nil {
				return finished(ctx, err)
			}
			defer t.close()
			cfg.NewID = tf.g.idSource() // the same ids under --record-ipc and --replay-ipc
			run := &countersRun{start: time.Now()}
			err = collect(ctx, e, t, cfg, format, output, force, run)
			return childResult(t, run.result(cmd.Context(), ctx, e.stderr, t, dur, err))
		},
	}
	tf.register(cmd)
	tf.registerLaunch(cmd)
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "csv", "file format: csv or json")
	fl.StringVarP(&output, "output", "o", "", "output file (default counter.csv or counter.json)")
	cmd.Flags().BoolVar(&force, "force", false, forceSessionUsage)
	return cmd
}

// collect writes the target's counters to output (created once the first
// session is open) and always finishes the file, also when the session is
// cut short. A file that cannot be written is removed when nothing reached
// it, and said to be cut otherwise.
func collect(ctx context.Context, e *env, t *target, cfg counters.Config, format, output string, force bool, run *countersRun) (err error) {
	var file *os.File
	var exp counters.Exporter
	var writeErr error
	defer func() {
		if exp == nil {
			return
		}
		cerr := exp.Close()
		if ferr := file.Close(); cerr == nil {
			cerr = ferr
		}
		if writeErr == nil {
			writeErr = cerr
		}
		if writeErr == nil {
			return
		}
		err = ioError(fmt.Errorf("writing %s failed: %w; %s", output, unwrapPath(writeErr), keptOrRemoved(output, run.samples)))
	}()
	create := func() error {
		f, err := safefile.Create(output, safefile.Options{Overwrite: force})
		if err != nil {
			return ioError(fmt.Errorf("create %s: %w", output, unwrapPath(err)))
		}
		file = f
		if format == "json" {
			exp = counters.NewJSONExporter(file, targetProcessName(ctx, e, t), time.Now())
		} else {
			exp = counters.NewCSVExporter(file)
		}
		run.opened = true
		abs, _ := filepath.Abs(output)
		fmt.Fprintf(e.stderr, "Collecting counters of process %s into %s. Press Ctrl-C to stop.\n", processLabel(t), abs)
		return nil
	}
	runErr := followCounters(ctx, t, cfg, e.stderr, create, func(u counters.Update) error {
		if u.Warning != nil {
			fmt.Fprintf(e.stderr, "clrdiag: warning: %s\n", u.Warning)
			return nil
		}
		if err := exp.Write(u.Sample); err != nil {
			writeErr = err
			return err
		}
		run.samples++
		return nil
	})
	if exp != nil && writeErr == nil {
		// The file's rows: a histogram writes one per percentile, an
		// instrument without a value none.
		n := exp.Rows()
		fmt.Fprintf(e.stdout, "Wrote %d samples to %s\n", n, output)
		if n == 0 && runErr != nil && ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "clrdiag: warning: no counter values arrived: check the --counters names; a runtime publishes the first values one refresh interval after the session starts")
		}
	}
	if writeErr != nil {
		return nil // the deferred function reports it
	}
	return runErr
}

// keptOrRemoved removes path when it holds nothing (the first write
// failed) and says what became of it.
func keptOrRemoved(path string, samples int) string {
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		if os.Remove(path) == nil {
			return "the empty file was removed"
		}
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		return "what was written before the failure is lost"
	}
	return fmt.Sprintf("the file keeps what was written before the failure (up to %d samples) and may end in the middle of a line", samples)
}

func newCountersListCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the well-known counters of System.Runtime",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			known := counters.KnownCounters()
			if asJSON {
				return writeJSON(e.stdout, known)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			for _, group := range []struct {
				title string
				meter bool
			}{
				{"System.Runtime EventCounters (.NET Core 3.0 and later; read with --counters EventCounters\\System.Runtime on .NET 9+)", false},
				{"System.Runtime Meter (.NET 9 and later; read with --counters System.Runtime)", true},
			} {
				fmt.Fprintf(tw, "%s\n", group.title)
				fmt.Fprintf(tw, "    Name\tUnit\tSince\tDescription\n")
				for _, k := range known {
					if k.Meter == group.meter {
						fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", k.Name, k.Unit, k.Since, k.Description)
					}
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}
