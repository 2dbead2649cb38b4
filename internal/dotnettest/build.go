//go:build unix

package dotnettest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// mcsReferences are the framework assemblies every .NET Core 3.x target is
// compiled against with mcs. (Roslyn's csc takes every assembly of the
// shared framework instead.)
var mcsReferences = []string{
	"System.Private.CoreLib.dll", "System.Runtime.dll", "System.Console.dll",
	"System.Diagnostics.Tracing.dll", "System.Threading.dll", "System.Threading.Thread.dll",
	"System.Collections.dll", "System.Diagnostics.Process.dll",
	"System.ComponentModel.Primitives.dll", "System.Runtime.Extensions.dll",
	"System.Threading.Tasks.dll", "System.Linq.dll", "System.Collections.Concurrent.dll",
	"System.Threading.ThreadPool.dll", "System.Runtime.InteropServices.dll",
}

var buildMu sync.Mutex // serializes builds within one test binary

// BuildOptions adjust how a target is compiled.
type BuildOptions struct {
	// Web compiles against ASP.NET Core (Microsoft.AspNetCore.App) as well
	// and names it in the runtimeconfig. It needs .NET 5 or later and a
	// root that has ASP.NET Core.
	Web bool
	// Library compiles a class library (-target:library) rather than a
	// program, such as a startup hook assembly. Build then returns the path
	// of the library (a runtimeconfig is written beside it all the same).
	Library bool
	// Config adds configProperties to the runtimeconfig (for example
	// "System.GC.Server": true).
	Config map[string]any
}

// Build compiles testdata/targets/<name>.cs (relative to the module root)
// for r and returns the path of the dll, reusing an earlier build of the
// same source for the same runtime (in <cache>/targets).
func (r *Runtime) Build(t testing.TB, name string) string {
	t.Helper()
	return r.BuildWith(t, name, BuildOptions{})
}

// BuildWith is Build with options.
func (r *Runtime) BuildWith(t testing.TB, name string, opts BuildOptions) string {
	t.Helper()
	dll, err := r.build(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dll
}

func (r *Runtime) build(name string, opts BuildOptions) (string, error) {
	src := filepath.Join(r.Root, "testdata", "targets", name+".cs")
	code, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("read C# target: %v", err)
	}
	if err := r.compilerErr(); err != nil {
		return "", err
	}
	if opts.Web && r.AspNetDir == "" {
		return "", fmt.Errorf("%s at %s has no Microsoft.AspNetCore.App for the web target %s", r, r.DotnetRoot, name)
	}
	cfg := r.runtimeConfig(opts)
	h := sha256.New()
	h.Write(code)
	h.Write([]byte{0})
	h.Write([]byte(r.Version))
	h.Write([]byte{0})
	h.Write(cfg)
	if opts.Library {
		h.Write([]byte("\x00library"))
	}
	sum := h.Sum(nil)
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	outDir := filepath.Join(cache, "targets", name+"-"+hex.EncodeToString(sum[:6]))
	dll := filepath.Join(outDir, name+".dll")
	buildMu.Lock()
	defer buildMu.Unlock()
	if fileExists(dll) && fileExists(filepath.Join(outDir, name+".runtimeconfig.json")) {
		return dll, nil
	}
	if err := os.MkdirAll(filepath.Join(cache, "targets"), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Join(cache, "targets"), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, name+".dll")
	target := "exe"
	if opts.Library {
		target = "library"
	}
	var cmd *exec.Cmd
	if r.Major < 5 {
		args := []string{"-nostdlib", "-noconfig", "-unsafe", "-nowarn:1702", "-optimize+", "-out:" + out, "-target:" + target}
		for _, ref := range mcsReferences {
			args = append(args, "-r:"+filepath.Join(r.SharedDir, ref))
		}
		cmd = exec.Command(r.MCS, append(args, src)...)
	} else {
		args := []string{r.CSC, "-nologo", "-nostdlib", "-noconfig", "-unsafe", "-optimize+",
			"-langversion:latest", "-nowarn:1701,1702,8632", "-target:" + target, "-out:" + out}
		dirs := []string{r.SharedDir}
		if opts.Web {
			dirs = append(dirs, r.AspNetDir)
		}
		for _, dir := range dirs {
			m, _ := filepath.Glob(filepath.Join(dir, "*.dll"))
			for _, f := range m {
				if base := filepath.Base(f); strings.HasPrefix(base, "Microsoft.VisualBasic") || strings.HasPrefix(base, "mscordaccore") || strings.HasPrefix(base, "mscordbi") {
					continue
				}
				args = append(args, "-r:"+f)
			}
		}
		cmd = exec.Command(r.CSCHost, append(args, src)...)
		cmd.Env = append(os.Environ(), "DOTNET_CLI_TELEMETRY_OPTOUT=1", "DOTNET_ROLL_FORWARD=Major")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile %s for %s with %s: %v\n%s", src, r, filepath.Base(cmd.Path), err, b)
	}
	if err := os.WriteFile(filepath.Join(tmp, name+".runtimeconfig.json"), cfg, 0o644); err != nil {
		return "", err
	}
	if fileExists(dll) { // another test binary built it meanwhile
		return dll, nil
	}
	_ = os.RemoveAll(outDir)
	if err := os.Rename(tmp, outDir); err != nil && !fileExists(dll) {
		return "", fmt.Errorf("install build: %v", err)
	}
	return dll, nil
}

// runtimeConfig is the <name>.runtimeconfig.json that runs a target on r's
// major version (the host then takes r's version, the latest patch).
func (r *Runtime) runtimeConfig(opts BuildOptions) []byte {
	props := map[string]any{"System.Globalization.Invariant": true}
	for k, v := range opts.Config {
		props[k] = v
	}
	ver := strconv.Itoa(r.Major) + ".0.0"
	tfm := "net" + strconv.Itoa(r.Major) + ".0"
	if r.Major < 5 {
		ver, tfm = r.Version[:strings.LastIndexByte(r.Version, '.')]+".0", "netcoreapp"+r.Version[:strings.LastIndexByte(r.Version, '.')]
	}
	ro := map[string]any{"tfm": tfm, "configProperties": props}
	fw := map[string]string{"name": "Microsoft.NETCore.App", "version": ver}
	if opts.Web {
		ro["frameworks"] = []map[string]string{fw, {"name": "Microsoft.AspNetCore.App", "version": ver}}
	} else {
		ro["framework"] = fw
	}
	b, _ := json.Marshal(map[string]any{"runtimeOptions": ro})
	return b
}
