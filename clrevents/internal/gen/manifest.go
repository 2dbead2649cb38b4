package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The runtime's ETW manifest (dotnet/runtime src/coreclr/vm/ClrEtwAll.man)
// as far as the generator reads it: providers, keywords, tasks and opcodes,
// templates and events. Messages, value maps and the localization table are
// not read. The same types read the trimmed extract (clrevents/internal/
// spec/ClrEtwAll.trimmed.man), which has only these elements.

type manifest struct {
	XMLName   xml.Name   `xml:"instrumentationManifest"`
	Source    string     `xml:"source,attr"`
	Providers []provider `xml:"instrumentation>events>provider"`
	// additions is the source of the additions merged in.
	additions string
}

type provider struct {
	Name      string     `xml:"name,attr"`
	GUID      string     `xml:"guid,attr"`
	Keywords  []keyword  `xml:"keywords>keyword"`
	Tasks     []task     `xml:"tasks>task"`
	Opcodes   []opcode   `xml:"opcodes>opcode"`
	Templates []template `xml:"templates>template"`
	Events    []event    `xml:"events>event"`
}

type keyword struct {
	Name string `xml:"name,attr"`
	Mask string `xml:"mask,attr"`
}

type task struct {
	Name    string   `xml:"name,attr"`
	Value   string   `xml:"value,attr"`
	Opcodes []opcode `xml:"opcodes>opcode"`
}

type opcode struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type template struct {
	TID   string `xml:"tid,attr"`
	Items []item `xml:",any"`
}

// item is a <data> or a <struct> of a template.
type item struct {
	XMLName xml.Name
	Name    string `xml:"name,attr"`
	InType  string `xml:"inType,attr"`
	OutType string `xml:"outType,attr"`
	Count   string `xml:"count,attr"`
	Length  string `xml:"length,attr"`
	Items   []item `xml:",any"`
}

type event struct {
	Value    string `xml:"value,attr"`
	Version  string `xml:"version,attr"`
	Level    string `xml:"level,attr"`
	Template string `xml:"template,attr"`
	Keywords string `xml:"keywords,attr"`
	Opcode   string `xml:"opcode,attr"`
	Task     string `xml:"task,attr"`
	Symbol   string `xml:"symbol,attr"`
}

func parseManifest(r io.Reader) (*manifest, error) {
	var m manifest
	if err := xml.NewDecoder(r).Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if len(m.Providers) == 0 {
		return nil, fmt.Errorf("manifest: no providers")
	}
	return &m, nil
}

