package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/units"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/clrdiag/clrdiag/nettrace/eventfmt"
	"github.com/spf13/cobra"
)

func init() {
	registerTrace("stream", newTraceStreamCmd)
	registerTrace("list-profiles", newTraceListProfilesCmd)
}

func newTraceStreamCmd(e *env) *cobra.Command {
	tf := e.sessionTargetFlags(nil)
	var (
		sf             sessionFlags
		asJSON         bool
		providers      []string
		events         []string
		stopTimeout    time.Duration
		rundownTimeout time.Duration
		spoolSize      string
	)
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Print the events of a live EventPipe session as they arrive",
		Long: "Start an EventPipe session in the target and print its events live, one per line\n" +
			"(--json: the JSON lines of 'clrdiag trace events', for jq). The session's bytes go\n" +
			"through a temporary file, so a slow consumer never makes the runtime drop events.\n" +
			"That file is a ring of --spool-size bytes (when the printing falls that far behind,\n" +
			"the runtime's buffer takes the excess); it is removed from the directory as soon as\n" +
			"it is created, so nothing is left behind even when clrdiag is killed.\n" +
			"Rundown is off unless --rundown asks for it. Stops on Ctrl-C, SIGTERM, --duration, when\n" +
			"the target exits, or when the output goes away (a closed pipe, as with | head); a\n" +
			"second Ctrl-C abandons the stop at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sf.rundown == "" {
				sf.rundown = "false"
			}
			_, cfg, duration, err := sf.plan()
			if err != nil {
				return err
			}
			filter, err := eventfmt.NewFilter(providers, events)
			if err != nil {
				return usageError(err)
			}
			ring, err := units.ParseBytes(spoolSize)
			if err != nil || ring < 4_000_000 {
				return usageErrorf("--spool-size %q: give at least 4MB", spoolSize)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			s := &streamer{e: e, t: t, cfg: cfg, filter: filter, asJSON: asJSON, ring: ring,
				drain: eventpipe.DrainConfig{Duration: duration, StopTimeout: stopTimeout, RundownTimeout: rundownTimeout}}
			return s.run(ctx)
		},
	}
	tf.register(cmd)
	sf.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per line (as 'clrdiag trace events --json')")
	fl.StringArrayVar(&providers, "provider", nil, "print only events of this provider (repeatable)")
	fl.StringArrayVar(&events, "event", nil, "print only events with this id or name (repeatable)")
	fl.DurationVar(&stopTimeout, "stop-timeout", eventpipe.DefaultStopTimeout, "how long to wait for the runtime to acknowledge the stop")
	fl.DurationVar(&rundownTimeout, "rundown-timeout", eventpipe.DefaultRundownTimeout, "how long to wait for the end of the session after the stop")
	fl.StringVar(&spoolSize, "spool-size", "256MB", "size of the temporary ring file the session goes through")
	return cmd
}

// streamer runs one trace stream.
type streamer struct {
	e      *env
	t      *target
	cfg    eventpipe.Config
	filter *eventfmt.Filter
	asJSON bool
	ring   int64
	drain  eventpipe.DrainConfig
}

