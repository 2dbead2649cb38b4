package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Spellings of the dotnet tools that clrdiag accepts besides its own.
//
//   - 'trace ps', 'counters ps' (and 'gcdump ps'): 'clrdiag ps' inside the
//     group, as dotnet-trace, dotnet-counters and dotnet-gcdump have it.
//   - 'dump collect' (dotnet-dump), 'stack report' (dotnet-stack) and
//     'monitor collect' (dotnet-monitor): the top-level command under the
//     verb of that tool.
//   - --flag:value for boolean flags (--resume-runtime:false), which
//     dotnet-trace's System.CommandLine parser accepts besides --flag value.

// psGroups are the groups that get a 'ps' subcommand when they exist.
var psGroups = []string{"trace", "counters", "gcdump"}

// verbAliases are 'tool verb' spellings of top-level commands.
var verbAliases = []struct{ command, verb, tool string }{
	{"dump", "collect", "dotnet-dump collect"},
	{"stack", "report", "dotnet-stack report"},
	{"monitor", "collect", "dotnet-monitor collect"},
}

// addAliases adds the alias subcommands to root. Each alias is a fresh
// instance of the command it stands for (its own flags), renamed.
func addAliases(e *env, root *cobra.Command) {
	build := func(name string) *cobra.Command {
		for _, c := range commands {
			if c.name == name {
				return c.build(e)
			}
		}
		return nil
	}
	for _, g := range psGroups {
		AddPSAlias(e, findChild(root, g))
	}
	for _, a := range verbAliases {
		parent := findChild(root, a.command)
		if parent == nil || findChild(parent, a.verb) != nil {
			continue
		}
		alias := build(a.command)
		if alias == nil {
			continue
		}
		alias.Use = a.verb + strings.TrimPrefix(alias.Use, a.command)
		alias.Short = "Same as 'clrdiag " + a.command + "' (the spelling of " + a.tool + ")"
		alias.Long = alias.Short + ".\n\n" + alias.Long
		parent.AddCommand(alias)
	}
}

// AddPSAlias adds a 'ps' subcommand, the same as 'clrdiag ps', to the
// command group g (nothing when g is nil or already has one). A new group
// of a dotnet tool that has 'ps' (gcdump) gets it from psGroups; a group
// added elsewhere can call this from its constructor.
func AddPSAlias(e *env, g *cobra.Command) {
	if g == nil || findChild(g, "ps") != nil {
		return
	}
	ps := newPSCmd(e)
	ps.Short = "List the .NET processes that can be diagnosed (same as 'clrdiag ps')"
	g.AddCommand(ps)
}

// findChild returns the direct subcommand of c named name, or nil.
func findChild(c *cobra.Command, name string) *cobra.Command {
	if c == nil {
		return nil
	}
	for _, s := range c.Commands() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// colonBools rewrites --flag:value to --flag=value when flag is a boolean
// flag of the command the arguments select (dotnet-trace writes
// --resume-runtime:false). Arguments after "--" are left alone.
func colonBools(root *cobra.Command, args []string) []string {
	var candidates []int
	for i, a := range args {
		if a == "--" {
			break
		}
		if name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), ":"); ok && strings.HasPrefix(a, "--") && name != "" && !strings.Contains(name, "=") {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return args
	}
	// Find the command without the candidates, which cobra would take for
	// unknown flags with values.
	rest := make([]string, 0, len(args))
	skip := map[int]bool{}
	for _, i := range candidates {
		skip[i] = true
	}
	for i, a := range args {
		if !skip[i] {
			rest = append(rest, a)
		}
	}
	cmd, _, err := root.Find(rest)
	if err != nil || cmd == nil {
		return args
	}
	out := append([]string(nil), args...)
	for _, i := range candidates {
		name, value, _ := strings.Cut(strings.TrimPrefix(args[i], "--"), ":")
		f := cmd.Flags().Lookup(name)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(name)
		}
		if isBoolFlag(f) {
			out[i] = "--" + name + "=" + value
		}
	}
	return out
}

func isBoolFlag(f *pflag.Flag) bool {
	return f != nil && f.Value.Type() == "bool"
}
