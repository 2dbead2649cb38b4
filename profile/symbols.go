package profile

import (
	"sort"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/clrevents"
)

// SymbolTable maps instruction addresses to managed methods, from the
// MethodLoadVerbose events of a session and the MethodDCStart/EndVerbose
// events of its rundown, and module ids to module names. Its size is bounded
// by the number of distinct methods and modules, never by the trace length.
// The zero value is an empty table ready to use.
type SymbolTable struct {
	methods []method
	byStart map[uint64]int // MethodStartAddress -> methods index
	modules map[uint64]string
	sorted  bool
	order   []int // methods indexes sorted by start
}

type method struct {
	start, end uint64
	moduleID   uint64
	name       string // Namespace.Type.Method
	signature  string
	// raw is the undecoded payload of a method added by AddMethodPayload;
	// its names are decoded by the first Lookup that hits it.
	raw     []byte
	version uint8
}

// AddMethod records a method's code range. A later event for the same start
// address replaces the earlier one (rundown repeats what the session saw).
func (t *SymbolTable) AddMethod(m *clrevents.MethodLoadVerbose) {
	if m.MethodSize == 0 {
		return
	}
	if t.byStart == nil {
		t.byStart = make(map[uint64]int)
	}
	rec := method{start: m.MethodStartAddress, end: m.MethodStartAddress + uint64(m.MethodSize),
		moduleID: m.ModuleID, name: m.FullName(), signature: m.MethodSignature}
	if i, ok := t.byStart[rec.start]; ok {
		t.methods[i] = rec
	} else {
		t.byStart[rec.start] = len(t.methods)
		t.methods = append(t.methods, rec)
	}
	t.sorted = false
}

// AddMethodPayload records a method from the raw payload of a
// MethodLoadVerbose or MethodDC*Verbose event. Only the fixed-size fields
// are decoded now; the names are decoded when an address first resolves to
// the method, so methods that no stack touches cost one copy of their
// payload and no string conversions.
func (t *SymbolTable) AddMethodPayload(payload []byte, version uint8) error {
	r, err := clrevents.DecodeMethodRange(payload, version)
	if err != nil {
		return err
	}
	if r.MethodSize == 0 {
		return nil
	}
	if t.byStart == nil {
		t.byStart = make(map[uint64]int)
	}
	rec := method{start: r.MethodStartAddress, end: r.MethodStartAddress + uint64(r.MethodSize),
		moduleID: r.ModuleID, raw: append([]byte(nil), payload...), version: version}
	if i, ok := t.byStart[rec.start]; ok {
		t.methods[i] = rec
	} else {
		t.byStart[rec.start] = len(t.methods)
		t.methods = append(t.methods, rec)
	}
	t.sorted = false
	return nil
}

// AddModule records a module's name from its IL path (or native path).
func (t *SymbolTable) AddModule(m *clrevents.ModuleLoad) {
	if t.modules == nil {
		t.modules = make(map[uint64]string)
	}
	path := m.ModuleILPath
	if path == "" {
		path = m.ModuleNativePath
	}
	t.modules[m.ModuleID] = moduleName(path)
}

// Methods is the number of distinct method code ranges known.
func (t *SymbolTable) Methods() int { return len(t.methods) }

// moduleName turns "/usr/share/dotnet/shared/.../System.Private.CoreLib.dll"
// or a Windows path into "System.Private.CoreLib".
func moduleName(path string) string {
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

// Symbol is what an address resolves to.
type Symbol struct {
	// Name is Namespace.Type.Method: the runtime reports the declaring
	// type's full name as the method namespace.
	Name      string
	Signature string
	Module    string
	// Start is the method's first code address.
	Start uint64
}

// Lookup resolves an address. Return addresses of callers may point just
// past the call at the very end of a method, so an address equal to a
// method's end also tries the byte before it.
func (t *SymbolTable) Lookup(addr uint64) (Symbol, bool) {
	i := t.find(addr)
	if i < 0 && addr > 0 {
		i = t.find(addr - 1)
	}
	if i < 0 {
		return Symbol{}, false
	}
	m := &t.methods[i]
	if m.raw != nil {
		full, err := clrevents.DecodeMethodLoadVerbose(m.raw, m.version)
		if err != nil {
			// The range decoded but the names did not: keep the frame
			// resolved to its method, named by its id.
			full.MethodName = "method_0x" + strconv.FormatUint(m.start, 16)
		}
		m.name, m.signature, m.raw = full.FullName(), full.MethodSignature, nil
	}
	return Symbol{Name: m.name, Signature: m.signature, Module: t.modules[m.moduleID], Start: m.start}, true
}

func (t *SymbolTable) find(addr uint64) int {
	if !t.sorted {
		t.order = t.order[:0]
		for i := range t.methods {
			t.order = append(t.order, i)
		}
		sort.Slice(t.order, func(a, b int) bool { return t.methods[t.order[a]].start < t.methods[t.order[b]].start })
		t.sorted = true
	}
	// The last range starting at or before addr; look a few ranges back in
	// case code ranges overlap (rare: code reuse after unload).
	j := sort.Search(len(t.order), func(k int) bool { return t.methods[t.order[k]].start > addr }) - 1
	for k := j; k >= 0 && k > j-4; k-- {
		m := &t.methods[t.order[k]]
		if addr >= m.start && addr < m.end {
			return t.order[k]
		}
	}
	return -1
}
