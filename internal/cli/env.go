package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/spf13/cobra"
)

func init() { register("env", newEnvCmd) }

func newEnvCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the target's environment variables (.NET 5+)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			vars, err := t.Client.Environment(ctx)
			if err != nil {
				return err
			}
			sort.Strings(vars)
			if asJSON {
				m := make(map[string]string, len(vars))
				for _, kv := range vars {
					k, v, _ := strings.Cut(kv, "=")
					m[k] = v
				}
				return writeJSON(e.stdout, m)
			}
			for _, kv := range vars {
				fmt.Fprintln(e.stdout, termsafe.String(kv))
			}
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object NAME -> value")
	cmd.AddCommand(newEnvSetCmd(e))
	return cmd
}

func newEnvSetCmd(e *env) *cobra.Command {
	tf := e.targetFlags()
	cmd := &cobra.Command{
		Use:   "set NAME=VALUE",
		Short: "Set an environment variable in the target (.NET 6+)",
		Long:  "Set an environment variable inside the running target (SetEnvironmentVariable, .NET 6+).\nAn empty value (NAME=) removes the variable.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, value, ok := strings.Cut(args[0], "=")
			if !ok || name == "" {
				return usageError(errors.New("env set: give NAME=VALUE (NAME= removes the variable)"))
			}
			ctx := cmd.Context()
			t, err := tf.resolve(ctx)
			if err != nil {
				return err
			}
			defer t.close()
			if err := t.Client.SetEnvironmentVariable(ctx, name, value); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "set %s in process %d\n", name, t.PID)
			return nil
		},
	}
	tf.register(cmd)
	return cmd
}
