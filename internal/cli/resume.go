package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { register("resume", newResumeCmd) }

func newResumeCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Resume a runtime paused at startup (ResumeRuntime, .NET 5+)",
		Long: "Resume a runtime that started paused, waiting on a diagnostic port with 'suspend'\n" +
			"(DOTNET_DiagnosticPorts=...,suspend or DOTNET_DefaultDiagnosticPortSuspend=1).\n" +
			"A runtime that is not paused ignores it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.Client.ResumeRuntime(ctx); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "resumed process %d\n", t.PID)
			return nil
		},
	}
	tf.register(cmd)
	return cmd
}
