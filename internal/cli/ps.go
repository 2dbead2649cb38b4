package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/spf13/cobra"
)

func init() { register("ps", newPSCmd) }

type psEntry struct {
	PID          int    `json:"pid"`
	Name         string `json:"name"`
	CommandLine  string `json:"commandLine"`
	Socket       string `json:"socket"`
	NamespacePID int    `json:"namespacePid,omitempty"`
}

func newPSCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the .NET processes that can be diagnosed",
		Long: "List the .NET processes on this machine that publish a diagnostic endpoint: pid, name,\n" +
			"diagnostic socket and command line. Processes in other containers are found through /proc when\n" +
			"clrdiag runs with the host's PID namespace and enough privileges (CAP_SYS_PTRACE).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := e.global.discoverConfig()
			if cfg == nil {
				cfg = &transport.DiscoverConfig{}
			}
			cfg.Untrusted = func(u *transport.UntrustedSocketError) {
				if u.Stale {
					return // left by an exited runtime whose pid was reused: skipped like one whose pid is gone
				}
				fmt.Fprintf(e.stderr, "clrdiag: ignored %s for process %d: %s (--trust-socket uses it anyway)\n", termsafe.String(u.Path), u.PID, termsafe.String(u.Reason))
			}
			procs, err := transport.Discover(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			self := os.Getpid()
			entries := make([]psEntry, 0, len(procs))
			for _, p := range procs {
				if p.PID == self {
					continue
				}
				entries = append(entries, psEntry{PID: p.PID, Name: p.Name, CommandLine: p.CommandLine, Socket: p.Endpoint.Address, NamespacePID: p.NamespacePID})
			}
			if asJSON {
				return writeJSON(e.stdout, entries)
			}
			if len(entries) == 0 {
				fmt.Fprintln(e.stderr, "no .NET processes found (a process is listed when its diagnostic socket is visible and it still runs; see 'clrdiag ps --help')")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PID\tNAME\tSOCKET\tCOMMAND LINE")
			for _, p := range entries {
				pid := fmt.Sprint(p.PID)
				if p.NamespacePID != 0 {
					pid += fmt.Sprintf(" (%d in its namespace)", p.NamespacePID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pid, termsafe.String(p.Name), termsafe.String(p.Socket), termsafe.String(p.CommandLine))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {pid, name, commandLine, socket}")
	return cmd
}
