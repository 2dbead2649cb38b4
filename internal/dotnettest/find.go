//go:build unix

package dotnettest

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Majors lists the runtime major versions the live tests run on, oldest
// first: .NET Core 3.1 (npm), .NET 8 and 10 (LTS) and .NET 11.
var Majors = []int{3, 8, 10, 11}

// Modern lists the majors of .NET 5 or later that the live tests cover:
// the features .NET Core 3.1 lacks (ProcessInfo2/3, environment, perf maps,
// diagnostic ports, startup hooks, ...) are tested on these.
var Modern = []int{8, 10, 11}

// Runtime is an installed .NET runtime (one Microsoft.NETCore.App version
// under a dotnet root) and the means to build targets for it.
type Runtime struct {
	Host       string // the dotnet host executable
	DotnetRoot string // the directory holding Host and shared/
	SharedDir  string // shared/Microsoft.NETCore.App/<version>
	AspNetDir  string // shared/Microsoft.AspNetCore.App/<version of the same major>, or ""
	Version    string // e.g. "3.1.2", "8.0.34"
	Major      int    // e.g. 3, 8, 10, 11
	Source     string // where it was found: "CLRDIAG_DOTNET_ROOTS", "PATH", "cache", "npm"
	Root       string // the module root

	// MCS is Mono's C# compiler, which builds the targets for .NET Core 3.x
	// (it cannot read the reference assemblies of .NET 8 and later).
	MCS string
	// CSC is Roslyn's csc.dll and CSCHost the dotnet host that runs it
	// (.NET 10 or later): they build the targets for .NET 5 and later.
	CSC, CSCHost string
}

// String names the runtime for test names and messages: "net8.0.34".
func (r *Runtime) String() string { return "net" + r.Version }

// Name is the subtest name of a major: "net3" for .NET Core 3.1, "net8"...
func Name(major int) string { return "net" + strconv.Itoa(major) }

// Unavailable reports a missing prerequisite: it fails the test when CI=true
// and skips it loudly otherwise.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("real-runtime test cannot run (CI=true, so this fails instead of skipping): %s", msg)
	}
	t.Skipf("SKIPPING real-runtime test: %s (run `make test` to install the runtimes and compilers)", msg)
}

// Find locates .NET Core 3.1 and its compiler or stops the test with
// Unavailable. It is FindVersion(t, 3).
func Find(t testing.TB) *Runtime {
	t.Helper()
	return FindVersion(t, 3)
}

// FindVersion locates a runtime of the given major version and the
// compiler that builds targets for it, or stops the test with Unavailable.
// A major left out of CLRDIAG_RUNTIMES (when set) is skipped, CI or not:
// the run chose not to test it; so is every real-runtime test with -short,
// the quick loop of unit tests (CI runs the full mode).
func FindVersion(t testing.TB, major int) *Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("real-runtime test: full mode only (go test without -short)")
	}
	if !Selected(major) {
		t.Skipf("%s is not in CLRDIAG_RUNTIMES=%s", Name(major), os.Getenv("CLRDIAG_RUNTIMES"))
	}
	return findVersion(t, major)
}

// findVersion is FindVersion without the selection.
func findVersion(t testing.TB, major int) *Runtime {
	t.Helper()
	d := discover()
	if d.err != nil {
		Unavailable(t, "%v", d.err)
	}
	for _, r := range d.runtimes {
		if r.Major != major {
			continue
		}
		if err := r.compilerErr(); err != nil {
			Unavailable(t, "%s found at %s, but %v", r, r.DotnetRoot, err)
		}
		return r
	}
	Unavailable(t, "no .NET %s runtime found (looked in %s)", majorName(major), strings.Join(d.looked, ", "))
	return nil
}

// ForEach runs f as a subtest (named "net8", ...) for each of the majors,
// each on its own runtime. A missing runtime fails its subtest under CI=true
// and skips it loudly otherwise. The subtests run one after another. A
// major that CLRDIAG_SMOKE_RUNTIMES names runs only the smoke subset (the
// tests that use ForEachSmoke): here it is skipped, saying so.
func ForEach(t *testing.T, majors []int, f func(t *testing.T, rt *Runtime)) {
	t.Helper()
	forEach(t, majors, false, f)
}

// ForEachSmoke is ForEach for a test of the smoke subset: it also runs on
// the majors that CLRDIAG_SMOKE_RUNTIMES names (and CLRDIAG_RUNTIMES does
// not), which a test run covers with a few tests only, to keep its time.
func ForEachSmoke(t *testing.T, majors []int, f func(t *testing.T, rt *Runtime)) {
	t.Helper()
	forEach(t, majors, true, f)
}

