package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMakeBuildIsStatic builds clrdiag as the README says ('make build')
// and checks that the result is one static executable: no program
// interpreter (PT_INTERP) and no shared library it needs (DT_NEEDED), so it
// runs on any Linux of its architecture, in scratch and distroless images.
func TestMakeBuildIsStatic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the ELF check is for Linux")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("make not found (CI=true)")
		}
		t.Skip("make not found")
	}
	bin := filepath.Join(t.TempDir(), "clrdiag")
	cmd := exec.Command(mk, "-s", "-C", filepath.Join("..", ".."), "build", "BIN="+bin)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // the Makefile must turn cgo off itself
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary has a program interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if f.Section(".interp") != nil {
		t.Error("the binary has an .interp section")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "clrdiag ") {
		t.Fatalf("%s --version: %v %q", bin, err, out)
	}
}