// trim writes the extract of m that the generator reads: the same XML
// schema with only the elements and attributes above, one element a line.
func trim(w io.Writer, m *manifest, source string) error {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n")
	b.WriteString("<!-- Trimmed by clrevents/internal/gen -trim from the runtime's ETW manifest\n")
	b.WriteString("     (MIT License, (c) .NET Foundation and Contributors): providers, keywords,\n")
	b.WriteString("     tasks, opcodes, templates and events; messages, maps and strings left out.\n")
	b.WriteString("     Regenerate: go run ./clrevents/internal/gen -trim ClrEtwAll.man -source '...'\n")
	b.WriteString("     -o clrevents/internal/spec/ClrEtwAll.trimmed.man; then go generate ./clrevents. -->\n")
	fmt.Fprintf(&b, "<instrumentationManifest source=%q>\n<instrumentation>\n<events>\n", xmlEsc(source))
	for _, p := range m.Providers {
		fmt.Fprintf(&b, "<provider name=%q guid=%q>\n", xmlEsc(p.Name), xmlEsc(p.GUID))
		b.WriteString(" <keywords>\n")
		for _, k := range p.Keywords {
			fmt.Fprintf(&b, "  <keyword name=%q mask=%q/>\n", xmlEsc(k.Name), xmlEsc(k.Mask))
		}
		b.WriteString(" </keywords>\n <tasks>\n")
		for _, t := range p.Tasks {
			if len(t.Opcodes) == 0 {
				fmt.Fprintf(&b, "  <task name=%q value=%q/>\n", xmlEsc(t.Name), xmlEsc(t.Value))
				continue
			}
			fmt.Fprintf(&b, "  <task name=%q value=%q><opcodes>\n", xmlEsc(t.Name), xmlEsc(t.Value))
			for _, o := range t.Opcodes {
				fmt.Fprintf(&b, "   <opcode name=%q value=%q/>\n", xmlEsc(o.Name), xmlEsc(o.Value))
			}
			b.WriteString("  </opcodes></task>\n")
		}
		b.WriteString(" </tasks>\n")
		if len(p.Opcodes) > 0 {
			b.WriteString(" <opcodes>\n")
			for _, o := range p.Opcodes {
				fmt.Fprintf(&b, "  <opcode name=%q value=%q/>\n", xmlEsc(o.Name), xmlEsc(o.Value))
			}
			b.WriteString(" </opcodes>\n")
		}
		b.WriteString(" <templates>\n")
		for _, t := range p.Templates {
			fmt.Fprintf(&b, "  <template tid=%q>\n", xmlEsc(t.TID))
			for _, it := range t.Items {
				trimItem(&b, it, "   ")
			}
			b.WriteString("  </template>\n")
		}
		b.WriteString(" </templates>\n <events>\n")
		for _, e := range p.Events {
			b.WriteString("  <event")
			for _, a := range [][2]string{{"value", e.Value}, {"version", e.Version}, {"level", e.Level},
				{"template", e.Template}, {"keywords", e.Keywords}, {"opcode", e.Opcode}, {"task", e.Task}, {"symbol", e.Symbol}} {
				if a[1] != "" {
					fmt.Fprintf(&b, " %s=%q", a[0], xmlEsc(a[1]))
				}
			}
			b.WriteString("/>\n")
		}
		b.WriteString(" </events>\n</provider>\n")
	}
	b.WriteString("</events>\n</instrumentation>\n</instrumentationManifest>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func trimItem(b *strings.Builder, it item, indent string) {
	switch it.XMLName.Local {
	case "data":
		fmt.Fprintf(b, "%s<data name=%q inType=%q", indent, xmlEsc(it.Name), xmlEsc(it.InType))
		for _, a := range [][2]string{{"outType", it.OutType}, {"count", it.Count}, {"length", it.Length}} {
			if a[1] != "" {
				fmt.Fprintf(b, " %s=%q", a[0], xmlEsc(a[1]))
			}
		}
		b.WriteString("/>\n")
	case "struct":
		fmt.Fprintf(b, "%s<struct name=%q", indent, xmlEsc(it.Name))
		if it.Count != "" {
			fmt.Fprintf(b, " count=%q", xmlEsc(it.Count))
		}
		b.WriteString(">\n")
		for _, c := range it.Items {
			trimItem(b, c, indent+" ")
		}
		fmt.Fprintf(b, "%s</struct>\n", indent)
	}
	// <UserData> (an ETW rendering hint) is left out.
}

func xmlEsc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// mEvent is one event of the manifest, all versions together.
type mEvent struct {
	ID       uint16
	Name     string // the symbol without its _V<n> suffix
	Symbols  []string
	Keywords uint64
	Task     string
	Opcode   string
	// Layouts[v] is version v's field list; nil where the manifest has no
	// such version (the generator fills it from the previous one).
	Layouts [][]mField
	HasV    []bool
}

// mField is a field of a template.
type mField struct {
	Name  string
	Type  string // the clrevents FieldType name without "Type"
	Elem  string // element type of an Array
	Count string // count field name (or a literal number) of an array
	Len   string // length of a Binary: field name or literal
	Hex   bool
	Sub   []mField // a Struct array's fields
	// Aligned: the struct's elements carry C padding (from the spec).
	Aligned bool
}

var versionSuffix = regexp.MustCompile(`_V[0-9]+$`)

var inTypes = map[string]string{
	"win:UInt8": "Uint8", "win:UInt16": "Uint16", "win:UInt32": "Uint32", "win:UInt64": "Uint64",
	"win:Int8": "Int8", "win:Int16": "Int16", "win:Int32": "Int32", "win:Int64": "Int64",
	"win:Float": "Float32", "win:Double": "Float64", "win:Pointer": "Pointer", "win:Boolean": "Bool32",
	"win:UnicodeString": "String", "win:AnsiString": "AnsiString", "win:GUID": "GUID", "win:Binary": "Binary",
}

// convertItems turns template items into fields.
func convertItems(tid string, items []item) ([]mField, error) {
	var out []mField
	names := map[string]bool{}
	for _, it := range items {
		var f mField
		switch it.XMLName.Local {
		case "data":
			t, ok := inTypes[it.InType]
			if !ok {
				return nil, fmt.Errorf("template %s field %s: inType %q not supported", tid, it.Name, it.InType)
			}
			f = mField{Name: it.Name, Type: t, Hex: strings.HasPrefix(it.OutType, "win:HexInt")}
			if it.Length != "" {
				if t != "Binary" {
					return nil, fmt.Errorf("template %s field %s: length on %s not supported", tid, it.Name, it.InType)
				}
				f.Len = it.Length
			} else if t == "Binary" {
				return nil, fmt.Errorf("template %s field %s: Binary without length", tid, it.Name)
			}
			if it.Count != "" {
				switch t {
				case "String", "AnsiString", "Binary", "GUID":
					return nil, fmt.Errorf("template %s field %s: arrays of %s not supported", tid, it.Name, t)
				}
				if t == "Uint32" {
					f.Type = "Uint32Array"
				} else {
					f.Type, f.Elem = "Array", t
				}
				f.Count = it.Count
			}
		case "struct":
			sub, err := convertItems(tid+"."+it.Name, it.Items)
			if err != nil {
				return nil, err
			}
			if it.Count == "" {
				return nil, fmt.Errorf("template %s struct %s: no count", tid, it.Name)
			}
			f = mField{Name: it.Name, Type: "Struct", Count: it.Count, Sub: sub}
		default:
			continue
		}
		for _, ref := range []string{f.Count, f.Len} {
			if ref == "" {
				continue
			}
			if _, err := strconv.ParseUint(ref, 10, 32); err == nil {
				continue
			}
			if !names[ref] {
				return nil, fmt.Errorf("template %s field %s: count/length %q is not an earlier field", tid, f.Name, ref)
			}
		}
		if names[f.Name] {
			return nil, fmt.Errorf("template %s: field %s twice", tid, f.Name)
		}
		names[f.Name] = true
		out = append(out, f)
	}
	return out, nil
}

// mProvider is a provider of the manifest with its events by id.
type mProvider struct {
	Name     string
	Keywords map[string]uint64
	Events   []*mEvent // sorted by id
}

func parseNum(s string) (uint64, error) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return strconv.ParseUint(s[2:], 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// events collects every provider's events, with the layout of every
// version.
func (m *manifest) events() ([]*mProvider, error) {
	var out []*mProvider
	for _, p := range m.Providers {
		mp := &mProvider{Name: p.Name, Keywords: map[string]uint64{}}
		for _, k := range p.Keywords {
			v, err := parseNum(k.Mask)
			if err != nil {
				return nil, fmt.Errorf("%s keyword %s: mask %q: %w", p.Name, k.Name, k.Mask, err)
			}
			mp.Keywords[k.Name] = v
		}
		tpls := map[string][]mField{}
		for _, t := range p.Templates {
			fs, err := convertItems(t.TID, t.Items)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			tpls[t.TID] = fs
		}
		byID := map[uint16]*mEvent{}
		for _, e := range p.Events {
			id, err := strconv.ParseUint(e.Value, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("%s event %s: value %q: %w", p.Name, e.Symbol, e.Value, err)
			}
			ver := uint64(0)
			if e.Version != "" {
				if ver, err = strconv.ParseUint(e.Version, 10, 8); err != nil {
					return nil, fmt.Errorf("%s event %s: version %q: %w", p.Name, e.Symbol, e.Version, err)
				}
			}
			var kw uint64
			for _, k := range strings.Fields(e.Keywords) {
				v, ok := mp.Keywords[k]
				if !ok {
					return nil, fmt.Errorf("%s event %s: unknown keyword %s", p.Name, e.Symbol, k)
				}
				kw |= v
			}
			layout := []mField{}
			if e.Template != "" {
				fs, ok := tpls[e.Template]
				if !ok {
					return nil, fmt.Errorf("%s event %s: unknown template %s", p.Name, e.Symbol, e.Template)
				}
				layout = fs
			}
			me := byID[uint16(id)]
			if me == nil {
				me = &mEvent{ID: uint16(id)}
				byID[uint16(id)] = me
			}
			for len(me.Layouts) <= int(ver) {
				me.Layouts = append(me.Layouts, nil)
				me.HasV = append(me.HasV, false)
			}
			if me.HasV[ver] {
				return nil, fmt.Errorf("%s event %d version %d defined twice (%s)", p.Name, id, ver, e.Symbol)
			}
			me.HasV[ver] = true
			me.Layouts[ver] = layout
			me.Symbols = append(me.Symbols, e.Symbol)
			// The newest version names the event and gives its keywords,
			// task and opcode.
			if int(ver) == len(me.Layouts)-1 {
				me.Name = versionSuffix.ReplaceAllString(e.Symbol, "")
				me.Keywords, me.Task, me.Opcode = kw, e.Task, e.Opcode
			}
		}
		for _, me := range byID {
			// A version the manifest does not define keeps a nil layout
			// (GCJoin starts at version 2 in this provider).
			mp.Events = append(mp.Events, me)
		}
		sort.Slice(mp.Events, func(i, j int) bool { return mp.Events[i].ID < mp.Events[j].ID })
		out = append(out, mp)
	}
	return out, nil
}

// loadManifest parses the trimmed manifest and applies the additions.
func loadManifest(base, additions []byte) (*manifest, error) {
	m, err := parseManifest(bytes.NewReader(base))
	if err != nil {
		return nil, fmt.Errorf("trimmed manifest: %w", err)
	}
	if len(additions) == 0 {
		return m, nil
	}
	add, err := parseManifest(bytes.NewReader(additions))
	if err != nil {
		return nil, fmt.Errorf("manifest additions: %w", err)
	}
	merge(m, add)
	m.additions = add.Source
	return m, nil
}

// merge applies add to m: keywords by name, templates by tid, events by
// value and version replace or join m's; providers by name.
func merge(m, add *manifest) {
	for _, ap := range add.Providers {
		i := slices.IndexFunc(m.Providers, func(p provider) bool { return strings.EqualFold(p.Name, ap.Name) })
		if i < 0 {
			m.Providers = append(m.Providers, ap)
			continue
		}
		p := &m.Providers[i]
		for _, k := range ap.Keywords {
			if j := slices.IndexFunc(p.Keywords, func(x keyword) bool { return x.Name == k.Name }); j >= 0 {
				p.Keywords[j] = k
			} else {
				p.Keywords = append(p.Keywords, k)
			}
		}
		for _, t := range ap.Templates {
			if j := slices.IndexFunc(p.Templates, func(x template) bool { return x.TID == t.TID }); j >= 0 {
				p.Templates[j] = t
			} else {
				p.Templates = append(p.Templates, t)
			}
		}
		for _, e := range ap.Events {
			if j := slices.IndexFunc(p.Events, func(x event) bool { return x.Value == e.Value && x.Version == e.Version }); j >= 0 {
				p.Events[j] = e
			} else {
				p.Events = append(p.Events, e)
			}
		}
	}
}
