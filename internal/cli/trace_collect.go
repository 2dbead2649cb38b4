package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/safefile"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() { registerTrace("collect", newTraceCollectCmd) }

// sessionFlags are the options that configure an EventPipe session, shared
// by trace collect and trace stream (names as in dotnet-trace).
type sessionFlags struct {
	providers     string
	profiles      []string
	clrEvents     string
	clrEventLevel string
	bufferSizeMB  uint32
	rundown       string
	stackwalk     bool
	duration      string
	buffering     string
	eventIDs      []string
}

func (f *sessionFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.providers, "providers", "", "providers to enable: Name[:Keywords[:Level[:Key=Value;...]]],... (keywords in hex, level a number or name)")
	fl.StringSliceVar(&f.profiles, "profile", nil, "named provider sets, comma separated (see 'clrdiag trace list-profiles'); default dotnet-common,dotnet-sampled-thread-time when nothing is given")
	fl.StringVar(&f.clrEvents, "clrevents", "", "runtime event keywords joined by '+', e.g. gc+exception+contention")
	fl.StringVar(&f.clrEventLevel, "clreventlevel", "", "level of the --clrevents events: logalways, critical, error, warning, informational, verbose or 0-5 (default informational, as dotnet-trace)")
	fl.Uint32Var(&f.bufferSizeMB, "buffersize", eventpipe.DefaultBufferSizeMB, "size of the runtime's circular buffer in MiB (2^20 bytes, the unit the protocol counts in)")
	fl.StringVar(&f.rundown, "rundown", "", "rundown at the end: true, false, or a hex keyword such as 0x80020139 (default: the profiles decide)")
	fl.BoolVar(&f.stackwalk, "stackwalk", true, "collect stacks (--stackwalk=false needs .NET 8; older runtimes collect them anyway)")
	fl.StringVar(&f.duration, "duration", "", "stop after this long: a Go duration (30s, 5m) or dd:hh:mm:ss")
	fl.StringVar(&f.buffering, "buffering-mode", "drop", "when the buffer is full: drop events, or block the writing threads (block needs .NET 11; older runtimes fall back to drop with a warning)")
	fl.StringArrayVar(&f.eventIDs, "event-ids", nil, "only these event ids of a provider: Provider:1,2,3 (repeatable; needs .NET 10); Provider:-1,2 excludes them instead")
}

// addMeasure enables the provider a --sample measure needs (the default
// session has no GCAllocationTick and no contention events) unless a
// --profile or --clrevents chooses the runtime's events or --providers
// already configures that provider. With no provider flag at all, wall and
// cpu keep the default session, which samples.
func (f *sessionFlags) addMeasure(m profile.MeasureInfo) {
	if len(f.profiles) > 0 || f.clrEvents != "" {
		return
	}
	if f.providers == "" && (m.Name == profile.MeasureWall || m.Name == profile.MeasureCPU) {
		return
	}
	name, _, _ := strings.Cut(m.Providers, ":")
	for _, spec := range strings.Split(f.providers, ",") {
		if n, _, _ := strings.Cut(spec, ":"); strings.EqualFold(strings.TrimSpace(n), name) {
			return
		}
	}
	if f.providers == "" {
		f.providers = m.Providers
	} else {
		f.providers += "," + m.Providers
	}
}

// applyEventIDs adds the --event-ids filters to the providers.
func (f *sessionFlags) applyEventIDs(ps []eventpipe.Provider) error {
	for _, spec := range f.eventIDs {
		if err := eventpipe.FilterEventIDs(ps, spec); err != nil {
			return fmt.Errorf("--event-ids %w", err)
		}
	}
	return nil
}

