package cli

import (
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/profile"
	"github.com/clrdiag/clrdiag/weighted"
	"github.com/spf13/cobra"
)

// readmeCommands returns the command paths the README's command table
// names: from each row's first cell, every backquoted command line's
// leading words (up to the first flag, argument or bracket), a word with
// alternatives (collect\|report) giving one path each.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "| command | what it does |\n| --- | --- |\n")
	if !ok {
		t.Fatal("README has no command table (| command | what it does |)")
	}
	span := regexp.MustCompile("`([^`]*)`")
	word := regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	var paths []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range span.FindAllStringSubmatch(cell, -1) {
			prefixes := []string{""}
			for _, w := range strings.Fields(m[1]) {
				alts := strings.Split(w, `\|`)
				if !slices.ContainsFunc(alts, word.MatchString) || !word.MatchString(alts[0]) {
					break
				}
				var next []string
				for _, p := range prefixes {
					for _, a := range alts {
						next = append(next, strings.TrimSpace(p+" "+a))
					}
				}
				prefixes = next
			}
			for _, p := range prefixes {
				if p != "" {
					paths = append(paths, p)
				}
			}
		}
	}
	return paths
}

// TestREADMECommands: the README's command table names every command of
// the tree (those a person runs: not hidden, not cobra's help) and nothing
// that is not one, as TestMonitorRoutesDocumented does for the routes.
func TestREADMECommands(t *testing.T) {
	root := newRootCmd(&env{stdout: io.Discard, stderr: io.Discard, ctx: context.Background()})
	root.InitDefaultCompletionCmd()
	documented := map[string]bool{}
	for _, p := range readmeCommands(t) {
		// A command's group is named with it (gcdump, by gcdump collect).
		for g := p; g != ""; g, _, _ = cutLast(g) {
			documented[g] = true
		}
		c, rest, err := root.Find(strings.Fields(p))
		if err != nil || len(rest) > 0 || c.CommandPath() != "clrdiag "+p {
			t.Errorf("README's command table names %q, which is not a command", p)
		}
	}
	verbAlias := map[string]bool{}
	for _, a := range verbAliases {
		verbAlias[a.command+" "+a.verb] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := strings.TrimPrefix(sub.CommandPath(), "clrdiag ")
			if !documented[p] {
				t.Errorf("README's command table does not name %q", p)
			}
			if !verbAlias[p] { // an alias's subcommands are the command's
				walk(sub)
			}
		}
	}
	walk(root)
}

// cutLast cuts a command path before its last word.
func cutLast(p string) (before, last string, found bool) {
	i := strings.LastIndexByte(p, ' ')
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}

// TestREADMELists: the README's command table lists the export formats
// and measures of the tables (weighted.Formats, profile.MeasureInfos).
func TestREADMELists(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`trace convert --format " + strings.Join(weighted.FormatNames(), `\|`) + "`",
		"`--sample " + strings.Join(profile.Measures(), `\|`) + "`",
	} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README's command table lacks %s", want)
		}
	}
}
