package profile

import (
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
