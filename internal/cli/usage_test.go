package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMistypedCommands: an unknown or mistyped subcommand is a usage error
// with a suggestion, wherever it is, and a flag after it is not blamed.
func TestMistypedCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"trace", "colect"}, []string{`unknown command "colect" for "clrdiag trace"`, "did you mean 'collect'"}},
		{[]string{"counters", "monitr", "-p", "1"}, []string{`unknown command "monitr"`, "did you mean 'monitor'"}},
		{[]string{"colect"}, []string{`unknown command "colect" for "clrdiag"`, "'trace collect'", "'counters collect'"}},
		{[]string{"stats", "x.nettrace"}, []string{"'trace stats'"}},
		{[]string{"env", "sett", "A=1"}, []string{`unknown command "sett"`, "did you mean 'set'"}},
		{[]string{"perfmap", "enabel"}, []string{"did you mean 'enable'"}},
		{[]string{"trace", "xyzzy"}, []string{`unknown command "xyzzy"`, "its commands are: collect,"}},
		{[]string{"counters", "-p", "1"}, []string{"unknown shorthand flag: 'p'", "'clrdiag counters' needs a command first: collect, list, monitor"}},
		{[]string{"trace", "collect", "--bogus"}, []string{"unknown flag: --bogus", "see 'clrdiag trace collect --help'"}},
		{[]string{"attach", "extra"}, []string{`unexpected argument "extra": 'clrdiag attach' takes no arguments`}},
		{[]string{"trace", "stats"}, []string{"accepts 1 arg(s), received 0", "usage: clrdiag trace stats FILE"}},
		{[]string{"startup-profiler", "-p", "1"}, []string{`required flag(s)`}},
	} {
		code, out, errOut := run(t, tc.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want exitUsage (%d); stderr %q", tc.args, code, exitUsage, errOut)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout %q", tc.args, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if len(tc.args) > 1 && tc.args[1] == "monitr" && strings.Contains(errOut, "flag") {
			t.Errorf("%v blames -p: %q", tc.args, errOut)
		}
	}
}

// TestBareGroupsShowHelp: a group called without a command prints its help
// on stdout and succeeds, as gh and kubectl do.
func TestBareGroupsShowHelp(t *testing.T) {
	for _, g := range []string{"trace", "counters", "perfmap"} {
		code, out, errOut := run(t, g)
		if code != exitOK || !strings.Contains(out, "Available Commands:") || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", g, code, out, errOut)
		}
		if !strings.Contains(out, "clrdiag "+g+" [command]") || strings.Contains(out, "clrdiag "+g+" [flags]") {
			t.Errorf("%s: usage line is not the group's:\n%s", g, out)
		}
	}
	code, out, _ := run(t)
	if code != exitOK || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "130") {
		t.Errorf("bare clrdiag: exit %d, help lacks the exit-code table:\n%s", code, out)
	}
}

// TestHelpListsExitCodes: the table in --help is the one in exitcode.go.
func TestHelpListsExitCodes(t *testing.T) {
	_, out, _ := run(t, "--help")
	for _, c := range exitCodes {
		if !strings.Contains(out, c.Meaning) {
			t.Errorf("--help lacks exit code %d %q", c.Code, c.Meaning)
		}
	}
}

// A mistyped flag gets the closest flag as a suggestion, as a mistyped
// command does; a value a flag's type refuses says what was expected, not
// Go's parser's words.
func TestFlagTypos(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "collect", "--duraton", "3s"}, "did you mean '--duration'?"},
		{[]string{"trace", "collect", "--provider", "X"}, "did you mean '--providers'?"},
		{[]string{"counters", "collect", "--counter", "X"}, "did you mean '--counters'?"},
		{[]string{"stack", "--rundown-timout", "1s"}, "did you mean '--rundown-timeout'?"},
		{[]string{"counters", "collect", "--refresh-interval", "abc"}, `invalid value "abc" for --refresh-interval: expected a number`},
		{[]string{"trace", "collect", "--buffersize", "x"}, `invalid value "x" for --buffersize: expected a whole number of 0 or more`},
		{[]string{"info", "--timeout", "5"}, `invalid value "5" for --timeout: expected a duration such as`},
		{[]string{"info", "-p", "x"}, `invalid value "x" for --process-id: expected a whole number`},
	} {
		code, _, errOut := run(t, tc.args...)
		checkClass(t, code, exitUsage, errOut)
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %q lacks %q", tc.args, errOut, tc.want)
		}
		if strings.Contains(errOut, "strconv") || strings.Contains(errOut, "time: ") {
			t.Errorf("%v: Go's internals in the message: %s", tc.args, errOut)
		}
	}
	// Nothing close: no suggestion.
	if _, _, errOut := run(t, "trace", "collect", "--zzzzzzzz"); strings.Contains(errOut, "did you mean") {
		t.Errorf("a suggestion for a flag nothing resembles: %s", errOut)
	}
}

// TestExitCodesDocumented: the README's exit-code table has every code of
// exitcode.go with its sentence.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "## Exit codes")
	if i < 0 {
		t.Fatal("README has no Exit codes section")
	}
	section := text[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	for _, c := range exitCodes {
		row := fmt.Sprintf("| %d | %s |", c.Code, c.Sentence)
		if c.Sentence == "" {
			row = fmt.Sprintf("| %d | |", c.Code)
		}
		if !strings.Contains(section, row) {
			t.Errorf("README's exit-code table lacks the row %q", row)
		}
	}
}