// plan composes the providers and returns the session configuration.
func (f *sessionFlags) plan() (*eventpipe.Plan, eventpipe.Config, time.Duration, error) {
	plan, err := eventpipe.Compose(eventpipe.Request{
		Providers: f.providers, Profiles: f.profiles, ClrEvents: f.clrEvents,
		ClrEventLevel: f.clrEventLevel, Rundown: f.rundown,
	})
	if err != nil {
		return nil, eventpipe.Config{}, 0, usageError(err)
	}
	d, err := parseDuration(f.duration)
	if err != nil {
		return nil, eventpipe.Config{}, 0, usageErrorf("--duration: %w", err)
	}
	if f.bufferSizeMB == 0 {
		return nil, eventpipe.Config{}, 0, usageError(errors.New("--buffersize must be at least 1 (MiB)"))
	}
	var buffering eventpipe.BufferingMode
	switch strings.ToLower(f.buffering) {
	case "", "drop":
	case "block":
		buffering = eventpipe.Block
	default:
		return nil, eventpipe.Config{}, 0, usageErrorf("--buffering-mode %q: use drop or block", f.buffering)
	}
	providers := plan.ProviderList()
	if err := f.applyEventIDs(providers); err != nil {
		return nil, eventpipe.Config{}, 0, usageError(err)
	}
	cfg := plan.Config()
	cfg.Providers = providers
	cfg.Buffering = buffering
	cfg.BufferSizeMB = f.bufferSizeMB
	cfg.NoStackwalk = !f.stackwalk
	return plan, cfg, d, nil
}

// parseStopEvent reads the --stopping-event-* flags (nil when they are not
// given). Payload values are compared with the fields as trace events
// decodes them (an ILogger level by name or number).
func parseStopEvent(provider, event, payload string) (*eventpipe.EventFilter, error) {
	if provider == "" {
		if event != "" || payload != "" {
			return nil, errors.New("--stopping-event-event-name and --stopping-event-payload-filter need --stopping-event-provider-name")
		}
		return nil, nil
	}
	if payload != "" && event == "" {
		return nil, errors.New("--stopping-event-payload-filter needs --stopping-event-event-name")
	}
	filter, err := eventpipe.ParsePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("--stopping-event-payload-filter %w", err)
	}
	return &eventpipe.EventFilter{Provider: provider, Event: event, Payload: filter, Fields: eventfmt.Fields}, nil
}

// collectFlags are trace collect's flags.
type collectFlags struct {
	force                     bool
	sf                        sessionFlags
	output                    string
	quiet                     bool
	stopProv, stopEv, stopPay string
	stopTimeout               time.Duration
	rundownTimeout            time.Duration
	maxSize                   string
	rundownMax                string
	format                    string
	pf                        profileFlags

	// Set by collector: the session's plan and the --format conversion.
	plan *eventpipe.Plan
	conv weighted.Format
}