func forEach(t *testing.T, majors []int, smoke bool, f func(t *testing.T, rt *Runtime)) {
	t.Helper()
	for _, m := range majors {
		t.Run(Name(m), func(t *testing.T) {
			if SmokeOnly(m) {
				if !smoke {
					t.Skipf("%s runs only the smoke subset of the live tests (CLRDIAG_SMOKE_RUNTIMES=%s)", Name(m), os.Getenv("CLRDIAG_SMOKE_RUNTIMES"))
				}
				f(t, findVersion(t, m))
				return
			}
			f(t, FindVersion(t, m))
		})
	}
}

// Selected tells whether the live tests run on a major: every major unless
// CLRDIAG_RUNTIMES (a comma-separated list such as "3,8,11") says otherwise.
func Selected(major int) bool {
	sel := os.Getenv("CLRDIAG_RUNTIMES")
	if strings.TrimSpace(sel) == "" {
		return true
	}
	return listed(sel, major)
}

// SmokeOnly tells whether a major runs only the smoke subset of the live
// tests (ForEachSmoke): CLRDIAG_SMOKE_RUNTIMES names it and
// CLRDIAG_RUNTIMES, when set, does not.
func SmokeOnly(major int) bool {
	sel := os.Getenv("CLRDIAG_SMOKE_RUNTIMES")
	if strings.TrimSpace(sel) == "" || !listed(sel, major) {
		return false
	}
	full := os.Getenv("CLRDIAG_RUNTIMES")
	return strings.TrimSpace(full) == "" || !listed(full, major)
}

// listed tells whether a comma-separated list of majors ("3,8,11", "net10",
// "3.1") names major.
func listed(sel string, major int) bool {
	for _, f := range strings.FieldsFunc(sel, func(r rune) bool { return r == ',' || r == ' ' }) {
		f = strings.TrimPrefix(strings.TrimSpace(f), "net")
		if i := strings.IndexByte(f, '.'); i >= 0 && f[:i] == "3" {
			f = "3"
		}
		if n, err := strconv.Atoi(f); err == nil && n == major {
			return true
		}
	}
	return false
}

func majorName(major int) string {
	if major == 3 {
		return "Core 3.1"
	}
	return strconv.Itoa(major)
}

// Runtimes returns every runtime found, in the order FindVersion prefers
// them (the user's own first, then the cache, then .NET Core 3.1 from npm).
func Runtimes() ([]*Runtime, error) {
	d := discover()
	return d.runtimes, d.err
}

type discovery struct {
	runtimes []*Runtime
	looked   []string
	err      error
}

var discoverOnce = sync.OnceValue(func() discovery { return discoverRuntimes() })

func discover() discovery { return discoverOnce() }

