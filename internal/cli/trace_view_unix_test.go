//go:build unix

package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
)

// A heap snapshot opens the same way: the flame graph of what holds the
// heap, weighed by bytes or, with --sample inuse_objects, by objects.
func TestTraceViewGCDump(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "heap.gcdump")
	if code, _, errOut := run(t, "gcdump", "collect", "--diagnostic-port", gcdumpFake(t, 20, gcdumptest.Options{}), "-o", snap); code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, "trace", "view", snap, "--sample", "wall"); code != exitUsage || !strings.Contains(errOut, "use inuse_objects or inuse_space") {
		t.Errorf("--sample wall on a heap: exit %d %s", code, errOut)
	}
	for _, c := range []struct{ sample, flat string }{{"", `"Flat":840,`}, {"inuse_objects", `"Flat":21,`}} {
		args := []string{"trace", "view", snap, "--no-browser"}
		if c.sample != "" {
			args = append(args, "--sample", c.sample)
		}
		s := startServed(t, args...)
		url := s.wait(t, viewURL, 30*time.Second)
		if !strings.Contains(s.stderr.String(), "44 objects") {
			t.Errorf("stderr: %s", s.stderr.String())
		}
		code, body := httpGet(t, strings.TrimSuffix(url, "flamegraph")+"top")
		if code != 200 || !strings.Contains(body, `{"Name":"App.Item","InlineLabel":"",`+c.flat) {
			t.Errorf("--sample %q: top: %d\n%s", c.sample, code, body)
		}
		s.stop(t)
	}
}
