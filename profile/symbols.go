package profile

import (
	"math"
	"slices"
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
	// slots finds a method by its start address: methods index+1 per slot
	// (0: empty), at most half full.
	slots []int32
	// raw holds the payloads of the methods added by AddMethodPayload
	// whose names are not decoded yet, one after the other (one allocation
	// per doubling instead of one per method); rawDead counts the bytes
	// that no method refers to any more (replaced or decoded).
	raw     []byte
	rawDead int
	modules map[uint64]string
	// starts are the methods' start addresses in order, made by the first
	// lookup after an addition (slots finds the methods).
	starts []uint64
	sorted bool
}

type method struct {
	start, end uint64
	moduleID   uint64
	name       string // Namespace.Type.Method
	signature  string
	// raw[rawOff:rawOff+rawLen] of the table is the undecoded payload of
	// a method added by AddMethodPayload (rawLen 0 once its names are
	// decoded).
	rawOff, rawLen uint32
	version        uint8
}

// AddMethod records a method's code range. A later event for the same start
// address replaces the earlier one (rundown repeats what the session saw).
func (t *SymbolTable) AddMethod(m *clrevents.MethodLoadVerbose) {
	if m.MethodSize == 0 {
		return
	}
	t.put(method{start: m.MethodStartAddress, end: m.MethodStartAddress + uint64(m.MethodSize),
		moduleID: m.ModuleID, name: m.FullName(), signature: m.MethodSignature})
}

// AddMethodPayload records a method from the raw payload of a
// MethodLoadVerbose or MethodDC*Verbose event. Only the fixed-size fields
// are decoded now; the names are decoded when an address first resolves to
// the method, so methods that no stack touches cost a copy of their payload
// (into one buffer shared by all) and no string conversions.
func (t *SymbolTable) AddMethodPayload(payload []byte, version uint8) error {
	r, err := clrevents.DecodeMethodRange(payload, version)
	if err != nil {
		return err
	}
	if r.MethodSize == 0 {
		return nil
	}
	rec := method{start: r.MethodStartAddress, end: r.MethodStartAddress + uint64(r.MethodSize), moduleID: r.ModuleID}
	if uint64(len(t.raw))+uint64(len(payload)) > math.MaxUint32 {
		// Beyond what the offsets can say (about 10 million methods):
		// decoded now.
		rec.name, rec.signature = methodNames(payload, version, rec.start)
		t.put(rec)
		return nil
	}
	if i := t.lookupStart(rec.start); i >= 0 {
		// Unload and rundown events repeat the load's payload: one of
		// the same size is written over the old one.
		if old := &t.methods[i]; int(old.rawLen) == len(payload) {
			copy(t.raw[old.rawOff:], payload)
			rec.rawOff, rec.rawLen, rec.version = old.rawOff, old.rawLen, version
			*old = rec
			return nil
		}
	}
	if t.rawDead > 1<<16 && t.rawDead > len(t.raw)/2 {
		t.compactRaw()
	}
	rec.rawOff, rec.rawLen, rec.version = uint32(len(t.raw)), uint32(len(payload)), version
	t.raw = append(t.raw, payload...)
	t.put(rec)
	return nil
}

// put adds a method, or replaces the one with the same start.
func (t *SymbolTable) put(rec method) {
	if 2*(len(t.methods)+1) > len(t.slots) {
		t.slots = make([]int32, max(64, 2*len(t.slots)))
		for i := range t.methods {
			t.slots[t.slot(t.methods[i].start)] = int32(i + 1)
		}
	}
	j := t.slot(rec.start)
	if v := t.slots[j]; v != 0 {
		t.rawDead += int(t.methods[v-1].rawLen)
		t.methods[v-1] = rec
		return
	}
	t.methods = append(t.methods, rec)
	t.slots[j] = int32(len(t.methods))
	t.sorted = false // a new start: the ranges change
}

// lookupStart returns the method starting at start, -1 for none.
func (t *SymbolTable) lookupStart(start uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	return int(t.slots[t.slot(start)]) - 1
}

