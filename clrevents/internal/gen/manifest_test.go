package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/clrevents/internal/spec"
)

// A piece of a full manifest, as the runtime's has it: namespaces,
// messages, maps, UserData and a localization table that the trimmed copy
// leaves out.
const fullManifest = `<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">
 <instrumentation xmlns:win="http://manifests.microsoft.com/win/2004/08/windows/events">
  <events xmlns="http://schemas.microsoft.com/win/2004/08/events">
   <provider name="P" guid="{0}" symbol="S" messageFileName="x">
    <keywords><keyword name="AKeyword" mask="0x1" message="$(string.a)" symbol="A"/><keyword name="BKeyword" mask="0x40000000000" symbol="B"/></keywords>
    <tasks><task name="T" symbol="T" value="1" eventGUID="{1}" message="$(string.t)"><opcodes><opcode name="Op" message="m" symbol="O" value="12"> </opcode></opcodes></task></tasks>
    <maps><valueMap name="M"><map value="0" message="$(string.m)"/></valueMap></maps>
    <templates>
     <template tid="Head"><data name="A" inType="win:UInt32" outType="win:HexInt32"/><data name="ClrInstanceID" inType="win:UInt16"/>
      <UserData><Head xmlns="myNs"><A> %1 </A></Head></UserData></template>
     <template tid="Many">
      <data name="N" inType="win:UInt16"/>
      <data name="Ids" count="N" inType="win:UInt64" outType="win:HexInt64"/>
      <data name="Offsets" count="N" inType="win:UInt32"/>
      <data name="Size" inType="win:UInt32"/>
      <data name="Blob" inType="win:Binary" length="Size"/>
      <data name="Fixed" count="2" inType="win:Pointer"/>
      <data name="Ok" inType="win:Boolean"/>
      <data name="Signed" inType="win:Int32"/>
      <data name="Text" inType="win:AnsiString"/>
      <struct name="Values" count="N"><data name="Index" inType="win:UInt16"/><data name="Size" inType="win:Pointer"/></struct>
     </template>
    </templates>
    <events>
     <event value="7" version="0" level="win:Informational" task="T" opcode="Op" symbol="Thing" message="$(string.e)"/>
     <event value="7" version="1" level="win:Informational" template="Head" keywords="AKeyword BKeyword" task="T" opcode="Op" symbol="ThingStart_V1"/>
     <event value="9" version="2" level="win:Verbose" template="Many" keywords="AKeyword" opcode="win:Info" symbol="Many_V2"/>
    </events>
   </provider>
  </events>
 </instrumentation>
 <localization><resources culture="en-US"><stringTable><string id="a" value="A words"/></stringTable></resources></localization>
</instrumentationManifest>`

