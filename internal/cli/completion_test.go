package cli

import (
	"strings"
	"testing"
)

// TestCompletion: cobra's completion scripts are there, and flag values
// complete from what clrdiag knows.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if code, out, errOut := run(t, "completion", shell); code != 0 || !strings.Contains(out, "clrdiag") {
			t.Errorf("completion %s: exit %d, %d bytes, %s", shell, code, len(out), errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"dump", "--type", ""}, []string{"full\t", "heap\t", "mini\t", "triage\t"}},
		{[]string{"dump", "collect", "--type", ""}, []string{"triage\t"}},
		{[]string{"trace", "convert", "x.nettrace", "--format", ""}, []string{"speedscope", "chromium", "pprof", "folded"}},
		{[]string{"trace", "collect", "--format", ""}, []string{"nettrace", "speedscope"}},
		{[]string{"trace", "report", "x.nettrace", "--sample", ""}, []string{"wall\t", "alloc\t", "contention\t", "exceptions\t"}},
		{[]string{"counters", "collect", "--format", ""}, []string{"csv", "json"}},
		{[]string{"trace", "collect", "--profile", ""}, []string{"dotnet-common\t", "gc-verbose\t"}},
		{[]string{"counters", "monitor", "--counters", ""}, []string{"System.Runtime\n", "System.Runtime[cpu-usage]\t"}},
		{[]string{"perfmap", "enable", "--type", ""}, []string{"jitdump"}},
		{[]string{"tr"}, []string{"trace\t"}},
	} {
		code, out, errOut := run(t, append([]string{"__complete"}, tc.args...)...)
		if code != 0 {
			t.Errorf("%v: exit %d %s", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: completions lack %q:\n%s", tc.args, w, out)
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(out), ":4") {
			t.Errorf("%v: completions do not end with the no-file directive :4:\n%s", tc.args, out)
		}
	}
}