func newTraceCollectCmd(e *env) *cobra.Command {
	var f collectFlags
	tf := e.sessionTargetFlags(&f.force)
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Collect an EventPipe trace from a running process into a .nettrace file",
		Long: "Start an EventPipe session in the target and write what it sends to a .nettrace file.\n" +
			"It stops on Ctrl-C, on Enter (when stdin is a terminal), after --duration, on the\n" +
			"stopping event, on SIGTERM, or when the target exits; the file is valid in every case.\n" +
			"After the stop the runtime sends the rundown (method names for stacks), which can\n" +
			"take a while in a large application; a second Ctrl-C abandons it at once (the file\n" +
			"is still valid, exit status 0, but stacks may not be symbolized).\n\n" +
			"Bounds: --duration, then --stop-timeout and --rundown-timeout bound the whole session\n" +
			"(after all three the connection is closed and the file terminated); --rundown-max-size\n" +
			"(256MB) bounds what may arrive after the stop. The file size is\n" +
			"unlimited by default, as with dotnet-trace; --max-size caps it (the session is then\n" +
			"stopped, the file cut to its last complete block, and the exit status is 6). A full\n" +
			"disk also stops the session and keeps the file valid up to its last complete block.\n\n" +
			"Providers: --providers Name[:Keywords[:Level[:Key=Value;...]]], --profile and\n" +
			"--clrevents, merged as dotnet-trace does. With none: dotnet-common + dotnet-sampled-thread-time.\n\n" +
			"To trace an application from its start, give its command after --: clrdiag starts it\n" +
			"paused on a private diagnostic port, starts the session, resumes it, and exits with\n" +
			"its exit status (needs .NET 5 or later).\n\n" +
			"With --format, --sample chooses what the conversion weighs (and, unless --profile,\n" +
			"--clrevents or --providers configure the runtime's events, enables the events it needs):\n" +
			sampleHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.collector(e)
			if err != nil {
				return err
			}
			out, err := planOutput(f.output, f.force)
			if err != nil {
				return err
			}
			if out.named() && f.format != "" {
				if err := checkOutput(convertedName(f.output, f.conv), f.force); err != nil {
					return ioError(err)
				}
			}
			ctx := cmd.Context()
			if c.t, err = tf.resolve(ctx); err != nil {
				return err
			}
			defer c.t.close()
			def := "" // unused when -o names the file: spare the process scan
			if !out.named() {
				def = defaultTraceName(ctx, e, c.t)
			}
			if c.output, err = out.name(def); err != nil {
				return err
			}
			return f.collect(ctx, c)
		},
	}
	tf.register(cmd)
	tf.registerLaunch(cmd)
	f.sf.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "output file (default <name>_<yyyyMMdd>_<HHmmss>.nettrace)")
	fl.BoolVar(&f.quiet, "quiet", false, "print nothing but errors (for scripts)")
	cmd.Flags().BoolVar(&f.force, "force", false, forceSessionUsage)
	fl.StringVar(&f.format, "format", "nettrace", "also convert the trace when done: "+strings.Join(weighted.FormatNames(), ", ")+" (the .nettrace file is kept)")
	f.pf.register(cmd)
	fl.StringVar(&f.stopProv, "stopping-event-provider-name", "", "stop when this provider writes the stopping event")
	fl.StringVar(&f.stopEv, "stopping-event-event-name", "", "name (or id) of the stopping event")
	fl.StringVar(&f.stopPay, "stopping-event-payload-filter", "", "payload fields the stopping event must have: name:value,name:value")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", eventpipe.DefaultStopTimeout, "how long to wait for the runtime to acknowledge the stop")
	fl.StringVar(&f.maxSize, "max-size", "", "stop when the trace file reaches this size, e.g. 500MB or 2GB (1MB = 10^6 bytes; MiB, GiB for powers of 1024; default unlimited)")
	fl.DurationVar(&f.rundownTimeout, "rundown-timeout", eventpipe.DefaultRundownTimeout, "how long to wait for the rundown after the stop before closing the session")
	fl.StringVar(&f.rundownMax, "rundown-max-size", "256MB", "how much the runtime may send after the stop (the rundown) before the session is closed")
	return cmd
}

// collector checks the flags (before the target is touched) and returns
// the collection they ask for, without its target and output name; it
// sets f.plan and f.conv.
func (f *collectFlags) collector(e *env) (*collector, error) {
	if f.pf.sample != "" || len(f.pf.threads) > 0 || f.pf.managedOnly {
		if format := strings.ToLower(f.format); format == "" || format == "nettrace" {
			return nil, usageErrorf("--sample, --thread and --managed-only shape the --format conversion; give --format too (e.g. --format speedscope)")
		}
		measure, err := f.pf.measure()
		if err != nil {
			return nil, err
		}
		f.sf.addMeasure(f.pf.measureInfo(measure))
	}
	plan, cfg, duration, err := f.sf.plan()
	if err != nil {
		return nil, err
	}
	maxBytes, err := units.ParseBytes(f.maxSize)
	if err != nil {
		return nil, usageErrorf("--max-size: %w", err)
	}
	rundownBytes, err := units.ParseBytes(f.rundownMax)
	if err != nil || rundownBytes <= 0 {
		return nil, usageErrorf("--rundown-max-size %q: give a size such as 256MB or 1GB (powers of 1000; 256MiB for powers of 1024)", f.rundownMax)
	}
	stop, err := parseStopEvent(f.stopProv, f.stopEv, f.stopPay)
	if err != nil {
		return nil, usageError(err)
	}
	if f.format = strings.ToLower(f.format); f.format == "nettrace" {
		f.format = ""
	}
	if f.format != "" {
		if f.conv, err = weighted.LookupFormat(f.format); err != nil {
			return nil, usageErrorf("--format: %w (or nettrace, the default)", err)
		}
	}
	if f.output == "-" {
		return nil, usageErrorf("-o -: a trace is written to a file (use 'clrdiag trace stream' for standard output)")
	}
	c := &collector{
		e: e, cfg: cfg, duration: duration, stop: stop, quiet: f.quiet,
		stopTimeout: f.stopTimeout, rundownTimeout: f.rundownTimeout, rundownMax: rundownBytes, maxSize: maxBytes, force: f.force,
	}
	f.plan = plan
	return c, nil
}

