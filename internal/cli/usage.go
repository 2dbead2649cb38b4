package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/clrdiag/clrdiag/internal/named"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// groupAnnotation marks a command that only groups subcommands (trace,
// counters, perfmap...): it runs nothing itself.
const groupAnnotation = "clrdiag-group"

// setupTree finishes the command tree once every command is added: command
// groups print their help when called bare and reject an unknown
// subcommand with a suggestion; every error cobra finds in the command line
// exits exitUsage; and each RunE records that the command started running.
func setupTree(e *env, root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(flagError(e, root, c, err))
	})
	// The usage line of a group is "clrdiag trace [command]", not the
	// "[flags]" line of a command that runs.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (ne (index .Annotations "`+groupAnnotation+`") "true")}}`, 1))
	walk(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		switch {
		case c.HasSubCommands() && !c.Runnable():
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[groupAnnotation] = "true"
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usageError(unknownCommand(c, args[0]))
				}
				return nil
			}
			c.RunE = func(c *cobra.Command, _ []string) error {
				// A bare group shows what it holds, as gh and kubectl do.
				return c.Help()
			}
		case c.HasSubCommands() && c.Args != nil:
			// A command that runs and has subcommands (env, dump): an
			// argument it refuses is a mistyped subcommand.
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				if err := check(c, args); err != nil {
					if len(args) > 0 {
						return usageError(unknownCommand(c, args[0]))
					}
					return usageError(err)
				}
				return nil
			}
		case c.Args != nil:
			// cobra.NoArgs says "unknown command" for any argument, which
			// is misleading on a command without subcommands.
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				err := check(c, args)
				if err != nil && len(args) > 0 && strings.HasPrefix(err.Error(), "unknown command") {
					return usageErrorf("unexpected argument %q: '%s' takes no arguments (see '%s --help')", args[0], c.CommandPath(), c.CommandPath())
				}
				if err != nil {
					return usageErrorf("%w; usage: %s", err, c.UseLine())
				}
				return nil
			}
		}
		if run := c.RunE; run != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				e.ran, e.cmd = true, c
				return run(c, args)
			}
		}
	})
}

// walk calls f on c and every command below it.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// unknownCommand is the error for a subcommand name c does not have, with
// cobra's suggestions or else the list of its subcommands.
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, c.CommandPath())
	s := c.SuggestionsFor(name)
	direct := len(s) > 0
	// 'clrdiag collect' from dotnet-trace's habit: look one level down,
	// for the exact name and, when nothing is close at this level, for
	// near names.
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || !sub.HasSubCommands() {
			continue
		}
		for _, n := range sub.Commands() {
			if n.IsAvailableCommand() && (n.Name() == name || n.HasAlias(name)) {
				s = append(s, sub.Name()+" "+n.Name())
			}
		}
		if !direct {
			for _, n := range sub.SuggestionsFor(name) {
				s = append(s, sub.Name()+" "+n)
			}
		}
	}
	if len(s) > 0 {
		return fmt.Errorf("%s; did you mean %s? (see '%s --help')", msg, strings.Join(quoteAll(dedupe(s)), " or "), c.CommandPath())
	}
	return fmt.Errorf("%s; its commands are: %s", msg, strings.Join(subcommandNames(c), ", "))
}

// flagError explains a flag cobra could not parse. On a command group the
// real mistake is usually the subcommand before the flag ('counters monitr
// -p 1' must not blame -p), so that is what it reports.
func flagError(e *env, root, c *cobra.Command, err error) error {
	err = plainValueError(c, err)
	if c.Annotations[groupAnnotation] == "" {
		if s := suggestFlag(c, err); s != "" {
			return fmt.Errorf("%w; did you mean %s? (see '%s --help')", err, s, c.CommandPath())
		}
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	}
	if found, rest, ferr := root.Find(e.args); ferr == nil && found == c {
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			return unknownCommand(c, rest[0])
		}
	}
	return fmt.Errorf("%w: '%s' needs a command first: %s", err, c.CommandPath(), strings.Join(subcommandNames(c), ", "))
}

// subcommandNames lists the visible subcommands of c.
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return names
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "'" + v + "'"
	}
	return out
}

// dedupe removes repeated strings, keeping the first of each.
func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// suggestFlag returns the flag of c closest to the unknown one err names
// ("--duraton": "--duration"), or "".
func suggestFlag(c *cobra.Command, err error) string {
	msg := err.Error()
	i := strings.Index(msg, "unknown flag: --")
	if i < 0 {
		return ""
	}
	name := strings.TrimPrefix(msg[i+len("unknown flag: "):], "--")
	if j := strings.IndexAny(name, " =:"); j >= 0 {
		name = name[:j]
	}
	best, bestD := "", 3 // at most two edits away
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := named.Distance(strings.ToLower(name), strings.ToLower(f.Name))
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = min(d, 1) // a prefix of a longer flag
		}
		if d < bestD || d == bestD && f.Name < best {
			best, bestD = f.Name, d
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	if best == "" {
		return ""
	}
	return "'--" + best + "'"
}

// badValue matches pflag's message for a value its type refuses, whose end
// is Go's own (strconv.ParseFloat: parsing "abc": invalid syntax).
var badValue = regexp.MustCompile(`^invalid argument ("(?:[^"\\]|\\.)*") for "(?:-[^,]*, )?--([^"]+)" flag: `)

// plainValueError says what a flag expected instead of how Go's parser
// failed; other errors pass through.
func plainValueError(c *cobra.Command, err error) error {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := c.Flags().Lookup(m[2])
	if f == nil {
		return err
	}
	want := map[string]string{
		"int": "a whole number", "int32": "a whole number", "int64": "a whole number",
		"uint": "a whole number of 0 or more", "uint32": "a whole number of 0 or more", "uint64": "a whole number of 0 or more",
		"float32": "a number (such as 1 or 0.5)", "float64": "a number (such as 1 or 0.5)",
		"duration": "a duration such as 500ms, 30s, 5m or 1h30m", "bool": "true or false",
	}[f.Value.Type()]
	if want == "" {
		return err
	}
	return fmt.Errorf("invalid value %s for --%s: expected %s", m[1], f.Name, want)
}
