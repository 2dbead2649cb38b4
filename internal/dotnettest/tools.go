//go:build unix

package dotnettest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Tools are Microsoft's diagnostic tools (dotnet-trace, dotnet-gcdump,
// dotnet-counters), framework-dependent on .NET 8 or later: the second
// source of truth some tests compare clrdiag with.
type Tools struct {
	Dir  string   // holds dotnet-trace/, dotnet-gcdump/, dotnet-counters/
	Host *Runtime // the runtime they run on (rolled forward to its major)
}

// FindTools locates Microsoft's tools (CLRDIAG_DOTNET_TOOLS, or
// <cache>/runtimes/tools unpacked from ../shared/runtimes) and a .NET 8 or
// later runtime to run them, or stops the test with Unavailable.
func FindTools(t testing.TB) *Tools {
	t.Helper()
	dir := os.Getenv("CLRDIAG_DOTNET_TOOLS")
	if dir == "" {
		if cache, err := CacheDir(); err == nil {
			dir = filepath.Join(cache, "runtimes", "tools")
		}
	}
	if !fileExists(filepath.Join(dir, "dotnet-trace", "dotnet-trace.dll")) {
		Unavailable(t, "Microsoft's dotnet-trace/-gcdump/-counters not found in %q (CLRDIAG_DOTNET_TOOLS, or ../shared/runtimes/install.sh tools)", dir)
	}
	rts, _ := Runtimes()
	var host *Runtime
	for _, r := range rts {
		if r.Major >= 8 && (host == nil || r.Major < host.Major) {
			host = r
		}
	}
	if host == nil {
		Unavailable(t, "Microsoft's tools need a .NET 8 or later runtime to run on, and none was found")
	}
	return &Tools{Dir: dir, Host: host}
}

// Command returns the command that runs one of the tools ("dotnet-trace",
// "dotnet-gcdump" or "dotnet-counters") with args.
func (tl *Tools) Command(tool string, args ...string) *exec.Cmd {
	dll := filepath.Join(tl.Dir, tool, tool+".dll")
	cmd := exec.Command(tl.Host.Host, append([]string{dll}, args...)...)
	cmd.Env = append(cleanEnv(os.Environ()), "DOTNET_ROLL_FORWARD=Major", "DOTNET_ROOT="+tl.Host.DotnetRoot,
		"DOTNET_CLI_TELEMETRY_OPTOUT=1", "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1", "DOTNET_NOLOGO=1")
	return cmd
}
