package profile

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents"
)

func TestSymbolTable(t *testing.T) {
	var st SymbolTable
	st.AddModule(&clrevents.ModuleLoad{ModuleID: 1, ModuleILPath: `C:\Program Files\dotnet\shared\System.Private.CoreLib.dll`})
	st.AddModule(&clrevents.ModuleLoad{ModuleID: 2, ModuleNativePath: "/app/App.ni.exe"})
	st.AddMethod(&clrevents.MethodLoadVerbose{MethodStartAddress: 0x1000, MethodSize: 0x10, ModuleID: 1, MethodNamespace: "System.String", MethodName: "Concat"})
	st.AddMethod(&clrevents.MethodLoadVerbose{MethodStartAddress: 0x2000, MethodSize: 0x10, ModuleID: 2, MethodName: "Main"})
	st.AddMethod(&clrevents.MethodLoadVerbose{MethodStartAddress: 0x3000, MethodSize: 0, ModuleID: 2, MethodName: "Empty"})
	tests := []struct {
		addr uint64
		name string
		mod  string
		ok   bool
	}{
		{0x1000, "System.String.Concat", "System.Private.CoreLib", true},
		{0x100f, "System.String.Concat", "System.Private.CoreLib", true},
		{0x1010, "System.String.Concat", "System.Private.CoreLib", true}, // return address just past the end
		{0x1011, "", "", false},
		{0x0fff, "", "", false},
		{0x2008, "Main", "App", true},
		{0x3000, "", "", false}, // zero-size ranges are ignored
	}
	for _, tt := range tests {
		s, ok := st.Lookup(tt.addr)
		if ok != tt.ok || s.Name != tt.name || s.Module != tt.mod {
			t.Errorf("Lookup(%#x) = %+v, %v; want %q %q %v", tt.addr, s, ok, tt.name, tt.mod, tt.ok)
		}
	}
	// A later definition of the same start replaces the earlier one.
	st.AddMethod(&clrevents.MethodLoadVerbose{MethodStartAddress: 0x2000, MethodSize: 0x20, ModuleID: 2, MethodName: "Main2"})
	if s, ok := st.Lookup(0x201f); !ok || s.Name != "Main2" || st.Methods() != 2 {
		t.Errorf("after redefinition: %+v %v, %d methods", s, ok, st.Methods())
	}
}

// TestSymbolTablePayloads checks the methods added by AddMethodPayload:
// names decoded on first use, identical through Lookup and appendNames, a
// later payload for the same start replacing the earlier one whatever its
// size, and the payload buffer bounded by the methods it holds.
func TestSymbolTablePayloads(t *testing.T) {
	var st SymbolTable
	st.AddModule(&clrevents.ModuleLoad{ModuleID: 1, ModuleILPath: "/app/App.dll"})
	const n = 300
	for round := range 20 {
		for i := range n {
			ns := fmt.Sprintf("App.Type%d", i)
			if round%2 == 1 {
				ns += strings.Repeat("x", round) // another size: not written in place
			}
			if err := st.AddMethodPayload(methodPayload(0x10000+uint64(i)*0x100, 0x80, 1, ns, "Run"), 2); err != nil {
				t.Fatal(err)
			}
		}
		if st.Methods() != n {
			t.Fatalf("round %d: %d methods, want %d", round, st.Methods(), n)
		}
		kept := 0
		for _, c := range st.chunks {
			kept += len(c)
		}
		if live := n * len(methodPayload(0, 0, 0, "App.Type100"+strings.Repeat("x", 19), "Run")); kept > 2*live+1<<16 {
			t.Fatalf("round %d: %d payload bytes kept for %d live", round, kept, live)
		}
	}
	// Version 2 wants a ReJITID: without it the names do not decode and
	// the method is named by its address.
	short := methodPayload(0x90000, 0x10, 1, "App.Short", "Cut")
	if err := st.AddMethodPayload(short[:len(short)-8], 2); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		addr      uint64
		name, sig string
	}{
		{0x10000, "App.Type0xxxxxxxxxxxxxxxxxxx.Run", "void  ()"},
		{0x10000 + 299*0x100 + 0x80, "App.Type299xxxxxxxxxxxxxxxxxxx.Run", "void  ()"},
		{0x90008, "App.Short.method_0x90000", "void  ()"},
	} {
		i := st.index(tt.addr)
		if i < 0 {
			t.Fatalf("index(%#x) = -1", tt.addr)
		}
		buf, n := st.appendNames([]byte("pre"), i)
		s, ok := st.Lookup(tt.addr)
		if !ok || s.Name != tt.name || s.Signature != tt.sig || s.Module != "App" {
			t.Errorf("Lookup(%#x) = %+v, %v; want %q %q", tt.addr, s, ok, tt.name, tt.sig)
		}
		if got := string(buf); got != "pre"+s.Name+s.Signature || n != len(s.Name) {
			t.Errorf("appendNames(%#x) = %q, %d; Lookup %q %q", tt.addr, got, n, s.Name, s.Signature)
		}
		// Once Lookup decoded the names, appendNames gives them.
		if buf, _ := st.appendNames(nil, i); string(buf) != s.Name+s.Signature {
			t.Errorf("appendNames(%#x) after Lookup = %q", tt.addr, buf)
		}
	}
	if _, ok := st.Lookup(0x10000 + 0x81); ok {
		t.Error("an address past a method's end resolved")
	}
	// Decoded methods replaced again and again keep one set of names each.
	for round := range 50 {
		for i := range 10 {
			start := 0x10000 + uint64(i)*0x100
			st.AddMethod(&clrevents.MethodLoadVerbose{MethodStartAddress: start, MethodSize: 0x80, ModuleID: 1,
				MethodNamespace: "App.Again", MethodName: fmt.Sprint(round)})
			if _, ok := st.Lookup(start + 1); !ok {
				t.Fatalf("Lookup(%#x) failed", start+1)
			}
			if err := st.AddMethodPayload(methodPayload(start, 0x80, 1, "App.Again", fmt.Sprint(round)), 2); err != nil {
				t.Fatal(err)
			}
			if s, _ := st.Lookup(start + 1); s.Name != "App.Again."+fmt.Sprint(round) {
				t.Fatalf("Lookup(%#x) = %q after round %d", start+1, s.Name, round)
			}
		}
	}
	if len(st.names) > 20 {
		t.Errorf("%d decoded names kept for 10 methods redefined 100 times", len(st.names))
	}
}

