package gcdump

import "testing"

// The runtime's names (TypeHandle::GetName, the reflection syntax) and how
// they are shown.
var typeNameCases = []struct{ runtime, shown string }{
	{"System.String", "System.String"},
	{"System.String[]", "System.String[]"},
	{"System.String[,]", "System.String[,]"},
	{"System.String[,,]", "System.String[,,]"},
	{"System.Int32[*]", "System.Int32[*]"},
	{"System.Int32[][]", "System.Int32[][]"},
	{"System.Int32[][][]", "System.Int32[][][]"},
	{"System.Int32[,][]", "System.Int32[,][]"},
	{"System.Int32[][,]", "System.Int32[][,]"},
	{"System.Int32[,][,,][]", "System.Int32[,][,,][]"},
	{"System.Collections.Generic.List`1[System.String]", "System.Collections.Generic.List<System.String>"},
	{"System.Collections.Generic.List`1[System.String][]", "System.Collections.Generic.List<System.String>[]"},
	{"System.Collections.Generic.List`1[System.String][,]", "System.Collections.Generic.List<System.String>[,]"},
	{"System.Collections.Generic.List`1[System.String[,]]", "System.Collections.Generic.List<System.String[,]>"},
	{"System.Collections.Generic.List`1[System.Int32[][,]][]", "System.Collections.Generic.List<System.Int32[][,]>[]"},
	{"System.Collections.Generic.Dictionary`2[System.String,System.Int32[]]", "System.Collections.Generic.Dictionary<System.String,System.Int32[]>"},
	{"System.Collections.Generic.Dictionary`2+Entry[System.String,System.Object][]", "System.Collections.Generic.Dictionary+Entry<System.String,System.Object>[]"},
	{"System.Collections.Generic.Dictionary`2[System.String,System.Collections.Generic.List`1[System.Int32[,]]]",
		"System.Collections.Generic.Dictionary<System.String,System.Collections.Generic.List<System.Int32[,]>>"},
	{"System.Tuple`3[System.Int32,System.String[],System.Collections.Generic.KeyValuePair`2[System.Int32,System.Int32][]]",
		"System.Tuple<System.Int32,System.String[],System.Collections.Generic.KeyValuePair<System.Int32,System.Int32>[]>"},
	// Assembly-qualified arguments lose the assembly.
	{"System.Collections.Generic.List`1[[System.String, System.Private.CoreLib, Version=4.0.0.0, Culture=neutral, PublicKeyToken=7cec85d7bea7798e]]",
		"System.Collections.Generic.List<System.String>"},
	{"System.Collections.Generic.Dictionary`2[[System.String, System.Private.CoreLib],[System.Int32[,], System.Private.CoreLib]][]",
		"System.Collections.Generic.Dictionary<System.String,System.Int32[,]>[]"},
	// Compiler-generated names keep their angle brackets.
	{"Program+<>c__DisplayClass0_0", "Program+<>c__DisplayClass0_0"},
	{"Program+<>c", "Program+<>c"},
	{"Program+<Main>d__0", "Program+<Main>d__0"},
	{"System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[System.Int32,Program+<Run>d__3]",
		"System.Runtime.CompilerServices.AsyncTaskMethodBuilder+AsyncStateMachineBox<System.Int32,Program+<Run>d__3>"},
	{"Program+<>c[]", "Program+<>c[]"},
	// Damaged names come out readable, never lost.
	{"Broken[System.String", "Broken[System.String"},
	{"Odd`Name", "Odd`Name"},
}

func TestDisplayTypeName(t *testing.T) {
	for _, c := range typeNameCases {
		if got := displayTypeName(c.runtime); got != c.shown {
			t.Errorf("%s: %s, want %s", c.runtime, got, c.shown)
		}
		// Shown names are a fixed point of the canonical reading.
		if got := canonicalTypeName(c.shown); got != c.shown {
			t.Errorf("canonical(%s) = %s", c.shown, got)
		}
	}
}

// TraceEvent (dotnet-gcdump, PerfView) spells multi-dimensional arrays
// with angle brackets; canonicalTypeName reads them as displayTypeName
// writes them.
func TestCanonicalTypeName(t *testing.T) {
	for _, c := range []struct{ traceEvent, want string }{
		{"System.String<,>", "System.String[,]"},
		{"System.Int32<,,>[]", "System.Int32[,,][]"},
		{"System.Int32[]<,>", "System.Int32[][,]"},
		{"System.Int32<*>", "System.Int32[*]"},
		{"List<System.String<,>>", "List<System.String[,]>"},
		{"List<System.String>", "List<System.String>"},
		{"StartupHook+[]c__DisplayClass1_0", "StartupHook+[]c__DisplayClass1_0"},
		{"<>c", "<>c"},
		{"A<,", "A<,"},
	} {
		if got := canonicalTypeName(c.traceEvent); got != c.want {
			t.Errorf("%s: %s, want %s", c.traceEvent, got, c.want)
		}
	}
}
