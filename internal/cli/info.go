package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/spf13/cobra"
)

func init() { register(newInfoCmd) }

type infoJSON struct {
	PID                  uint64 `json:"pid"`
	RuntimeCookie        string `json:"runtimeCookie"`
	CommandLine          string `json:"commandLine"`
	OS                   string `json:"os"`
	Arch                 string `json:"arch"`
	EntrypointAssembly   string `json:"entrypointAssembly,omitempty"`
	ClrProductVersion    string `json:"clrProductVersion,omitempty"`
	RuntimeIdentifier    string `json:"runtimeIdentifier,omitempty"`
	ProcessInfoVersion   int    `json:"processInfoVersion"`
	ProcessInfo3Payload  uint32 `json:"processInfo3PayloadVersion,omitempty"`
	DiagnosticSocketPath string `json:"socket,omitempty"`
}

func newInfoCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show what the runtime reports about itself (ProcessInfo, .NET 5+)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			pi, err := t.Client.ProcessInfo(ctx)
			if err != nil {
				if errors.Is(err, ipc.ErrUnknownCommand) {
					return infoFallback(ctx, e, t, err)
				}
				return err
			}
			j := infoJSON{
				PID: pi.PID, RuntimeCookie: pi.RuntimeCookie.String(), CommandLine: pi.CommandLine, OS: pi.OS, Arch: pi.Arch,
				EntrypointAssembly: pi.ManagedEntrypointAssemblyName, ClrProductVersion: pi.ClrProductVersion,
				RuntimeIdentifier: pi.RuntimeIdentifier, ProcessInfoVersion: pi.Version, ProcessInfo3Payload: pi.PayloadVersion,
				DiagnosticSocketPath: t.Endpoint.Address,
			}
			if asJSON {
				return writeJSON(e.stdout, j)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			row := func(k, v string) {
				if v != "" {
					fmt.Fprintf(tw, "%s:\t%s\n", k, termsafe.String(v))
				}
			}
			row("Process ID", fmt.Sprint(j.PID))
			row("Command line", j.CommandLine)
			row("Runtime version", j.ClrProductVersion)
			row("Entry assembly", j.EntrypointAssembly)
			row("OS", j.OS)
			row("Architecture", j.Arch)
			row("Runtime identifier", j.RuntimeIdentifier)
			row("Runtime cookie", j.RuntimeCookie)
			row("Socket", j.DiagnosticSocketPath)
			row("Answered by", fmt.Sprintf("ProcessInfo%s", map[int]string{1: "", 2: "2", 3: "3"}[j.ProcessInfoVersion]))
			return tw.Flush()
		},
	}
	tf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// infoFallback explains that ProcessInfo needs .NET 5 and prints what can
// still be said from the operating system, then fails with status 4
// (exitRuntime: not supported by the target), as dotnet-trace's
// PlatformNotSupported.
func infoFallback(ctx context.Context, e *env, t *target, cause error) error {
	fmt.Fprintln(e.stderr, "clrdiag: the target's runtime does not support ProcessInfo: it needs .NET 5 or later (this is likely .NET Core 3.x).")
	if t.PID != 0 {
		fmt.Fprintln(e.stderr, "What the operating system says:")
		fmt.Fprintf(e.stderr, "  Process ID:   %d\n", t.PID)
		if procs, err := transport.Discover(ctx, nil); err == nil {
			for _, p := range procs {
				if p.PID == t.PID {
					fmt.Fprintf(e.stderr, "  Name:         %s\n  Command line: %s\n", termsafe.String(p.Name), termsafe.String(p.CommandLine))
				}
			}
		}
		if t.Endpoint.Address != "" {
			fmt.Fprintf(e.stderr, "  Socket:       %s\n", termsafe.String(t.Endpoint.Address))
		}
	}
	return &ExitError{Code: exitRuntime, Err: cause}
}