// CacheDir is the directory test runs keep what they install or build in:
// CLRDIAG_CACHE, or <module>/.cache.
func CacheDir() (string, error) {
	if c := os.Getenv("CLRDIAG_CACHE"); c != "" {
		return filepath.Abs(c)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache"), nil
}

// discoverRuntimes looks for dotnet roots, in order of preference:
//
//  1. CLRDIAG_DOTNET_ROOTS: dotnet roots the user names (a list separated
//     like PATH), and the root of CLRDIAG_DOTNET (the host of .NET Core 3.1
//     of earlier versions of this harness);
//  2. the root of `dotnet` on PATH;
//  3. <cache>/runtimes/dotnet-* (scripts/test.sh unpacks ../shared/runtimes
//     there) and <module>/.cache/runtimes/dotnet-*;
//  4. <cache>/dotnet-3.1/package (the npm package dotnet-3.1-linux-x64).
//
// Each Microsoft.NETCore.App version under a root is a Runtime; the first
// root that has a major wins, and in it the highest version of that major.
func discoverRuntimes() discovery {
	var d discovery
	root, err := ModuleRoot()
	if err != nil {
		d.err = err
		return d
	}
	cache, _ := CacheDir()
	type cand struct{ dir, source string }
	var cands []cand
	for _, dir := range filepath.SplitList(os.Getenv("CLRDIAG_DOTNET_ROOTS")) {
		if dir != "" {
			cands = append(cands, cand{dir, "CLRDIAG_DOTNET_ROOTS"})
		}
	}
	if host := os.Getenv("CLRDIAG_DOTNET"); host != "" {
		cands = append(cands, cand{filepath.Dir(host), "CLRDIAG_DOTNET"})
	}
	if p, err := exec.LookPath("dotnet"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		cands = append(cands, cand{filepath.Dir(p), "PATH"})
	}
	for _, c := range dedupe([]string{cache, filepath.Join(root, ".cache")}) {
		m, _ := filepath.Glob(filepath.Join(c, "runtimes", "dotnet-*"))
		slices.Sort(m)
		for _, dir := range m {
			cands = append(cands, cand{dir, "cache"})
		}
	}
	for _, c := range dedupe([]string{cache, filepath.Join(root, ".cache")}) {
		cands = append(cands, cand{filepath.Join(c, "dotnet-3.1", "package"), "npm"})
	}

	mcs := os.Getenv("CLRDIAG_MCS")
	if mcs == "" {
		mcs, _ = exec.LookPath("mcs")
	}
	csc := os.Getenv("CLRDIAG_CSC")
	if csc == "" {
		for _, c := range dedupe([]string{cache, filepath.Join(root, ".cache")}) {
			if p := filepath.Join(c, "runtimes", "csc", "csc.dll"); fileExists(p) {
				csc = p
				break
			}
		}
	}

	if os.Getenv("CLRDIAG_DOTNET_ROOTS") == "" {
		d.looked = append(d.looked, "CLRDIAG_DOTNET_ROOTS (unset)")
	}
	for _, c := range dedupe([]string{cache, filepath.Join(root, ".cache")}) {
		d.looked = append(d.looked, filepath.Join(c, "runtimes", "dotnet-*"))
	}
	seenRoot := map[string]bool{}
	have := map[int]bool{}
	for _, c := range cands {
		if c.source != "cache" {
			d.looked = append(d.looked, c.dir+" ("+c.source+")")
		}
		abs, err := filepath.Abs(c.dir)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real // the paths a process maps are the real ones
		}
		if seenRoot[abs] {
			continue
		}
		seenRoot[abs] = true
		host := filepath.Join(abs, "dotnet")
		if !fileExists(host) {
			continue
		}
		for _, v := range frameworkVersions(abs, "Microsoft.NETCore.App") {
			major, _ := strconv.Atoi(v[:strings.IndexByte(v+".", '.')])
			if major == 0 || have[major] {
				continue
			}
			have[major] = true
			r := &Runtime{
				Host: host, DotnetRoot: abs, Version: v, Major: major, Source: c.source, Root: root,
				SharedDir: filepath.Join(abs, "shared", "Microsoft.NETCore.App", v),
				MCS:       mcs, CSC: csc,
			}
			for _, a := range frameworkVersions(abs, "Microsoft.AspNetCore.App") {
				if strings.HasPrefix(a, strconv.Itoa(major)+".") {
					r.AspNetDir = filepath.Join(abs, "shared", "Microsoft.AspNetCore.App", a)
					break
				}
			}
			d.runtimes = append(d.runtimes, r)
		}
	}
	// csc runs on .NET 10 or later (its runtimeconfig rolls forward).
	for _, r := range d.runtimes {
		if r.Major >= 10 {
			for _, x := range d.runtimes {
				x.CSCHost = r.Host
			}
			break
		}
	}
	return d
}

// compilerErr says why targets cannot be built for r, or nil.
func (r *Runtime) compilerErr() error {
	if r.Major < 5 {
		if r.MCS == "" {
			return errors.New("mcs (Debian package mono-mcs) is not on PATH and CLRDIAG_MCS is not set")
		}
		return nil
	}
	if r.CSC == "" {
		return errors.New("csc.dll (Roslyn) was not found (CLRDIAG_CSC, or <cache>/runtimes/csc/csc.dll from ../shared/runtimes/install.sh)")
	}
	if r.CSCHost == "" {
		return errors.New("csc.dll needs a .NET 10 or later runtime to run on, and none was found")
	}
	return nil
}

// frameworkVersions lists the versions of a shared framework under a dotnet
// root, highest first.
func frameworkVersions(root, framework string) []string {
	ents, err := os.ReadDir(filepath.Join(root, "shared", framework))
	if err != nil {
		return nil
	}
	var vs []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != "" && e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			vs = append(vs, e.Name())
		}
	}
	slices.SortFunc(vs, func(a, b string) int { return compareVersions(b, a) })
	return vs
}

// compareVersions orders dotted versions numerically ("8.0.10" > "8.0.9");
// a prerelease suffix sorts before the release.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		an, aerr := strconv.Atoi(strings.SplitN(as[i], "-", 2)[0])
		bn, berr := strconv.Atoi(strings.SplitN(bs[i], "-", 2)[0])
		if aerr == nil && berr == nil && an != bn {
			return cmp.Compare(an, bn)
		}
		if as[i] != bs[i] {
			// "0-preview" before "0".
			return -cmp.Compare(len(as[i]), len(bs[i]))
		}
	}
	return cmp.Compare(len(as), len(bs))
}

func dedupe(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