// collect runs the collection c and the --format conversion.
func (f *collectFlags) collect(ctx context.Context, c *collector) error {
	if f.format != "" {
		if err := checkOutput(convertedName(c.output, f.conv), f.force); err != nil {
			return ioError(err)
		}
	}
	if !f.quiet {
		f.plan.WriteTable(c.e.stderr)
	}
	if err := c.run(ctx); err != nil || f.format == "" {
		return err
	}
	summary, err := convertTrace(c.e, c.output, convertedName(c.output, f.conv), f.conv, &f.pf, f.force)
	if err != nil {
		return fmt.Errorf("convert the trace to %s (the .nettrace file is kept): %w", f.format, err)
	}
	if !f.quiet {
		fmt.Fprintf(c.e.stderr, "Converted: %s\n", summary)
	}
	return nil
}

// defaultTraceName is <name>_<yyyyMMdd>_<HHmmss>.nettrace as dotnet-trace.
func defaultTraceName(ctx context.Context, e *env, t *target) string {
	name := targetProcessName(ctx, e, t)
	if name == "" {
		name = "trace"
	}
	// The name is the target's to choose: keep it from naming a path.
	return fmt.Sprintf("%s_%s.nettrace", safeName(name), time.Now().Format("20060102_150405"))
}

// collector runs one trace collection.
type collector struct {
	e              *env
	t              *target
	cfg            eventpipe.Config
	duration       time.Duration
	stop           *eventpipe.EventFilter
	quiet          bool
	stopTimeout    time.Duration
	rundownTimeout time.Duration
	rundownMax     int64
	maxSize        int64
	output         string
	force          bool // replace an existing output file
}

func (c *collector) say(format string, args ...any) {
	if !c.quiet {
		fmt.Fprintf(c.e.stderr, format, args...)
	}
}

// run collects the trace: the session is drained into the file (through a
// spool that the decoder follows to count events and watch for the
// stopping event), then the file is checked, repaired when the stream
// stopped early, and summed up.
//
// The first interrupt (Ctrl-C, SIGTERM) is the normal stop; a second one
// abandons the stop and the rundown at once. The file is valid either way
// and the exit status is 0 (the rundown's state is printed): the trace was
// what the user asked for.
func (c *collector) run(ctx context.Context) error {
	path, err := filepath.Abs(c.output)
	if err != nil {
		return err
	}
	// Interrupts are counted from here: the first stops the trace, the
	// second abandons the stop.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	sess, f, err := c.start(ctx, path)
	if err != nil {
		return err
	}
	defer sess.Close()
	defer f.Close()
	spool := eventpipe.NewSpool(f)

	stop := make(chan eventpipe.StopReason, 8)
	request := func(r eventpipe.StopReason) {
		select {
		case stop <- r:
		default:
		}
	}
	dctx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	defer c.watchStops(ctx, sigs, request, abandon)()

	c.say("Process        : %d\nOutput file    : %s\nSession        : 0x%X (CollectTracing%d)\n\n", c.t.PID, path, sess.ID, sess.Version)
	if c.duration > 0 {
		c.say("Collecting for %v. Press Ctrl-C to stop early.\n", c.duration)
	} else {
		c.say("Press <Enter> or <Ctrl-C> to stop the trace.\n")
	}
	var tally eventpipe.Tally
	stopStatus := c.statusLine(time.Now(), spool, &tally).run()
	dcfg := c.drainConfig(stopStatus)
	dcfg.Stop = stop
	// The decoder follows the same bytes from the file to count events,
	// detect drops and damage, and watch for the stopping event; this
	// never slows the copy.
	res, drainErr := sess.DrainDecode(dctx, spool, dcfg, tally.Consumer(c.stop))
	stopStatus()
	c.reportDrain(res, drainErr)
	return c.finish(f, path, res, drainErr, tally.Stats())
}

