//go:build linux

package profilertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clrdiag/clrdiag/internal/dotnettest"
)

// Variant selects how profiler.c is compiled.
type Variant int

const (
	// Standard is the profiler as documented: it exports DllGetClassObject.
	Standard Variant = iota
	// NoEntry is built with -DNO_ENTRY: the same code, but the entry point is
	// exported as NotDllGetClassObject, so the runtime cannot find it.
	NoEntry
)

func (v Variant) String() string {
	switch v {
	case Standard:
		return "standard"
	case NoEntry:
		return "no-entry"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// Flags are the gcc flags every variant is built with.
var Flags = []string{"-shared", "-fPIC", "-fvisibility=hidden", "-O2", "-Wall", "-Wextra"}

func (v Variant) flags() ([]string, string, error) {
	switch v {
	case Standard:
		return Flags, "libclrdiagprof.so", nil
	case NoEntry:
		return append(append([]string(nil), Flags...), "-DNO_ENTRY"), "libclrdiagprof-noentry.so", nil
	}
	return nil, "", fmt.Errorf("unknown profiler variant %d", int(v))
}

// Source returns the path of examples/profiler/profiler.c.
func Source() (string, error) {
	root, err := dotnettest.ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "examples", "profiler", "profiler.c"), nil
}

// GCC returns the C compiler, or stops the test: it fails when CI=true and
// skips loudly otherwise.
func GCC(t testing.TB) string {
	t.Helper()
	name, how := "gcc", "on PATH (install Debian's gcc, or set CLRDIAG_GCC)"
	if env := os.Getenv("CLRDIAG_GCC"); env != "" {
		name, how = env, "(CLRDIAG_GCC)"
	}
	gcc, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("C compiler %s not found %s; the profiler attach tests need it", name, how)
		if os.Getenv("CI") == "true" {
			t.Fatalf("profiler test cannot run (CI=true, so this fails instead of skipping): %s", msg)
		}
		t.Skipf("SKIPPING profiler test: %s", msg)
	}
	return gcc
}

// Compile runs gcc on profiler.c for variant v, writing the library to out,
// and returns gcc's output (its warnings).
func Compile(gcc string, v Variant, out string) (string, error) {
	flags, _, err := v.flags()
	if err != nil {
		return "", err
	}
	src, err := Source()
	if err != nil {
		return "", err
	}
	args := append(append([]string(nil), flags...), "-o", out, src)
	b, err := exec.Command(gcc, args...).CombinedOutput()
	if err != nil {
		return string(b), fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return string(b), nil
}

var buildMu sync.Mutex

// Build compiles the profiler variant into <module>/.cache/profiler,
// reusing an earlier build of the same source and flags, and returns the
// library's absolute path.
func Build(t testing.TB, v Variant) string {
	t.Helper()
	gcc := GCC(t)
	flags, name, err := v.flags()
	if err != nil {
		t.Fatal(err)
	}
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read the profiler source: %v", err)
	}
	h := sha256.New()
	h.Write(code)
	fmt.Fprintf(h, "\x00%s\x00%s", gcc, strings.Join(flags, " "))
	dir := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(src))), ".cache", "profiler", v.String()+"-"+hex.EncodeToString(h.Sum(nil)[:6]))
	lib := filepath.Join(dir, name)
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(lib); err == nil {
		return lib
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "build-*.so")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	warnings, err := Compile(gcc, v, tmp.Name())
	if err != nil {
		t.Fatalf("build the %s profiler: %v", v, err)
	}
	if warnings != "" {
		t.Logf("gcc warnings for the %s profiler:\n%s", v, warnings)
	}
	if err := os.Rename(tmp.Name(), lib); err != nil {
		t.Fatalf("install the %s profiler: %v", v, err)
	}
	return lib
}
