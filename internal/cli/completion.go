package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/eventpipe"
	"github.com/clrdiag/clrdiag/internal/termsafe"
	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/weighted"
)

// Shell completion: cobra's 'clrdiag completion bash|zsh|fish|powershell'
// writes the script; these functions complete flag values from what
// clrdiag knows (live processes, formats, profiles, counters).

// formatValues are the --format values, by command path.
func formatValues(path string) []string {
	switch path {
	case "clrdiag trace convert":
		return weighted.FormatNames()
	case "clrdiag trace collect":
		return append([]string{"nettrace"}, weighted.FormatNames()...)
	case "clrdiag counters collect":
		return []string{"csv", "json"}
	case "clrdiag gcdump convert":
		var names []string
		for _, f := range gcdumpFormats() {
			names = append(names, f.Name)
		}
		return names
	}
	return nil
}

// typeValues are the --type values, by command path.
func typeValues(path string) []string {
	switch path {
	case "clrdiag dump", "clrdiag dump collect":
		return []string{"full\tthe whole memory", "heap\tthe managed heap and what the runtime needs", "mini\tstacks and modules", "triage\ta mini dump with personal data removed"}
	case "clrdiag perfmap enable":
		return []string{"all", "perfmap", "jitdump"}
	}
	return nil
}

// wellKnownProviders are counter providers of the runtime and ASP.NET, as
// dotnet-counters lists them.
var wellKnownProviders = []string{
	"System.Runtime", "Microsoft.AspNetCore.Hosting", "Microsoft.AspNetCore.Http.Connections",
	"Microsoft-AspNetCore-Server-Kestrel", "System.Net.Http", "System.Net.NameResolution",
	"System.Net.Security", "System.Net.Sockets",
}

// registerCompletions adds the value completions to every command that has
// the flags.
func registerCompletions(e *env, root *cobra.Command) {
	fixed := func(values []string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	walk(root, func(c *cobra.Command) {
		fl := c.Flags()
		if f := fl.Lookup("process-id"); f != nil {
			_ = c.RegisterFlagCompletionFunc("process-id", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return completePIDs(e, cmd), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if f := fl.Lookup("name"); f != nil && fl.Lookup("process-id") != nil {
			_ = c.RegisterFlagCompletionFunc("name", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return completeNames(e, cmd), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if v := formatValues(c.CommandPath()); v != nil && fl.Lookup("format") != nil {
			_ = c.RegisterFlagCompletionFunc("format", fixed(v))
		}
		if v := typeValues(c.CommandPath()); v != nil && fl.Lookup("type") != nil {
			_ = c.RegisterFlagCompletionFunc("type", fixed(v))
		}
		if fl.Lookup("profile") != nil {
			var names []string
			for _, p := range eventpipe.Profiles() {
				names = append(names, p.Name+"\t"+p.Description)
			}
			_ = c.RegisterFlagCompletionFunc("profile", fixed(names))
		}
		if fl.Lookup("sample") != nil {
			var names []string
			for _, m := range profile.MeasureInfos() {
				names = append(names, m.Name+"\t"+m.Help)
			}
			_ = c.RegisterFlagCompletionFunc("sample", fixed(names))
		}
		if fl.Lookup("counters") != nil {
			v := append([]string(nil), wellKnownProviders...)
			for _, k := range counters.KnownCounters() {
				v = append(v, "System.Runtime["+k.Name+"]\t"+k.Description)
			}
			_ = c.RegisterFlagCompletionFunc("counters", fixed(v))
		}
	})
}

// completePIDs lists the .NET processes as "PID<TAB>name command line".
func completePIDs(e *env, cmd *cobra.Command) []string {
	procs, err := transport.Discover(cmd.Context(), e.global.discoverConfig())
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(procs))
	for _, p := range procs {
		out = append(out, strconv.Itoa(p.PID)+"\t"+termsafe.String(p.Name+" "+p.CommandLine))
	}
	return out
}

// completeNames lists the names of the .NET processes with their pids.
func completeNames(e *env, cmd *cobra.Command) []string {
	procs, err := transport.Discover(cmd.Context(), e.global.discoverConfig())
	if err != nil {
		return nil
	}
	pids := map[string][]string{}
	for _, p := range procs {
		pids[p.Name] = append(pids[p.Name], strconv.Itoa(p.PID))
	}
	out := make([]string, 0, len(pids))
	for n, ps := range pids {
		out = append(out, fmt.Sprintf("%s\tpid %s", termsafe.String(n), strings.Join(ps, ", ")))
	}
	sort.Strings(out)
	return out
}
