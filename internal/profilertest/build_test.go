//go:build linux

package profilertest_test

import (
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/profilertest"
)

// exported returns the functions a shared library exports.
func exported(t *testing.T, lib string) []string {
	t.Helper()
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			out = append(out, s.Name)
		}
	}
	return out
}

// TestBuildExports checks the two variants: the standard one exports exactly
// DllGetClassObject, the NO_ENTRY one does not export it.
func TestBuildExports(t *testing.T) {
	std := profilertest.Build(t, profilertest.Standard)
	if got := exported(t, std); !slices.Equal(got, []string{"DllGetClassObject"}) {
		t.Fatalf("%s exports %v, want only DllGetClassObject", std, got)
	}
	ne := profilertest.Build(t, profilertest.NoEntry)
	if ne == std {
		t.Fatal("both variants built to the same path")
	}
	if got := exported(t, ne); slices.Contains(got, "DllGetClassObject") || len(got) != 1 {
		t.Fatalf("%s exports %v, want one symbol that is not DllGetClassObject", ne, got)
	}
	if !filepath.IsAbs(std) || !filepath.IsAbs(ne) {
		t.Fatalf("Build must return absolute paths: %s, %s", std, ne)
	}
}

// TestProfilerCompilesCleanly compiles both variants afresh and fails on any
// gcc warning (-Wall -Wextra).
func TestProfilerCompilesCleanly(t *testing.T) {
	gcc := profilertest.GCC(t)
	for _, v := range []profilertest.Variant{profilertest.Standard, profilertest.NoEntry} {
		warnings, err := profilertest.Compile(gcc, v, filepath.Join(t.TempDir(), "lib.so"))
		if err != nil {
			t.Fatal(err)
		}
		if warnings != "" {
			t.Errorf("gcc warns about the %s profiler:\n%s", v, warnings)
		}
	}
}

// TestCLSIDMatchesSource reads the CLSID out of profiler.c and the README and
// compares it with profilertest.CLSID, so the three never drift apart.
func TestCLSIDMatchesSource(t *testing.T) {
	src, err := profilertest.Source()
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CLSID_Profiler = \{0x([0-9a-f]+), 0x([0-9a-f]+), 0x([0-9a-f]+), \{((?:0x[0-9a-f]{2}(?:, )?){8})\}\}`).FindStringSubmatch(string(code))
	if m == nil {
		t.Fatal("CLSID_Profiler initializer not found in profiler.c")
	}
	var fromC [16]byte
	d1, _ := strconv.ParseUint(m[1], 16, 32)
	d2, _ := strconv.ParseUint(m[2], 16, 16)
	d3, _ := strconv.ParseUint(m[3], 16, 16)
	fromC[0], fromC[1], fromC[2], fromC[3] = byte(d1), byte(d1>>8), byte(d1>>16), byte(d1>>24)
	fromC[4], fromC[5], fromC[6], fromC[7] = byte(d2), byte(d2>>8), byte(d3), byte(d3>>8)
	for i, b := range strings.Split(m[4], ", ") {
		v, _ := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 8)
		fromC[8+i] = byte(v)
	}
	want, err := profilertest.GUIDBytes(profilertest.CLSID)
	if err != nil {
		t.Fatal(err)
	}
	if fromC != want {
		t.Fatalf("profiler.c CLSID % x, profilertest.CLSID % x", fromC, want)
	}
	for _, doc := range []string{src, filepath.Join(filepath.Dir(src), "README.md")} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.ToLower(string(b)), profilertest.CLSID) {
			t.Errorf("%s does not mention the CLSID %s", doc, profilertest.CLSID)
		}
	}
}
