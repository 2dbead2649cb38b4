package cli

import (
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
