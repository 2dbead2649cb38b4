//go:build unix

package dotnettest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTargetsCompile builds every C# target of testdata/targets for every
// runtime (mcs for 3.1, csc for 8 and later; a startup hook as a library)
// and runs the plain ones.
func TestTargetsCompile(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	srcs, _ := filepath.Glob(filepath.Join(root, "testdata", "targets", "*.cs"))
	ForEach(t, Majors, func(t *testing.T, rt *Runtime) {
		for _, src := range srcs {
			name := strings.TrimSuffix(filepath.Base(src), ".cs")
			code, _ := os.ReadFile(src)
			if strings.Contains(string(code), "class StartupHook") {
				rt.BuildWith(t, name, BuildOptions{Library: true})
				continue
			}
			if strings.Contains(string(code), "using Microsoft.AspNetCore") {
				if rt.Major < 8 {
					continue
				}
				rt.BuildWith(t, name, BuildOptions{Web: true})
				continue
			}
			rt.Build(t, name)
		}
		for _, name := range []string{"Events", "Hot"} {
			tg := rt.Start(t, rt.Build(t, name), nil, nil)
			tg.Send(t, "ping")
			tg.Expect(t, "PONG", 10*time.Second)
			tg.Kill()
		}
	})
}