// start starts the session, creates the trace file and resumes a runtime
// that waits for the session.
func (c *collector) start(ctx context.Context, path string) (*eventpipe.Session, *os.File, error) {
	sess, err := c.t.startSession(ctx, c.cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range sess.Warnings {
		fmt.Fprintf(c.e.stderr, "warning: %s\n", w)
	}
	f, err := safefile.Create(path, safefile.Options{Overwrite: c.force, Private: true})
	if err != nil {
		_ = sess.Stop(context.Background())
		sess.Close()
		return nil, nil, &ExitError{Code: exitIO, Err: fmt.Errorf("create the trace file: %w", err)}
	}
	if err := c.t.started(ctx); err != nil {
		fmt.Fprintf(c.e.stderr, "warning: resuming the runtime: %v\n", err)
	}
	return sess, f, nil
}

// watchStops turns interrupts, Enter and the target's exit into stop
// requests; a second interrupt abandons the session. The returned func
// ends the watch.
func (c *collector) watchStops(ctx context.Context, sigs <-chan os.Signal, request func(eventpipe.StopReason), abandon func()) func() {
	done := make(chan struct{})
	enter, exited, ctxDone := c.enterPressed(), c.exited(), ctx.Done()
	go func() {
		interrupts := 0
		for {
			select {
			case <-sigs:
				interrupts++
				if interrupts == 1 {
					request(eventpipe.StopInterrupt)
					continue
				}
				c.say("\nAbandoning the rundown; method names for stacks may be missing.\n")
				abandon()
				return
			case <-ctxDone: // the root's view of the first interrupt
				ctxDone = nil
				request(eventpipe.StopInterrupt)
			case <-enter:
				enter = nil
				request(eventpipe.StopUser)
			case <-exited:
				exited = nil
				request(eventpipe.StopTargetExit)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// drainConfig is the session's bounds, with progress messages once the
// stop is asked for (stopStatus ends the status line first).
func (c *collector) drainConfig(stopStatus func()) eventpipe.DrainConfig {
	lastPhase := eventpipe.PhaseCollecting
	return eventpipe.DrainConfig{
		Duration: c.duration, StopTimeout: c.stopTimeout, RundownTimeout: c.rundownTimeout,
		MaxBytes: c.maxSize, MaxRundownBytes: c.rundownMax, ProgressInterval: 2 * time.Second,
		Progress: func(p eventpipe.DrainProgress) {
			switch {
			case p.Phase == eventpipe.PhaseStopping && lastPhase == eventpipe.PhaseCollecting:
				stopStatus()
				c.say("\nStopping the trace (%s). Waiting for the rundown; this can take a while in a large application. Press Ctrl-C again to abandon it.\n", p.Reason)
			case p.Phase != eventpipe.PhaseCollecting && p.InPhase > time.Second:
				c.say("  still waiting for the %s (%v, %s received)\n", map[bool]string{true: "stop to be acknowledged", false: "rundown"}[p.Phase == eventpipe.PhaseStopping], p.InPhase.Round(time.Second), units.FormatBytes(p.Bytes))
			}
			lastPhase = p.Phase
		},
	}
}

// finish checks the trace file once the session is over: it removes a
// file that is no trace, repairs one that stopped early, sums it up and
// returns the command's result.
func (c *collector) finish(f *os.File, path string, res eventpipe.DrainResult, drainErr error, stats nettrace.Stats) error {
	if errors.Is(drainErr, eventpipe.ErrNotNettrace) {
		f.Close()
		os.Remove(path)
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%w; the session was stopped and no file was kept. Is the endpoint a .NET runtime?", drainErr)}
	}
	// Damage the decoder found as the stream arrived (the session was
	// stopped at once): the file keeps the complete blocks before it.
	var damage *nettrace.FormatError
	if !eventpipe.IsDamage(res.DecodeErr) || !errors.As(res.DecodeErr, &damage) {
		damage = nil
	}
	cut := ""
	if damage != nil || !stats.Complete || drainErr != nil {
		cut = c.repair(f, damage, drainErr, &stats)
	}
	if err := f.Sync(); err != nil && drainErr == nil {
		return ioError(fmt.Errorf("flush the trace file: %w", unwrapPath(err)))
	}
	// A trace without a single event is no trace: say why, keep no file.
	if stats.Events == 0 && drainErr == nil && damage == nil {
		if empty := c.emptyTrace(res); empty != nil {
			f.Close()
			os.Remove(path)
			return empty
		}
	}
	if !c.quiet {
		c.summary(f, path, res, stats, damage)
	}
	var oe *eventpipe.OutputError
	switch {
	case errors.As(drainErr, &oe):
		return ioError(fmt.Errorf("writing the trace failed after %s (%w); the session was stopped on the runtime and %s", units.FormatBytes(oe.Written), unwrapPath(oe.Err), cut))
	case errors.Is(drainErr, eventpipe.ErrMaxBytes):
		return ioError(fmt.Errorf("the trace reached --max-size (%s); the session was stopped on the runtime and %s; the rundown is missing, so stacks may not be symbolized", units.FormatBytes(c.maxSize), cut))
	case drainErr != nil:
		return ioError(drainErr)
	case damage != nil:
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("the runtime sent a damaged stream (%w); the session was stopped and %s keeps the %d events before it: %s", damage, path, stats.Events, cut)}
	}
	// A launched child's exit status becomes ours.
	return childResult(c.t, nil)
}

// repair makes the file end cleanly after its last complete block (before
// the damage, if any) when the stream stopped early, was damaged, or the
// output failed or hit its cap; it recounts the events the file keeps and
// returns what it did, for the messages.
func (c *collector) repair(f *os.File, damage *nettrace.FormatError, drainErr error, stats *nettrace.Stats) string {
	limit := int64(-1)
	if damage != nil {
		limit = damage.Offset
	}
	cut := ""
	n, rerr := nettrace.RepairFile(f, limit)
	switch {
	case rerr != nil && n <= 0:
		fmt.Fprintf(c.e.stderr, "warning: could not terminate the trace file cleanly: %v\n", rerr)
	case rerr != nil:
		cut = fmt.Sprintf("the file was cut to its last complete block (%s) and terminated, but: %v", units.FormatBytes(n), rerr)
	case n >= 0:
		cut = fmt.Sprintf("the file was cut to its last complete block (%s) and terminated: it is a valid trace", units.FormatBytes(n))
	}
	if n > 0 {
		// Count what the file holds now (the decoder may have read a
		// block that the cut left out).
		if _, err := f.Seek(0, io.SeekStart); err == nil {
			if st, err := nettrace.ReadStats(f); err == nil {
				stats.Events, stats.DroppedEvents = st.Events, st.DroppedEvents
			}
		}
	}
	if cut != "" && drainErr == nil && damage == nil {
		c.say("The stream ended early; %s.\n", cut)
	}
	return cut
}

// emptyTrace is the error of a session that gave no event, nil when an
// empty trace is what the providers wrote.
func (c *collector) emptyTrace(res eventpipe.DrainResult) error {
	switch {
	case res.Reason == eventpipe.StopEnded || res.Reason == eventpipe.StopTargetExit:
		return &ExitError{Code: exitTargetGone, Err: errors.New("the target ended the session before sending any event (it exited or was killed); no trace file was kept")}
	case !c.cfg.NoRundown && res.Rundown == eventpipe.RundownComplete:
		return &ExitError{Code: exitRuntime, Err: errors.New("the runtime sent no event, not even the rundown the session asked for; no trace file was kept")}
	}
	return nil
}

// summary prints where the trace is, what it holds and how the session
// ended.
func (c *collector) summary(f *os.File, path string, res eventpipe.DrainResult, stats nettrace.Stats, damage *nettrace.FormatError) {
	w := c.e.stderr
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(w, "\nTrace written to %s\n", path)
	fmt.Fprintf(w, "  size %s, %d events, %d dropped, rundown %s\n", units.FormatBytes(size), stats.Events, stats.DroppedEvents, c.rundownState(res))
	if err := res.DecodeErr; err != nil && !errors.Is(err, io.EOF) && stats.Complete && damage == nil {
		fmt.Fprintf(w, "  note: decoding while collecting stopped early: %v\n", err)
	}
	for _, warn := range res.Warnings() {
		switch warn.Kind {
		case eventpipe.WarnStreamError:
			fmt.Fprintf(w, "  note: %s\n", warn)
		case eventpipe.WarnEndedEarly:
			fmt.Fprintf(w, "  %s\n", warn)
		}
	}
	if stats.Events == 0 {
		fmt.Fprintln(w, "  note: the trace holds no event: the providers wrote nothing during the session")
	}
}

// drainHints are the warnings of a DrainResult that a session command
// prints, with the flags that set the bound behind them.
var drainHints = map[eventpipe.WarningKind]string{
	eventpipe.WarnDeadline:           " (duration + --stop-timeout + --rundown-timeout)",
	eventpipe.WarnStopUnacknowledged: " (--stop-timeout)",
	eventpipe.WarnRundownTimedOut:    " (--rundown-timeout: raise it if the application is large)",
	eventpipe.WarnRundownTooLarge:    " (--rundown-max-size)",
}

// printDrainWarnings warns about a session that ended short of its stop
// and rundown; with hints, naming the flag of the bound that passed.
func printDrainWarnings(w io.Writer, res eventpipe.DrainResult, hints bool) {
	for _, warn := range res.Warnings() {
		if hint, ok := drainHints[warn.Kind]; ok {
			if !hints {
				hint = ""
			}
			fmt.Fprintf(w, "warning: %s%s\n", warn, hint)
		}
	}
}

// reportDrain warns about a collection that ended without its rundown (the
// failures of the output are the command's error).
func (c *collector) reportDrain(res eventpipe.DrainResult, err error) {
	w := c.e.stderr
	if err == nil {
		printDrainWarnings(w, res, true)
	}
	if res.Rundown == eventpipe.RundownUnacknowledged || res.Rundown == eventpipe.RundownTimedOut || res.Rundown == eventpipe.RundownAbandoned {
		if err := checkRunning(c.t.PID, hostProc); err != nil {
			fmt.Fprintf(w, "warning: %v; the session could not be ended while it is stopped: a .NET Core 3.1 runtime may crash when it continues.\n", err)
		}
	}
}

func (c *collector) rundownState(res eventpipe.DrainResult) string {
	if c.cfg.NoRundown && res.Rundown == eventpipe.RundownComplete {
		return "not requested"
	}
	return res.Rundown.String()
}

func (c *collector) exited() <-chan struct{} {
	if c.t.Exited == nil {
		return nil
	}
	return c.t.Exited
}

// enterPressed is closed when the user presses Enter, if stdin is a terminal.
func (c *collector) enterPressed() <-chan struct{} {
	f, ok := c.e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		b := make([]byte, 1)
		for {
			n, err := f.Read(b)
			if err != nil {
				return
			}
			if n == 1 && (b[0] == '\n' || b[0] == '\r') {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// statusLine redraws a one-line status on stderr when it is a terminal.
type statusLine struct {
	w     io.Writer
	on    bool
	start time.Time
	spool *eventpipe.Spool
	tally *eventpipe.Tally
}

func (c *collector) statusLine(start time.Time, spool *eventpipe.Spool, tally *eventpipe.Tally) *statusLine {
	on := false
	if f, ok := c.e.stderr.(*os.File); ok && !c.quiet {
		on = term.IsTerminal(int(f.Fd()))
	}
	return &statusLine{w: c.e.stderr, on: on, start: start, spool: spool, tally: tally}
}

func (s *statusLine) render() string {
	el := time.Since(s.start).Round(time.Second)
	return fmt.Sprintf("\r[%s] %s written, %d events, %d dropped\x1b[K", formatElapsed(el), units.FormatBytes(s.spool.Written()), s.tally.Events(), s.tally.Dropped())
}

// run begins redrawing every half second; the returned func stops it
// and ends the line.
func (s *statusLine) run() func() {
	if !s.on {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			fmt.Fprint(s.w, s.render())
			select {
			case <-done:
				fmt.Fprintln(s.w, s.render())
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func formatElapsed(d time.Duration) string {
	h := int(d / time.Hour)
	m := int(d/time.Minute) % 60
	sec := int(d/time.Second) % 60
	return fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
}
