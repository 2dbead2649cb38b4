package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents/internal/spec"
)

// TestGeneratedFileIsFresh fails when clrevents/events_gen.go differs from
// what the generator makes of the spec: run go generate ./clrevents.
func TestGeneratedFileIsFresh(t *testing.T) {
	m, err := loadManifest(spec.Manifest, spec.ManifestAdditions)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(m, spec.Providers, spec.Payloads)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../events_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("clrevents/events_gen.go is stale (first difference at line %d:\n have %q\n want %q); run: go generate ./clrevents", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("clrevents/events_gen.go is stale (%d lines, want %d); run: go generate ./clrevents", len(gl), len(wl))
	}
}

func TestGenerateShapes(t *testing.T) {
	payloads := []spec.Payload{
		{Name: "Widen", Doc: "Widen.", Versions: [][]spec.Field{
			{{Name: "A", Type: spec.Uint16}},
			{{Name: "A", Type: spec.Uint32}, {Name: "P", Type: spec.Pointer}},
		}},
		{Name: "Arr", Doc: "Arr.", Versions: [][]spec.Field{{
			{Name: "N", Type: spec.Uint8, Go: "-"},
			{Name: "X", Type: spec.Uint32Array, Count: "N"},
			{Name: "K", Type: spec.Uint16},
			{Name: "Y", Type: spec.Uint32Array, Count: "K"},
			{Name: "E0", Type: spec.Uint64, Go: "E[0]"}, {Name: "E2", Type: spec.Uint64, Go: "E[2]"},
		}}},
		{Name: "Hand", Custom: true, PtrSize: true, Versions: [][]spec.Field{{{Name: "Z", Type: spec.Uint8}}}},
		{Name: "Raw", Untyped: true, Versions: [][]spec.Field{{{Name: "R", Type: spec.GUID}}}},
	}
	providers := []spec.Provider{{Name: "P", Const: "ProviderP", Table: "pEvents", Doc: "P ids.", Events: []spec.Event{
		{ID: 1, Name: "W", Keywords: "0", Const: "IDW", Payload: "Widen", Aliases: []string{"T/W"}},
		{ID: 2, Name: "A", Keywords: "0", Payload: "Arr"},
		{ID: 3, Name: "H", Keywords: "0", Payload: "Hand"},
		{ID: 4, Name: "R", Keywords: "0", Payload: "Raw"},
		{ID: 5, Name: "S", Keywords: "0", Payload: spec.Empty},
		{ID: 6, Name: "U", Keywords: "0"},
	}}}
	src, err := generate(&manifest{}, providers, payloads)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"IDW uint16 = 1",
		"\tA uint32\n\tP uint64\n", // widest integer type
		"if version == 0 {\n\t\te.A = uint32(c.U16(\"A\"))",
		"func DecodeWiden(payload []byte, version uint8, ptrSize int) (Widen, error)",
		"nN := uint64(c.U8(\"N\"))",
		"e.K = uint16(nK)",
		"E [3]uint64",
		"e.E[2] = c.U64(\"E2\")",
		"func decodeAnyHand(payload []byte, version uint8, ptrSize int) (any, error) {\n\treturn DecodeHand(payload, version, ptrSize)",
		"{id: 4, name: \"R\", keywords: 0, layouts: layoutRaw}",
		"layouts: layoutEmpty, decode: decodeAnyEmpty",
		"{id: 6, name: \"U\", keywords: 0}",
		`aliases: []string{"T/W"}`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	if strings.Contains(string(src), "type Hand struct") || strings.Contains(string(src), "type Raw struct") {
		t.Error("custom or untyped payload got a struct")
	}

	bad := []struct {
		name      string
		providers []spec.Provider
		payloads  []spec.Payload
		want      string
	}{
		{"unsorted", []spec.Provider{{Name: "P", Events: []spec.Event{{ID: 2, Name: "B"}, {ID: 1, Name: "A"}}}}, nil, "sorted"},
		{"unknown payload", []spec.Provider{{Name: "P", Events: []spec.Event{{ID: 1, Name: "A", Payload: "Nope"}}}}, nil, "unknown payload"},
		{"bad count", nil, []spec.Payload{{Name: "X", Versions: [][]spec.Field{{{Name: "A", Type: spec.Uint32Array, Count: "N"}}}}}, "count field"},
		{"bad type", nil, []spec.Payload{{Name: "X", Versions: [][]spec.Field{{{Name: "A", Type: "Int7"}}}}}, "unknown type"},
		{"type clash", nil, []spec.Payload{{Name: "X", Versions: [][]spec.Field{{{Name: "A", Type: spec.String}}, {{Name: "A", Type: spec.Uint8}}}}}, "types"},
		{"duplicate", nil, []spec.Payload{{Name: "X", Versions: [][]spec.Field{{{Name: "A", Type: spec.Uint8}, {Name: "A", Type: spec.Uint8}}}}}, "twice"},
	}
	for _, tt := range bad {
		if _, err := generate(&manifest{}, tt.providers, tt.payloads); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