// run drains the session into a ring spool that a printing goroutine
// follows. The first interrupt stops the session (the events up to the
// stop are printed), the second abandons it; an output that goes away
// (EPIPE) abandons it too and is a normal end.
func (s *streamer) run(ctx context.Context) error {
	e := s.e
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// With SIGPIPE notified, writing to a closed pipe on stdout returns
	// EPIPE instead of killing the process, so the session is stopped.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	sess, err := s.t.startSession(ctx, s.cfg)
	if err != nil {
		return err
	}
	defer sess.Close()
	for _, w := range sess.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	spool, err := eventpipe.NewTempSpool("", s.ring)
	if err != nil {
		_ = sess.Stop(context.Background())
		return &ExitError{Code: exitIO, Err: fmt.Errorf("create the temporary spool file: %w", err)}
	}
	defer spool.Close()
	if err := s.t.started(ctx); err != nil {
		fmt.Fprintf(e.stderr, "warning: resuming the runtime: %v\n", err)
	}

	dctx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	// Abandoning also releases a copy waiting for room in the ring.
	defer context.AfterFunc(dctx, func() { spool.Finish(nil) })()
	stop := make(chan eventpipe.StopReason, 4)

	// Printing reads the spool until the stream ends, also after an
	// interrupt, so the events up to the stop are shown.
	reader := spool.NewReader()
	printDone := make(chan error, 1)
	var events int64 // read once printDone has its value
	go func() {
		defer reader.Close()
		rd, err := nettrace.NewReader(bufio.NewReaderSize(reader, 1<<16))
		if err == nil {
			err = printEvents(context.Background(), e.stdout, rd, s.filter, 0, s.asJSON, true, "session stream")
			events = rd.Stats().Events
		}
		var ee *ExitError
		var fe *nettrace.FormatError
		switch {
		case err != nil && !errors.As(err, &ee):
			abandon() // the output failed: nothing more can be shown
		case errors.As(err, &fe) && !fe.Truncated():
			select { // damage: nothing after it can be read
			case stop <- eventpipe.StopDamaged:
			default:
			}
		}
		printDone <- err
	}()

	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		interrupts := 0
		ctxDone := ctx.Done()
		for {
			select {
			case <-sigs:
				if interrupts++; interrupts > 1 {
					fmt.Fprintln(e.stderr, "Abandoning the session.")
					abandon()
					return
				}
				select {
				case stop <- eventpipe.StopInterrupt:
				default:
				}
			case <-ctxDone:
				ctxDone = nil
				select {
				case stop <- eventpipe.StopInterrupt:
				default:
				}
			case <-watchDone:
				return
			}
		}
	}()
	cfg := s.drain
	cfg.Stop = stop
	res, drainErr := sess.Drain(dctx, spool, cfg)
	spool.Finish(nil)
	var printErr error
	printed := false
	if dctx.Err() == nil {
		printErr, printed = <-printDone, true
	} else {
		// Abandoned: the printer may be stuck on a blocked output.
		select {
		case printErr = <-printDone:
			printed = true
		case <-time.After(time.Second):
		}
	}
	ended := res.Reason == eventpipe.StopEnded || res.Reason == eventpipe.StopTargetExit

	switch {
	case printErr != nil && isBrokenPipe(printErr):
		return nil // the reader of the output went away (| head): a normal end
	case printErr != nil:
		var ee *ExitError
		var fe *nettrace.FormatError
		if errors.As(printErr, &ee) && errors.As(printErr, &fe) && fe.Truncated() {
			// A stream cut short (killed target) is not an error of ours.
			fmt.Fprintf(e.stderr, "the session stream ended early: %v\n", ee.Err)
			break
		}
		if errors.As(printErr, &ee) {
			return &ExitError{Code: exitDamaged, Err: fmt.Errorf("the runtime sent a damaged stream (%w); the session was stopped after the events before it", ee.Err)}
		}
		return ioError(fmt.Errorf("write the events: %w", printErr))
	case errors.Is(drainErr, eventpipe.ErrNotNettrace):
		return &ExitError{Code: exitDamaged, Err: fmt.Errorf("%w; the session was stopped. Is the endpoint a .NET runtime?", drainErr)}
	case drainErr != nil && !errors.Is(drainErr, eventpipe.ErrSpoolClosed):
		return &ExitError{Code: exitIO, Err: fmt.Errorf("the temporary spool file failed: %w", drainErr)}
	}
	// Without hints: not every bound has a flag here.
	printDrainWarnings(e.stderr, res, false)
	if ended && printed && events == 0 && (printErr == nil || isTruncation(printErr)) {
		return &ExitError{Code: exitTargetGone, Err: errors.New("the target ended the session before sending any event (it exited or was killed)")}
	}
	if ended {
		fmt.Fprintln(e.stderr, "The target ended the session (it exited or was killed).")
	}
	return childResult(s.t, nil)
}

// isBrokenPipe reports whether err is a write to a pipe whose reader is
// gone.
func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

func newTraceListProfilesCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list-profiles",
		Short: "List the named provider sets usable with --profile",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, p := range eventpipe.Profiles() {
				name := p.Name
				if p.Legacy {
					name += " (older dotnet-trace default)"
				}
				fmt.Fprintf(e.stdout, "%s\n    %s\n", name, p.Description)
				for _, pr := range p.Providers {
					fmt.Fprintf(e.stdout, "    %s  keywords 0x%X  level %s", pr.Name, pr.Keywords, pr.Level)
					if len(pr.Args) > 0 {
						keys := ""
						for i, a := range pr.Args {
							if i > 0 {
								keys += ", "
							}
							keys += a.Key
						}
						fmt.Fprintf(e.stdout, "  arguments: %s", keys)
					}
					fmt.Fprintln(e.stdout)
				}
				if p.RundownKeyword != 0 {
					fmt.Fprintf(e.stdout, "    rundown keyword 0x%X (needs .NET 9; older runtimes: %s)\n", p.RundownKeyword, map[bool]string{true: "no rundown", false: "default rundown"}[p.DropRundownOnFallback])
				}
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "Default when no --providers, --profile or --clrevents is given: %v\n", eventpipe.DefaultProfileNames())
			return nil
		},
	}
}