// TestTrim: trimming keeps what the generator reads and nothing else, the
// trimmed copy reads back to the same events, and trimming it again gives
// the same bytes.
func TestTrim(t *testing.T) {
	m, err := parseManifest(strings.NewReader(fullManifest))
	if err != nil {
		t.Fatal(err)
	}
	var once bytes.Buffer
	if err := trim(&once, m, "test@1 ClrEtwAll.man"); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"message=", `symbol="S"`, `symbol="O"`, "<UserData", "valueMap", "<localization", "A words"} {
		if strings.Contains(once.String(), gone) {
			t.Errorf("trimmed copy keeps %q:\n%s", gone, once.String())
		}
	}
	m2, err := parseManifest(bytes.NewReader(once.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if m2.Source != "test@1 ClrEtwAll.man" {
		t.Errorf("source %q", m2.Source)
	}
	var twice bytes.Buffer
	if err := trim(&twice, m2, m2.Source); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(once.Bytes(), twice.Bytes()) {
		t.Errorf("trimming the trimmed copy changes it:\n%s\n---\n%s", once.String(), twice.String())
	}
	a, err := m.events()
	if err != nil {
		t.Fatal(err)
	}
	b, err := m2.events()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 1 || len(a[0].Events) != 2 || len(b[0].Events) != 2 {
		t.Fatalf("events %v / %v", a, b)
	}
	e := b[0].Events[0]
	if e.Name != "ThingStart" || e.Keywords != 0x40000000001 || e.Task != "T" || e.Opcode != "Op" ||
		len(e.Layouts) != 2 || len(e.Layouts[0]) != 0 || len(e.Layouts[1]) != 2 || !e.Layouts[1][0].Hex {
		t.Errorf("event 7: %+v", e)
	}
	if many := b[0].Events[1]; len(many.Layouts) != 3 || many.HasV[0] || many.HasV[1] || !many.HasV[2] {
		t.Errorf("event 9 versions: %+v", many)
	}
}

// TestTrimmedCopyIsTrimOutput: the committed copy is exactly what -trim
// writes for it (it was made by the program, not by hand).
func TestTrimmedCopyIsTrimOutput(t *testing.T) {
	m, err := parseManifest(bytes.NewReader(spec.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := trim(&b, m, m.Source); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), spec.Manifest) {
		t.Error("ClrEtwAll.trimmed.man differs from what gen -trim makes of it")
	}
}

func TestGenerateFromManifest(t *testing.T) {
	m, err := parseManifest(strings.NewReader(fullManifest))
	if err != nil {
		t.Fatal(err)
	}
	payloads := []spec.Payload{{Name: "Head", Doc: "Head.", Versions: [][]spec.Field{{}, {
		{Name: "A", Type: spec.Uint32}, {Name: "ClrInstanceID", Type: spec.Uint16}}}}}
	providers := []spec.Provider{{Name: "P", Const: "ProviderP", Table: "pEvents", Doc: "P ids.", Events: []spec.Event{
		{ID: 7, Name: "ThingStart", Const: "IDThing", Payload: "Head", Aliases: []string{"T/Op"}},
		{ID: 9, Name: "Many", Aligned: []string{"Values"}},
		{ID: 11, Name: "Newer", Keywords: "0x80"},
	}}}
	src, err := generate(m, providers, payloads)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{id: 7, name: "ThingStart", keywords: 0x40000000001, task: "T", opcode: "Op", layouts: [][]Field{fields0, fields1}, decode: decodeAnyHead, aliases: []string{"T/Op", "Thing"}}`,
		`{id: 9, name: "Many", keywords: 0x1, task: "", opcode: "win:Info", layouts: [][]Field{nil, nil, fields2}}`,
		`{id: 11, name: "Newer", keywords: 0x80}`,
		// The typed payload decides hexadecimal: A is not.
		`var fields1 = []Field{{Name: "A", Type: TypeUint32}, {Name: "ClrInstanceID", Type: TypeUint16}}`,
		`{Name: "Ids", Type: TypeArray, Elem: TypeUint64, Count: "N", Hex: true}`,
		`{Name: "Offsets", Type: TypeUint32Array, Count: "N"}`,
		`{Name: "Blob", Type: TypeBinary, Length: "Size"}`,
		`{Name: "Fixed", Type: TypeArray, Elem: TypePointer, Count: "2"}`,
		`{Name: "Ok", Type: TypeBool32}`, `{Name: "Signed", Type: TypeInt32}`, `{Name: "Text", Type: TypeAnsiString}`,
		`{Name: "Values", Type: TypeStruct, Count: "N", Fields: []Field{{Name: "Index", Type: TypeUint16}, {Name: "Size", Type: TypePointer}}, Aligned: true}`,
		"IDThing uint16 = 7",
		`const ManifestSource = ""`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated code lacks %s", want)
		}
	}

	bad := []struct {
		name     string
		events   []spec.Event
		payloads []spec.Payload
		want     string
	}{
		{"renamed", []spec.Event{{ID: 7, Name: "Other"}}, nil, "the manifest ThingStart"},
		{"no keywords", []spec.Event{{ID: 12, Name: "X"}}, nil, "give its Keywords"},
		{"not a struct", []spec.Event{{ID: 9, Name: "Many", Aligned: []string{"Ids"}}}, nil, "not a struct field"},
		{"payload differs", []spec.Event{{ID: 7, Name: "ThingStart", Payload: "Head"}},
			[]spec.Payload{{Name: "Head", Versions: [][]spec.Field{{}, {{Name: "A", Type: spec.Uint64}, {Name: "ClrInstanceID", Type: spec.Uint16}}}}},
			"the manifest's A Uint32"},
		{"payload misses a field", []spec.Event{{ID: 7, Name: "ThingStart", Payload: "Head"}},
			[]spec.Payload{{Name: "Head", Versions: [][]spec.Field{{}, {{Name: "A", Type: spec.Uint32}}}}},
			"has 1 fields, the manifest's template 2"},
	}
	for _, tt := range bad {
		prs := []spec.Provider{{Name: "P", Const: "ProviderP", Table: "pEvents", Events: tt.events}}
		if _, err := generate(m, prs, tt.payloads); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := generate(m, nil, nil); err == nil || !strings.Contains(err.Error(), "no table") {
		t.Errorf("a manifest provider without a table: err = %v", err)
	}
}

func TestManifestErrors(t *testing.T) {
	for _, tt := range []struct{ name, tpl, ev, want string }{
		{"unknown type", `<template tid="X"><data name="A" inType="win:Blob"/></template>`, `<event value="1" template="X" symbol="E"/>`, "not supported"},
		{"count not earlier", `<template tid="X"><data name="A" inType="win:UInt32" count="N"/><data name="N" inType="win:UInt16"/></template>`, `<event value="1" template="X" symbol="E"/>`, "not an earlier field"},
		{"binary without length", `<template tid="X"><data name="A" inType="win:Binary"/></template>`, `<event value="1" template="X" symbol="E"/>`, "without length"},
		{"unknown template", ``, `<event value="1" template="Y" symbol="E"/>`, "unknown template"},
		{"unknown keyword", ``, `<event value="1" keywords="ZKeyword" symbol="E"/>`, "unknown keyword"},
		{"twice", ``, `<event value="1" symbol="E"/><event value="1" symbol="E"/>`, "defined twice"},
	} {
		src := `<instrumentationManifest><instrumentation><events><provider name="P"><templates>` + tt.tpl +
			`</templates><events>` + tt.ev + `</events></provider></events></instrumentation></instrumentationManifest>`
		m, err := parseManifest(strings.NewReader(src))
		if err == nil {
			_, err = m.events()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestMerge: additions replace templates and events of the same key and
// add new ones.
func TestMerge(t *testing.T) {
	base := `<instrumentationManifest source="base"><instrumentation><events><provider name="P"><keywords><keyword name="A" mask="0x1"/></keywords><templates>
<template tid="T"><data name="Old" inType="win:UInt8"/></template></templates><events><event value="1" version="0" template="T" symbol="E"/></events></provider></events></instrumentation></instrumentationManifest>`
	add := `<instrumentationManifest source="add"><instrumentation><events><provider name="p"><keywords><keyword name="B" mask="0x2"/></keywords><templates>
<template tid="T"><data name="New" inType="win:UInt16"/></template><template tid="T2"><data name="X" inType="win:UInt32"/></template></templates>
<events><event value="1" version="1" template="T2" keywords="A B" symbol="E_V1"/></events></provider><provider name="Q"/></events></instrumentation></instrumentationManifest>`
	m, err := loadManifest([]byte(base), []byte(add))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := m.events()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || m.additions != "add" {
		t.Fatalf("providers %d, additions %q", len(ps), m.additions)
	}
	e := ps[0].Events[0]
	if len(e.Layouts) != 2 || e.Layouts[0][0].Name != "New" || e.Layouts[1][0].Name != "X" || e.Keywords != 3 || e.Name != "E" {
		t.Errorf("merged event %+v", e)
	}
}
