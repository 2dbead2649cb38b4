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

func init() { register("info", newInfoCmd) }

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
	// Name is the process name, from the operating system.
	Name string `json:"name,omitempty"`
	// Source is "ProcessInfo", or "os" for a runtime without ProcessInfo
	// (.NET Core 3.x), whose facts come from the operating system (as the
	// monitor's GET /processes/{pid}).
	Source string `json:"source"`
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
					return infoFallback(ctx, e, t, err, asJSON)
				}
				return err
			}
			j := infoJSON{
				PID: pi.PID, RuntimeCookie: pi.RuntimeCookie.String(), CommandLine: pi.CommandLine, OS: pi.OS, Arch: pi.Arch,
				EntrypointAssembly: pi.ManagedEntrypointAssemblyName, ClrProductVersion: pi.ClrProductVersion,
				RuntimeIdentifier: pi.RuntimeIdentifier, ProcessInfoVersion: pi.Version, ProcessInfo3Payload: pi.PayloadVersion,
				DiagnosticSocketPath: t.Endpoint.Address, Source: "ProcessInfo",
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

// infoFallback explains that ProcessInfo needs .NET 5 and prints what the
// operating system says about the process instead, on stdout (as JSON with
// --json, with "source": "os", as the monitor does). It then fails with
// exitRuntime (the runtime does not support the request, as dotnet-trace's
// PlatformNotSupported), like every command that prints what it could.
func infoFallback(ctx context.Context, e *env, t *target, cause error, asJSON bool) error {
	fmt.Fprintln(e.stderr, "clrdiag: the target's runtime does not support ProcessInfo: it needs .NET 5 or later (this is likely .NET Core 3.x); what the operating system says is on stdout.")
	if t.PID == 0 {
		return &ExitError{Code: exitRuntime, Err: cause}
	}
	j := infoJSON{PID: uint64(t.PID), DiagnosticSocketPath: t.Endpoint.Address, Source: "os"}
	if procs, err := transport.Discover(ctx, e.global.discoverConfig()); err == nil {
		for _, p := range procs {
			if p.PID == t.PID {
				j.Name, j.CommandLine = p.Name, p.CommandLine
			}
		}
	}
	if asJSON {
		if err := writeJSON(e.stdout, j); err != nil {
			return err
		}
		return &ExitError{Code: exitRuntime}
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Process ID:\t%d\n", j.PID)
	if j.Name != "" {
		fmt.Fprintf(tw, "Name:\t%s\n", termsafe.String(j.Name))
	}
	if j.CommandLine != "" {
		fmt.Fprintf(tw, "Command line:\t%s\n", termsafe.String(j.CommandLine))
	}
	if j.DiagnosticSocketPath != "" {
		fmt.Fprintf(tw, "Socket:\t%s\n", termsafe.String(j.DiagnosticSocketPath))
	}
	fmt.Fprintf(tw, "Answered by:\toperating system (no ProcessInfo before .NET 5)\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	return &ExitError{Code: exitRuntime}
}