// slot returns the slot of the method starting at start: the one holding
// it, or the empty one where it would go.
func (t *SymbolTable) slot(start uint64) uint64 {
	mask := uint64(len(t.slots) - 1)
	for j := hashAddr(start) >> 32 & mask; ; j = (j + 1) & mask {
		if v := t.slots[j]; v == 0 || t.methods[v-1].start == start {
			return j
		}
	}
}

// compactRaw drops the payload bytes no method refers to.
func (t *SymbolTable) compactRaw() {
	raw := make([]byte, 0, len(t.raw)-t.rawDead)
	for i := range t.methods {
		m := &t.methods[i]
		if m.rawLen > 0 {
			off := len(raw)
			raw = append(raw, t.payload(m)...)
			m.rawOff = uint32(off)
		}
	}
	t.raw, t.rawDead = raw, 0
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
	i := t.index(addr)
	if i < 0 {
		return Symbol{}, false
	}
	m := &t.methods[i]
	if m.rawLen > 0 {
		m.name, m.signature = methodNames(t.payload(m), m.version, m.start)
		t.rawDead += int(m.rawLen)
		m.rawLen = 0
	}
	return Symbol{Name: m.name, Signature: m.signature, Module: t.modules[m.moduleID], Start: m.start}, true
}

// index is the method an address resolves to as Lookup resolves it, -1 for
// none. The index stays valid until the next addition.
func (t *SymbolTable) index(addr uint64) int {
	i := t.find(addr)
	if i < 0 && addr > 0 {
		i = t.find(addr - 1)
	}
	return i
}

// payload is the undecoded payload of a method added by AddMethodPayload.
func (t *SymbolTable) payload(m *method) []byte { return t.raw[m.rawOff : m.rawOff+m.rawLen] }

// methodNames decodes the names of a method payload whose range decoded.
func methodNames(payload []byte, version uint8, start uint64) (name, signature string) {
	full, err := clrevents.DecodeMethodLoadVerbose(payload, version)
	if err != nil {
		// The range decoded but the names did not: keep the frame
		// resolved to its method, named by its id.
		full.MethodName = "method_0x" + strconv.FormatUint(start, 16)
	}
	return full.FullName(), full.MethodSignature
}

// appendNames appends method i's name and then its signature (what
// Lookup's Symbol says) to dst and returns the length of the name, without
// a string per method.
func (t *SymbolTable) appendNames(dst []byte, i int) ([]byte, int) {
	m := &t.methods[i]
	if m.rawLen > 0 {
		out, n, err := clrevents.AppendMethodNames(dst, t.payload(m), m.version)
		if err == nil {
			return out, n
		}
		name, sig := methodNames(t.payload(m), m.version, m.start)
		return append(append(dst, name...), sig...), len(name)
	}
	return append(append(dst, m.name...), m.signature...), len(m.name)
}

// method returns method i's start address and module name.
func (t *SymbolTable) method(i int) (start uint64, module string) {
	m := &t.methods[i]
	return m.start, t.modules[m.moduleID]
}

// find returns the method whose range holds addr, -1 for none.
func (t *SymbolTable) find(addr uint64) int {
	if !t.sorted {
		t.starts = t.starts[:0]
		for i := range t.methods {
			t.starts = append(t.starts, t.methods[i].start)
		}
		slices.Sort(t.starts)
		t.sorted = true
	}
	// The last range starting at or before addr; look a few ranges back in
	// case code ranges overlap (rare: code reuse after unload).
	lo, hi := 0, len(t.starts)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if t.starts[h] <= addr {
			lo = h + 1
		} else {
			hi = h
		}
	}
	for k := lo - 1; k >= 0 && k > lo-5; k-- {
		// The starts are distinct: put replaces a method with the same
		// start.
		if i := t.lookupStart(t.starts[k]); addr < t.methods[i].end {
			return i
		}
	}
	return -1
}
