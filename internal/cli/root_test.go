package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestRegisteredNames: the name each command is registered under is the
// name its constructor gives it, since Main builds only the command the
// command line names (and below trace and gcdump, only their subcommand).
func TestRegisteredNames(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	for group, cmds := range map[string][]command{"": commands, "trace ": traceCommands, "gcdump ": gcdumpCommands} {
		seen := map[string]bool{}
		for _, c := range cmds {
			if got := c.build(e).Name(); got != c.name {
				t.Errorf("command registered as %q is named %q", group+c.name, group+got)
			}
			if seen[c.name] {
				t.Errorf("two commands registered as %q", group+c.name)
			}
			seen[c.name] = true
		}
	}
}

// TestReachableTree: a command line run with the part of the tree Main
// builds for it prints the same output and exits with the same status as
// with the whole tree, for the help of every command, an unknown flag
// after every command, an unknown subcommand of every group and the
// version flags.
func TestReachableTree(t *testing.T) {
	full := newRootCmd(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	var lines [][]string
	walk(full, func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		with := func(extra ...string) []string { return append(append([]string(nil), path...), extra...) }
		lines = append(lines, with("--help"), with("-h"), with("--no-such-flag"))
		if c.HasSubCommands() && !c.Runnable() {
			lines = append(lines, with("no-such-command"), with())
		}
	})
	lines = append(lines, []string{"--version"}, []string{"-v"}, []string{"version"}, []string{"trace", "stats", "--version"})
	run := func(args []string, whole bool) (int, string, string) {
		var stdout, stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, ctx: context.Background()}
		if !whole {
			e.args = args
		}
		root := newRootCmd(e)
		e.args = args
		code := execute(e, root)
		return code, stdout.String(), stderr.String()
	}
	for _, args := range lines {
		if got := reachable(commands, args); len(args) > 0 && !strings.HasPrefix(args[0], "-") && len(got) != 1 {
			t.Errorf("clrdiag %s: builds %d top-level commands, want 1", strings.Join(args, " "), len(got))
		}
		code, out, errOut := run(args, false)
		wantCode, wantOut, wantErr := run(args, true)
		if code != wantCode || out != wantOut || errOut != wantErr {
			t.Errorf("clrdiag %s: with the reachable tree exit %d, stdout %q, stderr %q; with the whole tree exit %d, stdout %q, stderr %q",
				strings.Join(args, " "), code, out, errOut, wantCode, wantOut, wantErr)
		}
	}
	// The root, then the command named and its subcommand, and the 'ps'
	// alias every group of a dotnet tool gets, or the verb alias (aliases.go).
	for _, want := range []struct {
		args []string
		n    int
	}{{[]string{"--version"}, 1}, {[]string{"trace", "stats", "x"}, 4}, {[]string{"gcdump", "report", "x"}, 4}, {[]string{"stack", "-p", "1"}, 3}} {
		args := want.args
		var out bytes.Buffer
		root := newRootCmd(&env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, args: args})
		n := 0
		walk(root, func(*cobra.Command) { n++ })
		if n != want.n {
			t.Errorf("clrdiag %s builds %d commands (the root included), want %d", strings.Join(args, " "), n, want.n)
		}
	}
	if len(lines) < 100 {
		t.Fatalf("only %d command lines checked: the tree walk found too few commands", len(lines))
	}
}
