package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/nettrace"
	"github.com/spf13/cobra"
)

func init() {
	registerTrace(newTraceStreamCmd)
	registerTrace(newTraceListProfilesCmd)
}

func newTraceStreamCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	var (
		sf        sessionFlags
		asJSON    bool
		providers []string
		events    []string
	)
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Print the events of a live EventPipe session as they arrive",
		Long: "Start an EventPipe session in the target and print its events live, one per line\n" +
			"(--json: the JSON lines of 'clrdiag trace events', for jq). The session's bytes go\n" +
			"through a temporary file, so a slow consumer never makes the runtime drop events.\n" +
			"Rundown is off unless --rundown asks for it. Stops on Ctrl-C, SIGTERM, --duration or\n" +
			"when the target exits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sf.rundown == "" {
				sf.rundown = "false"
			}
			_, cfg, duration, err := sf.plan()
			if err != nil {
				return err
			}
			filter, err := newEventFilter(providers, events)
			if err != nil {
				return usageError(err)
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			sess, err := eventpipe.Start(ctx, t.Client, cfg)
			if err != nil {
				return fmt.Errorf("start the session: %w", err)
			}
			defer sess.Close()
			for _, w := range sess.Warnings {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
			tmp, err := os.CreateTemp("", "clrdiag-stream-*.nettrace")
			if err != nil {
				_ = sess.Stop(context.Background())
				return err
			}
			defer func() {
				tmp.Close()
				os.Remove(tmp.Name())
			}()
			spool := eventpipe.NewSpool(tmp)
			copyDone := make(chan struct{})
			go func() {
				_, _ = spool.Copy(sess)
				close(copyDone)
			}()
			if err := t.started(ctx); err != nil {
				fmt.Fprintf(e.stderr, "warning: resuming the runtime: %v\n", err)
			}

			// Printing reads the spool until the stream ends, also after
			// an interrupt, so the events up to the stop are shown.
			printDone := make(chan error, 1)
			go func() {
				rd, err := nettrace.NewReader(bufio.NewReaderSize(spool.NewReader(), 1<<16))
				if err != nil {
					printDone <- err
					return
				}
				pcmd := &cobra.Command{}
				pcmd.SetContext(context.Background())
				printDone <- printEvents(pcmd, e.stdout, rd, filter, 0, asJSON, true, "session stream")
			}()

			var timer <-chan time.Time
			if duration > 0 {
				timer = time.After(duration)
			}
			select {
			case <-ctx.Done():
			case <-timer:
			case <-copyDone:
			case err := <-printDone:
				// The output went away (e.g. a closed pipe): stop.
				_ = sess.Stop(context.Background())
				return err
			}
			select {
			case <-copyDone:
			default:
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := sess.Stop(sctx); err != nil {
					fmt.Fprintf(e.stderr, "warning: the runtime did not acknowledge the stop: %v\n", err)
					sess.Close()
				}
				cancel()
				select {
				case <-copyDone:
				case <-time.After(30 * time.Second):
					fmt.Fprintln(e.stderr, "warning: the session did not end 30s after the stop; closing it")
					sess.Close()
					<-copyDone
				}
			}
			err = <-printDone
			var ee *ExitError
			if errors.As(err, &ee) && ee.Code == exitDamaged {
				// A stream cut short (killed target) is not an error of ours.
				fmt.Fprintf(e.stderr, "the session stream ended early: %v\n", ee.Err)
				return nil
			}
			return err
		},
	}
	tf.register(cmd)
	sf.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per line (as 'clrdiag trace events --json')")
	fl.StringArrayVar(&providers, "provider", nil, "print only events of this provider (repeatable)")
	fl.StringArrayVar(&events, "event", nil, "print only events with this id or name (repeatable)")
	return cmd
}

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