func TestAppendHex(t *testing.T) {
	vals := []uint64{0, 1, 9, 0xa, 0xf, 0x10, 0xff, 0x100, 0x7ff6a1b2c3d4, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for i := range 64 {
		vals = append(vals, 1<<i, 1<<i-1, 0x9E3779B97F4A7C15>>i)
	}
	for _, v := range vals {
		if got, want := string(appendHex([]byte("pre"), v)), "pre0x"+strconv.FormatUint(v, 16); got != want {
			t.Errorf("appendHex(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestModuleAndVersionFromPath holds moduleName and versionFromPath to the
// plain versions they replaced (a lower-cased copy of the path; the path
// with its separators made one).
func TestModuleAndVersionFromPath(t *testing.T) {
	oldModule := func(path string) string {
		if i := strings.LastIndexAny(path, `/\`); i >= 0 {
			path = path[i+1:]
		}
		lower := strings.ToLower(path)
		for _, ext := range []string{".ni.dll", ".ni.exe", ".dll", ".exe"} {
			if strings.HasSuffix(lower, ext) {
				return path[:len(path)-len(ext)]
			}
		}
		return path
	}
	oldVersion := func(p string) string {
		p = strings.ReplaceAll(p, `\`, "/")
		const dir = "/Microsoft.NETCore.App/"
		i := strings.Index(p, dir)
		if i < 0 {
			return ""
		}
		v, _, ok := strings.Cut(p[i+len(dir):], "/")
		if !ok || v == "" || v[0] < '0' || v[0] > '9' {
			return ""
		}
		return v
	}
	paths := []string{"", "a", ".dll", "x.DLL", "App.ni.EXE", "App.Ni.Dll", "App.exe.dll", "dll", "App.dlll", "Éé.DLL", "İ.dll", "K.exe",
		`C:\Program Files\dotnet\shared\Microsoft.NETCore.App\5.0.4\System.Private.CoreLib.dll`,
		"/usr/share/dotnet/shared/Microsoft.NETCore.App/3.1.2/System.Runtime.dll",
		"/x/Microsoft.NETCore.App/", "/x/Microsoft.NETCore.App/3.1", "/x/Microsoft.NETCore.App//a", "/x/Microsoft.NETCore.App/v3/a",
		"Microsoft.NETCore.App/3.1.2/a", "/xMicrosoft.NETCore.App/3.1.2/a", "/Microsoft.NETCore.Apps/1/a/Microsoft.NETCore.App/2.0/b",
		`/a\Microsoft.NETCore.App\6.0.1\b`, "/Microsoft.NETCore.App/x/Microsoft.NETCore.App/7.0/b", "/Microsoft.NETCore.App"}
	for _, p := range paths {
		if got, want := moduleName(p), oldModule(p); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", p, got, want)
		}
		if got, want := versionFromPath(p), oldVersion(p); got != want {
			t.Errorf("versionFromPath(%q) = %q, want %q", p, got, want)
		}
	}
}
