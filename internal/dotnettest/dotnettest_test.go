//go:build unix

package dotnettest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBasicTarget proves the harness itself on every runtime: the runtime
// starts a compiled target, the target answers on stdin/stdout, publishes
// its socket, and runs on the runtime the test asked for.
func TestBasicTarget(t *testing.T) {
	ForEach(t, Majors, func(t *testing.T, rt *Runtime) {
		dll := rt.Build(t, "Basic")
		tg := rt.Start(t, dll, nil, nil)
		if tg.Socket == "" {
			t.Fatal("no diagnostic socket")
		}
		tg.Send(t, "ping")
		tg.Expect(t, "PONG", 10*time.Second)
		// The process maps the CoreCLR of the runtime it was asked to run on.
		maps, err := os.ReadFile("/proc/" + itoa(tg.PID) + "/maps")
		if err != nil {
			t.Fatal(err)
		}
		// The kernel names the file by its resolved path: the cache's
		// runtimes may be a symbolic link.
		dir, err := filepath.EvalSymlinks(rt.SharedDir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(maps), dir+"/libcoreclr.so") {
			t.Fatalf("target does not map %s/libcoreclr.so", dir)
		}
		tg.Send(t, "exit 7")
		select {
		case <-tg.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("target did not exit")
		}
		if code := tg.Cmd.ProcessState.ExitCode(); code != 7 {
			t.Fatalf("exit code = %d, want 7", code)
		}
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"8.0.10", "8.0.9", 1},
		{"8.0.9", "8.0.10", -1},
		{"10.0.15", "10.0.15", 0},
		{"11.0.0-preview.1", "11.0.0", -1},
		{"3.1.2", "10.0.0", -1},
	} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSelected(t *testing.T) {
	for _, c := range []struct {
		env   string
		major int
		want  bool
	}{
		{"", 8, true},
		{"3,8,11", 10, false},
		{"3,8,11", 11, true},
		{"net8, net10", 10, true},
		{"3.1", 3, true},
		{"8", 3, false},
	} {
		t.Setenv("CLRDIAG_RUNTIMES", c.env)
		if got := Selected(c.major); got != c.want {
			t.Errorf("CLRDIAG_RUNTIMES=%q: Selected(%d) = %v, want %v", c.env, c.major, got, c.want)
		}
	}
}

func TestSmokeOnly(t *testing.T) {
	for _, c := range []struct {
		full, smoke string
		major       int
		want        bool
	}{
		{"", "", 10, false},
		{"", "10", 10, true},
		{"", "10", 8, false},
		{"3,8,11", "10", 10, true},
		{"3,8,10,11", "10", 10, false}, // the full list wins
		{"3,8,11", "net10", 11, false},
	} {
		t.Setenv("CLRDIAG_RUNTIMES", c.full)
		t.Setenv("CLRDIAG_SMOKE_RUNTIMES", c.smoke)
		if got := SmokeOnly(c.major); got != c.want {
			t.Errorf("CLRDIAG_RUNTIMES=%q CLRDIAG_SMOKE_RUNTIMES=%q: SmokeOnly(%d) = %v, want %v", c.full, c.smoke, c.major, got, c.want)
		}
	}
}

// TestForEachSmoke: a smoke-only major runs the subtests of ForEachSmoke
// and skips those of ForEach.
func TestForEachSmoke(t *testing.T) {
	t.Setenv("CLRDIAG_RUNTIMES", "3,8,11")
	t.Setenv("CLRDIAG_SMOKE_RUNTIMES", "10")
	var full, smoke string
	ForEach(t, []int{10}, func(t *testing.T, rt *Runtime) { full = rt.Version })
	ForEachSmoke(t, []int{10}, func(t *testing.T, rt *Runtime) { smoke = rt.Version })
	if smoke == "" && os.Getenv("CI") != "true" {
		t.Skip("no .NET 10 here (its subtest said why)")
	}
	if full != "" || !strings.HasPrefix(smoke, "10.") {
		t.Errorf("ForEach ran on %q, ForEachSmoke on %q; want only ForEachSmoke, on .NET 10", full, smoke)
	}
}

// TestRuntimeConfig checks the runtimeconfig that selects each major.
func TestRuntimeConfig(t *testing.T) {
	r := &Runtime{Version: "3.1.2", Major: 3}
	if got := string(r.runtimeConfig(BuildOptions{})); !strings.Contains(got, `"version":"3.1.0"`) || !strings.Contains(got, `"tfm":"netcoreapp3.1"`) {
		t.Errorf("3.1: %s", got)
	}
	r = &Runtime{Version: "10.0.15", Major: 10}
	got := string(r.runtimeConfig(BuildOptions{Web: true}))
	for _, want := range []string{`"tfm":"net10.0"`, `"name":"Microsoft.AspNetCore.App","version":"10.0.0"`, `"name":"Microsoft.NETCore.App","version":"10.0.0"`} {
		if !strings.Contains(got, want) {
			t.Errorf("10 web: %s lacks %s", got, want)
		}
	}
}
