// Command gen writes clrevents/events_gen.go from the runtime's ETW manifest
// and the table in clrevents/internal/spec: every event of the manifest's
// providers (name, keywords, task, opcode and field layout of each version,
// taken from the manifest as it is), the provider and event id constants,
// and one struct, Decode<Name> and Decode<Name>Into per typed payload of
// the spec, checked field by field against the manifest. Run it with go
// generate ./clrevents; a test of this package fails when the committed
// file is stale.
//
// The manifest is read from the trimmed copy in clrevents/internal/spec
// (ClrEtwAll.trimmed.man, plus ClrEtwAll.additions.man). To take a newer
// runtime's events, trim its manifest into that copy and regenerate:
//
//	go run ./clrevents/internal/gen -trim path/to/ClrEtwAll.man \
//	    -source 'dotnet/runtime@COMMIT src/coreclr/vm/ClrEtwAll.man' \
//	    -o clrevents/internal/spec/ClrEtwAll.trimmed.man
//	go generate ./clrevents
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents/internal/spec"
)

func main() {
	out := flag.String("o", "events_gen.go", "output file")
	trimFrom := flag.String("trim", "", "instead of generating code, trim this full ClrEtwAll.man into the copy the generator reads (written to -o)")
	source := flag.String("source", "", "with -trim: where the manifest comes from (repository, commit and path), recorded in the copy")
	flag.Parse()
	if *trimFrom != "" {
		if *source == "" {
			log.Fatal("-trim needs -source (repository@commit path) so the copy says where it comes from")
		}
		f, err := os.Open(*trimFrom)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		m, err := parseManifest(f)
		if err != nil {
			log.Fatalf("%s: %v", *trimFrom, err)
		}
		if _, err := m.events(); err != nil {
			log.Fatalf("%s: %v", *trimFrom, err)
		}
		var b bytes.Buffer
		if err := trim(&b, m, *source); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		return
	}
	m, err := loadManifest(spec.Manifest, spec.ManifestAdditions)
	if err != nil {
		log.Fatal(err)
	}
	src, err := generate(m, spec.Providers, spec.Payloads)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// goTypes maps wire types to the Go type of their value.
var goTypes = map[spec.Type]string{
	spec.Uint8: "uint8", spec.Uint16: "uint16", spec.Uint32: "uint32", spec.Uint64: "uint64",
	spec.Float64: "float64", spec.Pointer: "uint64", spec.String: "string", spec.GUID: "[16]byte",
	spec.Uint32Array: "[]uint32",
}

// reads maps wire types to the cursor call that reads them.
var reads = map[spec.Type]string{
	spec.Uint8: "c.U8(%q)", spec.Uint16: "c.U16(%q)", spec.Uint32: "c.U32(%q)", spec.Uint64: "c.U64(%q)",
	spec.Float64: "c.F64(%q)", spec.Pointer: "c.Ptr(%q, ptrSize)", spec.String: "c.UTF16Z(%q)", spec.GUID: "c.GUID(%q)",
}

var intWidth = map[string]int{"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}

// structField is a field of a generated struct.
type structField struct {
	name, typ, doc string
	arrayLen       int // > 0 for "X[i]" targets
}

// target splits a field's Go target into the struct field and an index
// ("" when the value is not kept).
func target(fd spec.Field) (name, index string) {
	g := fd.Go
	if g == "" {
		g = fd.Name
	}
	if g == "-" {
		return "", ""
	}
	if i := strings.IndexByte(g, '['); i > 0 && strings.HasSuffix(g, "]") {
		return g[:i], g[i+1 : len(g)-1]
	}
	return g, ""
}

func check(p spec.Payload) error {
	if p.Name == "" || len(p.Versions) == 0 {
		return fmt.Errorf("payload %q: needs a name and at least one version", p.Name)
	}
	for v, l := range p.Versions {
		seen := map[string]spec.Type{}
		for _, fd := range l {
			if _, ok := goTypes[fd.Type]; !ok {
				return fmt.Errorf("payload %s v%d field %s: unknown type %q", p.Name, v, fd.Name, fd.Type)
			}
			if _, dup := seen[fd.Name]; dup {
				return fmt.Errorf("payload %s v%d: field %s twice", p.Name, v, fd.Name)
			}
			if fd.Type == spec.Uint32Array {
				t, ok := seen[fd.Count]
				if !ok || intWidth[goTypes[t]] == 0 || t == spec.Uint64 {
					return fmt.Errorf("payload %s v%d field %s: count field %q must be an earlier uint8/16/32 field", p.Name, v, fd.Name, fd.Count)
				}
			}
			seen[fd.Name] = fd.Type
		}
	}
	return nil
}

// fields computes the struct of a payload: the union of the fields of all
// versions, in the order of the newest version, then of older ones; an
// integer field read with several widths gets the widest.
func fields(p spec.Payload) ([]structField, error) {
	var out []structField
	idx := map[string]int{}
	for v := len(p.Versions) - 1; v >= 0; v-- {
		for _, fd := range p.Versions[v] {
			name, index := target(fd)
			if name == "" {
				continue
			}
			typ := goTypes[fd.Type]
			if fd.GoType != "" {
				typ = fd.GoType
			}
			n := 0
			if index != "" {
				i, err := strconv.Atoi(index)
				if err != nil || i < 0 || i > 64 {
					return nil, fmt.Errorf("payload %s field %s: bad index in %q", p.Name, fd.Name, fd.Go)
				}
				n = i + 1
			}
			if k, ok := idx[name]; ok {
				sf := &out[k]
				sf.arrayLen = max(sf.arrayLen, n)
				if sf.doc == "" {
					sf.doc = fd.Doc
				}
				if sf.typ != typ {
					if intWidth[sf.typ] == 0 || intWidth[typ] == 0 {
						return nil, fmt.Errorf("payload %s field %s: types %s and %s", p.Name, name, sf.typ, typ)
					}
					if intWidth[typ] > intWidth[sf.typ] {
						sf.typ = typ
					}
				}
				continue
			}
			idx[name] = len(out)
			out = append(out, structField{name: name, typ: typ, doc: fd.Doc, arrayLen: n})
		}
	}
	return out, nil
}

func hasPointer(p spec.Payload) bool {
	for _, l := range p.Versions {
		for _, fd := range l {
			if fd.Type == spec.Pointer {
				return true
			}
		}
	}
	return false
}

func isPrefix(a, b []spec.Field) bool {
	return len(a) <= len(b) && slices.EqualFunc(a, b[:len(a)], func(x, y spec.Field) bool {
		return x.Name == y.Name && x.Type == y.Type && x.Go == y.Go && x.Count == y.Count
	})
}

type gen struct {
	b          bytes.Buffer
	payloads   map[string]spec.Payload
	layoutVars map[string]string // field list literal -> variable
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

func comment(g *gen, indent, text string) {
	for _, line := range strings.Split(text, "\n") {
		g.p("%s// %s\n", indent, line)
	}
}

// reads emits the statements reading fields fs into e.
func (g *gen) reads(p spec.Payload, fs []spec.Field, sfs map[string]structField) {
	counts := map[string]bool{}
	for _, fd := range fs {
		if fd.Type == spec.Uint32Array {
			counts[fd.Count] = true
		}
	}
	for i := 0; i < len(fs); i++ {
		fd := fs[i]
		name, index := target(fd)
		if fd.Type == spec.Uint32Array {
			// Arrays sharing one count share one allocation.
			group := []spec.Field{fd}
			for i+1 < len(fs) && fs[i+1].Type == spec.Uint32Array && fs[i+1].Count == fd.Count {
				i++
				group = append(group, fs[i])
			}
			k := len(group)
			g.p("\tif n := c.Count(%q, %d*n%s, 4); !c.Failed() {\n", fd.Name, k, fd.Count)
			g.p("\t\tall := make([]uint32, n)\n")
			if k > 1 {
				g.p("\t\tm := n / %d\n", k)
			} else {
				g.p("\t\tm := n\n")
			}
			for j, a := range group {
				lo, hi := mul(j), mul(j+1)
				g.p("\t\t{\n\t\t\tpart := all[%s:%s:%s]\n", lo, hi, hi)
				g.p("\t\t\tfor i := range part {\n\t\t\t\tpart[i] = c.U32(%q)\n\t\t\t}\n", a.Name)
				if an, _ := target(a); an != "" {
					g.p("\t\t\te.%s = part\n", an)
				}
				g.p("\t\t}\n")
			}
			g.p("\t}\n")
			continue
		}
		read, have := fmt.Sprintf(reads[fd.Type], fd.Name), goTypes[fd.Type]
		if counts[fd.Name] {
			g.p("\tn%s := uint64(%s)\n", fd.Name, read)
			read, have = "n"+fd.Name, "uint64"
		}
		if name == "" {
			if !counts[fd.Name] {
				g.p("\t%s\n", read)
			}
			continue
		}
		if sf := sfs[name]; sf.typ != have {
			read = sf.typ + "(" + read + ")"
		}
		dst := "e." + name
		if index != "" {
			dst += "[" + index + "]"
		}
		g.p("\t%s = %s\n", dst, read)
	}
}

// mul is the index expression j*m.
func mul(j int) string {
	switch j {
	case 0:
		return ""
	case 1:
		return "m"
	}
	return strconv.Itoa(j) + "*m"
}

func (g *gen) payload(p spec.Payload) error {
	sfs, err := fields(p)
	if err != nil {
		return err
	}
	byName := map[string]structField{}
	comment(g, "", p.Doc)
	g.p("type %s struct {\n", p.Name)
	for _, sf := range sfs {
		byName[sf.name] = sf
		if sf.doc != "" {
			comment(g, "\t", sf.doc)
		}
		if sf.arrayLen > 0 {
			g.p("\t%s [%d]%s\n", sf.name, sf.arrayLen, sf.typ)
		} else {
			g.p("\t%s %s\n", sf.name, sf.typ)
		}
	}
	g.p("}\n\n")

	ptr, ptrArg, ptrParam := hasPointer(p), "", ""
	if p.PtrSize && !ptr {
		return fmt.Errorf("payload %s: PtrSize is only for Custom payloads", p.Name)
	}
	ptrDoc := ""
	if ptr {
		ptrArg, ptrParam = ", ptrSize", ", ptrSize int"
		ptrDoc = " ptrSize is the trace's\n// pointer size (4 or 8)."
	}
	last := len(p.Versions) - 1
	vers := "version 0"
	if last > 0 {
		vers = fmt.Sprintf("versions 0-%d", last)
	}
	g.p("// Decode%s decodes %s of the payload (newer versions by\n// their known prefix).%s\n", p.Name, vers, ptrDoc)
	g.p("func Decode%s(payload []byte, version uint8%s) (%s, error) {\n", p.Name, ptrParam, p.Name)
	g.p("\tvar e %s\n\terr := Decode%sInto(&e, payload, version%s)\n\treturn e, err\n}\n\n", p.Name, p.Name, ptrArg)
	g.p("// Decode%sInto is Decode%s filling a caller-owned value.\n", p.Name, p.Name)
	g.p("func Decode%sInto(e *%s, payload []byte, version uint8%s) error {\n", p.Name, p.Name, ptrParam)
	g.p("\tc := wire.NewCursor(payload)\n\t*e = %s{}\n", p.Name)

	// Versions from chain on each append fields to the previous one; older
	// versions are decoded on their own.
	chain := last
	for chain > 0 && isPrefix(p.Versions[chain-1], p.Versions[chain]) {
		chain--
	}
	for v := 0; v < chain; v++ {
		g.p("\tif version == %d {\n", v)
		g.reads(p, p.Versions[v], byName)
		g.p("\t\treturn decodeError(&c, %q, version)\n\t}\n", p.Name)
	}
	g.reads(p, p.Versions[chain], byName)
	for v := chain + 1; v <= last; v++ {
		added := p.Versions[v][len(p.Versions[v-1]):]
		if len(added) == 0 {
			continue
		}
		g.p("\tif version >= %d {\n", v)
		g.reads(p, added, byName)
		g.p("\t}\n")
	}
	g.p("\treturn decodeError(&c, %q, version)\n}\n\n", p.Name)
	// Adapter for the tables.
	g.adapter(p.Name, ptr)
	return nil
}

// adapter emits the table's decode function for a payload.
func (g *gen) adapter(name string, ptr bool) {
	if ptr {
		g.p("func decodeAny%s(payload []byte, version uint8, ptrSize int) (any, error) {\n", name)
		g.p("\treturn Decode%s(payload, version, ptrSize)\n}\n\n", name)
		return
	}
	g.p("func decodeAny%s(payload []byte, version uint8, _ int) (any, error) {\n", name)
	g.p("\treturn Decode%s(payload, version)\n}\n\n", name)
}

func (g *gen) layout(p spec.Payload) {
	g.p("var layout%s = [][]Field{\n", p.Name)
	for _, l := range p.Versions {
		g.p("\t{")
		for i, fd := range l {
			if i > 0 {
				g.p(", ")
			}
			g.p("{Name: %q, Type: Type%s", fd.Name, fd.Type)
			if fd.Count != "" {
				g.p(", Count: %q", fd.Count)
			}
			if fd.Hex {
				g.p(", Hex: true")
			}
			g.p("}")
		}
		g.p("},\n")
	}
	g.p("}\n\n")
}

// row is one event of a generated table: from the manifest, the spec's
// table, or both.
type row struct {
	id      uint16
	man     *mEvent
	overlay *spec.Event
}

func generate(m *manifest, providers []spec.Provider, payloads []spec.Payload) ([]byte, error) {
	g := &gen{payloads: map[string]spec.Payload{}, layoutVars: map[string]string{}}
	for _, p := range payloads {
		if err := check(p); err != nil {
			return nil, err
		}
		if _, dup := g.payloads[p.Name]; dup {
			return nil, fmt.Errorf("payload %s declared twice", p.Name)
		}
		g.payloads[p.Name] = p
	}
	mps, err := m.events()
	if err != nil {
		return nil, err
	}
	manByName := map[string]*mProvider{}
	for _, mp := range mps {
		manByName[strings.ToLower(mp.Name)] = mp
	}
	tables := make([][]row, len(providers))
	usedLayouts := map[string]bool{}
	for i, pr := range providers {
		mp := manByName[strings.ToLower(pr.Name)]
		delete(manByName, strings.ToLower(pr.Name))
		rows, err := g.rows(pr, mp)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.man == nil && r.overlay.Payload != "" && r.overlay.Payload != spec.Empty {
				usedLayouts[r.overlay.Payload] = true
			}
		}
		tables[i] = rows
	}
	for name := range manByName {
		return nil, fmt.Errorf("manifest provider %s has no table in spec.Providers", manByName[name].Name)
	}

	g.p("// Code generated by clrevents/internal/gen from the runtime's manifest (clrevents/internal/spec/ClrEtwAll.*.man)\n")
	g.p("// and clrevents/internal/spec; DO NOT EDIT.\n\n")
	g.p("package clrevents\n\nimport (\n\t\"strings\"\n\n\t\"github.com/clrdiag/clrdiag/internal/wire\"\n)\n\n")
	g.p("// ManifestSource says which copy of the runtime's manifest the tables come from.\n")
	src := m.Source
	if m.additions != "" {
		src += "; additions: " + m.additions
	}
	g.p("const ManifestSource = %q\n\n", src)

	g.p("// Provider names of the runtime's native (manifest-based) providers.\nconst (\n")
	for _, pr := range providers {
		g.p("\t%s = %q\n", pr.Const, pr.Name)
	}
	g.p(")\n\n")
	for i, pr := range providers {
		var consts []row
		for _, r := range tables[i] {
			if r.overlay != nil && r.overlay.Const != "" {
				consts = append(consts, r)
			}
		}
		if len(consts) == 0 {
			continue
		}
		comment(g, "", pr.Doc)
		g.p("const (\n")
		for _, r := range consts {
			g.p("\t%s uint16 = %d\n", r.overlay.Const, r.id)
		}
		g.p(")\n\n")
	}
	for _, p := range payloads {
		if p.Custom || p.Untyped {
			continue
		}
		if err := g.payload(p); err != nil {
			return nil, err
		}
	}
	for _, p := range payloads {
		if p.Custom {
			g.adapter(p.Name, p.PtrSize)
		}
		if usedLayouts[p.Name] {
			g.layout(p)
		}
	}
	g.p("var layoutEmpty = [][]Field{{}}\n\n")
	g.p("func decodeAnyEmpty([]byte, uint8, int) (any, error) { return struct{}{}, nil }\n\n")

	// The table rows are written to a second buffer while the field lists
	// they name go to the first.
	var tb bytes.Buffer
	for i, pr := range providers {
		fmt.Fprintf(&tb, "var %s = [...]entry{\n", pr.Table)
		for _, r := range tables[i] {
			if err := g.entry(&tb, pr, r); err != nil {
				return nil, err
			}
		}
		tb.WriteString("}\n\n")
	}
	g.b.Write(tb.Bytes())
	g.p("// providerTable returns the canonical name and the table of a provider\n// (matched case-insensitively, as in the runtime).\n")
	g.p("func providerTable(provider string) (string, []entry) {\n\tswitch {\n")
	for _, pr := range providers {
		g.p("\tcase strings.EqualFold(provider, %s):\n\t\treturn %s, %s[:]\n", pr.Const, pr.Const, pr.Table)
	}
	g.p("\t}\n\treturn \"\", nil\n}\n")
	out, err := format.Source(g.b.Bytes())
	if err != nil {
		return g.b.Bytes(), fmt.Errorf("generated code does not parse: %w", err)
	}
	return out, nil
}

// rows joins the manifest's events of a provider with the spec's rows.
func (g *gen) rows(pr spec.Provider, mp *mProvider) ([]row, error) {
	byID := map[uint16]*row{}
	if mp != nil {
		for _, e := range mp.Events {
			byID[e.ID] = &row{id: e.ID, man: e}
		}
	}
	for i := range pr.Events {
		e := &pr.Events[i]
		if i > 0 && e.ID <= pr.Events[i-1].ID {
			return nil, fmt.Errorf("%s: event %d (%s) after %d: rows must be sorted by id", pr.Name, e.ID, e.Name, pr.Events[i-1].ID)
		}
		if e.Payload != "" && e.Payload != spec.Empty {
			if _, ok := g.payloads[e.Payload]; !ok {
				return nil, fmt.Errorf("%s event %s: unknown payload %q", pr.Name, e.Name, e.Payload)
			}
		}
		r := byID[e.ID]
		if r == nil {
			if mp != nil && e.Keywords == "" {
				return nil, fmt.Errorf("%s event %d (%s) is not in the manifest: give its Keywords", pr.Name, e.ID, e.Name)
			}
			r = &row{id: e.ID}
			byID[e.ID] = r
		} else if e.Name != "" && e.Name != r.man.Name {
			return nil, fmt.Errorf("%s event %d: the spec names it %s, the manifest %s", pr.Name, e.ID, e.Name, r.man.Name)
		}
		r.overlay = e
		if len(e.Aligned) > 0 {
			if r.man == nil {
				return nil, fmt.Errorf("%s event %d (%s): Aligned needs the manifest's layout", pr.Name, e.ID, e.Name)
			}
			if err := markAligned(r.man, e.Aligned); err != nil {
				return nil, fmt.Errorf("%s event %d (%s): %w", pr.Name, e.ID, e.Name, err)
			}
		}
		if r.man != nil && e.Payload != "" && e.Payload != spec.Empty {
			if err := matchManifest(g.payloads[e.Payload], r.man); err != nil {
				return nil, fmt.Errorf("%s event %d (%s): %w", pr.Name, e.ID, r.man.Name, err)
			}
		}
	}
	out := make([]row, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b row) int { return int(a.id) - int(b.id) })
	return out, nil
}

// markAligned sets Aligned on the named struct fields of every layout of
// an event (copies: templates are shared).
func markAligned(e *mEvent, names []string) error {
	for _, name := range names {
		found := false
		for v, l := range e.Layouts {
			l = slices.Clone(l)
			for i := range l {
				if l[i].Name == name && l[i].Type == "Struct" {
					l[i].Aligned, found = true, true
				}
			}
			e.Layouts[v] = l
		}
		if !found {
			return fmt.Errorf("struct %s to align is not a struct field of the manifest's layouts", name)
		}
	}
	return nil
}

// wireType is the clrevents type name of a spec field.
func wireType(t spec.Type) string { return string(t) }

// matchManifest checks a typed payload against the manifest's layouts of
// an event: the same field names and wire types, version by version; a
// manifest version beyond the payload's last must extend that last one.
func matchManifest(p spec.Payload, e *mEvent) error {
	last := len(p.Versions) - 1
	for v, ml := range e.Layouts {
		if !e.HasV[v] {
			continue
		}
		pl := p.Versions[min(v, last)]
		if v <= last && len(pl) != len(ml) || len(pl) > len(ml) {
			return fmt.Errorf("payload %s v%d has %d fields, the manifest's template %d", p.Name, v, len(pl), len(ml))
		}
		for i, f := range pl {
			mf := ml[i]
			if f.Name != mf.Name || wireType(f.Type) != mf.Type || (f.Count != "" && f.Count != mf.Count) {
				return fmt.Errorf("payload %s v%d field %d is %s %s, the manifest's %s %s", p.Name, v, i, f.Name, f.Type, mf.Name, mf.Type)
			}
		}
	}
	return nil
}

// entry writes one table row.
func (g *gen) entry(tb *bytes.Buffer, pr spec.Provider, r row) error {
	o := r.overlay
	var name, kw string
	var aliases []string
	if r.man != nil {
		name = r.man.Name
		kw = fmt.Sprintf("%#x", r.man.Keywords)
		// Older versions' symbols that name the event differently
		// ("Contention" for ContentionStart) are accepted too.
		for _, sym := range r.man.Symbols {
			if a := versionSuffix.ReplaceAllString(sym, ""); a != name && !slices.Contains(aliases, a) {
				aliases = append(aliases, a)
			}
		}
	} else {
		name, kw = o.Name, o.Keywords
	}
	if o != nil {
		aliases = append(slices.Clone(o.Aliases), aliases...)
	}
	fmt.Fprintf(tb, "\t{id: %d, name: %q, keywords: %s", r.id, name, kw)
	if r.man != nil && (r.man.Task != "" || r.man.Opcode != "") {
		fmt.Fprintf(tb, ", task: %q, opcode: %q", r.man.Task, r.man.Opcode)
	}
	payload := ""
	if o != nil {
		payload = o.Payload
	}
	switch {
	case payload == spec.Empty:
		tb.WriteString(", layouts: layoutEmpty, decode: decodeAnyEmpty")
	case r.man != nil:
		var p *spec.Payload
		if payload != "" {
			pp := g.payloads[payload]
			p = &pp
		}
		tb.WriteString(", layouts: [][]Field{")
		for v, l := range r.man.Layouts {
			if v > 0 {
				tb.WriteString(", ")
			}
			if !r.man.HasV[v] {
				tb.WriteString("nil")
				continue
			}
			var hex map[string]bool
			if p != nil {
				hex = map[string]bool{}
				for _, f := range p.Versions[min(v, len(p.Versions)-1)] {
					hex[f.Name] = f.Hex
				}
			}
			tb.WriteString(g.fieldList(l, hex))
		}
		tb.WriteString("}")
		if p != nil && !p.Untyped {
			fmt.Fprintf(tb, ", decode: decodeAny%s", p.Name)
		}
	case payload != "":
		p := g.payloads[payload]
		fmt.Fprintf(tb, ", layouts: layout%s", p.Name)
		if !p.Untyped {
			fmt.Fprintf(tb, ", decode: decodeAny%s", p.Name)
		}
	}
	if len(aliases) > 0 {
		fmt.Fprintf(tb, ", aliases: %#v", aliases)
	}
	tb.WriteString("},\n")
	return nil
}

// fieldList returns the name of a package variable holding the field list
// (declared once for each distinct list). hex, when not nil, overrides the
// manifest's hexadecimal marks of the top-level fields by name (the typed
// payloads' choice: sizes print in decimal).
func (g *gen) fieldList(fs []mField, hex map[string]bool) string {
	lit := fieldsLiteral(fs, hex)
	if v, ok := g.layoutVars[lit]; ok {
		return v
	}
	v := fmt.Sprintf("fields%d", len(g.layoutVars))
	g.layoutVars[lit] = v
	g.p("var %s = []Field%s\n\n", v, lit)
	return v
}

func fieldsLiteral(fs []mField, hex map[string]bool) string {
	var b strings.Builder
	b.WriteString("{")
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{Name: %q, Type: Type%s", f.Name, f.Type)
		if f.Elem != "" {
			fmt.Fprintf(&b, ", Elem: Type%s", f.Elem)
		}
		if f.Count != "" {
			fmt.Fprintf(&b, ", Count: %q", f.Count)
		}
		if f.Len != "" {
			fmt.Fprintf(&b, ", Length: %q", f.Len)
		}
		if f.Sub != nil {
			fmt.Fprintf(&b, ", Fields: []Field%s", fieldsLiteral(f.Sub, nil))
		}
		if f.Aligned {
			b.WriteString(", Aligned: true")
		}
		h := f.Hex
		if hex != nil {
			h = hex[f.Name]
		}
		if h {
			b.WriteString(", Hex: true")
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}
