package profile

import (
	"encoding/binary"
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
	// chunks hold the payloads of the methods added by AddMethodPayload
	// whose names are not decoded yet, one after the other in chunks of at
	// most rawChunk bytes (filled, never grown or copied; a chunk per
	// allocation instead of one per method); rawLive and rawDead count the
	// payload bytes methods refer to and those they no longer do (replaced
	// or decoded).
	chunks           [][]byte
	rawLive, rawDead int
	// names are the decoded names of methods (method.names); freeNames
	// are the indexes+1 of those of replaced methods, for reuse.
	names     []methodNames
	freeNames []int32
	modules   map[uint64]string
	// starts are the methods' start addresses in order and byStart the
	// index of the method of each, made by the first lookup after an
	// addition (slots finds the methods).
	starts  []uint64
	byStart []int32
	sorted  bool
}

// method is a method's code range and where its names are; it holds no
// pointer, so that a table of 100 000 methods costs the collector nothing.
type method struct {
	start, end uint64
	moduleID   uint64
	// The undecoded payload is chunks[chunk][off:off+n] (n 0: none);
	// names-1 is the index of the decoded names in SymbolTable.names (0:
	// not decoded).
	chunk, off, n uint32
	names         int32
	version       uint8
}

// methodNames are a method's decoded names.
type methodNames struct {
	name      string // Namespace.Type.Method
	signature string
}

// rawChunk is the size of the chunks that hold method payloads (the
// first ones smaller, for a trace with few methods).
const rawChunk = 16 << 10

// AddMethod records a method's code range. A later event for the same start
// address replaces the earlier one (rundown repeats what the session saw).
func (t *SymbolTable) AddMethod(m *clrevents.MethodLoadVerbose) {
	if m.MethodSize == 0 {
		return
	}
	rec := method{start: m.MethodStartAddress, end: m.MethodStartAddress + uint64(m.MethodSize), moduleID: m.ModuleID}
	t.setNames(&rec, m.FullName(), m.MethodSignature)
	t.put(rec)
}

// AddMethodPayload records a method from the raw payload of a
// MethodLoadVerbose or MethodDC*Verbose event. Only the fixed-size fields
// are decoded now; the names are decoded when an address first resolves to
// the method, so methods that no stack touches cost a copy of their payload
// (into chunks shared by all) and no string conversions.
func (t *SymbolTable) AddMethodPayload(payload []byte, version uint8) error {
	if len(payload) < 36 {
		_, err := clrevents.DecodeMethodRange(payload, version) // names the field
		return err
	}
	// ModuleID at 8, MethodStartAddress at 16, MethodSize at 24 of the 36
	// fixed bytes (clrevents.DecodeMethodRange), read in place: the
	// decoder is a call per method event, and does not inline.
	le := binary.LittleEndian
	fixed := payload[:36]
	start, size := le.Uint64(fixed[16:]), le.Uint32(fixed[24:])
	if size == 0 {
		return nil
	}
	rec := method{start: start, end: start + uint64(size), moduleID: le.Uint64(fixed[8:]), version: version}
	if uint64(len(payload)) > math.MaxUint32 {
		// Beyond what a chunk offset can say (no nettrace event is this
		// large): decoded now.
		name, sig := decodeNames(payload, version, rec.start)
		t.setNames(&rec, name, sig)
		t.put(rec)
		return nil
	}
	t.reserve()
	j := t.slot(rec.start)
	if v := t.slots[j]; v != 0 {
		// Unload and rundown events repeat the load's payload: one of
		// the same size is written over the old one.
		if old := &t.methods[v-1]; int(old.n) == len(payload) {
			copy(t.payload(old), payload)
			rec.chunk, rec.off, rec.n = old.chunk, old.off, old.n
			*old = rec
			return nil
		}
	}
	if t.rawDead > 1<<16 && t.rawDead > t.rawLive {
		t.compactRaw()
	}
	t.store(&rec, payload)
	t.putAt(j, rec)
	return nil
}

// store copies a payload into the chunks for method m.
func (t *SymbolTable) store(m *method, payload []byte) {
	last := len(t.chunks) - 1
	if last < 0 || cap(t.chunks[last])-len(t.chunks[last]) < len(payload) {
		size := rawChunk
		if last < 4 {
			size >>= 4 - last // 1, 2, 4, 8 KB first
		}
		t.chunks = append(t.chunks, make([]byte, 0, max(size, len(payload))))
		last++
	}
	c := t.chunks[last]
	m.chunk, m.off, m.n = uint32(last), uint32(len(c)), uint32(len(payload))
	t.chunks[last] = append(c, payload...)
	t.rawLive += len(payload)
}

// setNames records decoded names for method m.
func (t *SymbolTable) setNames(m *method, name, signature string) {
	if k := len(t.freeNames) - 1; k >= 0 {
		m.names, t.freeNames = t.freeNames[k], t.freeNames[:k]
		t.names[m.names-1] = methodNames{name, signature}
		return
	}
	t.names = append(t.names, methodNames{name, signature})
	m.names = int32(len(t.names))
}

// dropPayload forgets method m's payload.
func (t *SymbolTable) dropPayload(m *method) {
	t.rawLive -= int(m.n)
	t.rawDead += int(m.n)
	m.n = 0
}

// put adds a method, or replaces the one with the same start.
func (t *SymbolTable) put(rec method) {
	t.reserve()
	t.putAt(t.slot(rec.start), rec)
}

// reserve makes room in slots for one more method.
func (t *SymbolTable) reserve() {
	if 2*(len(t.methods)+1) > len(t.slots) {
		t.slots = make([]int32, max(64, 2*len(t.slots)))
		for i := range t.methods {
			t.slots[t.slot(t.methods[i].start)] = int32(i + 1)
		}
	}
}

// putAt is put with the method's slot found (after reserve).
func (t *SymbolTable) putAt(j uint64, rec method) {
	if v := t.slots[j]; v != 0 {
		old := &t.methods[v-1]
		t.dropPayload(old)
		if old.names != 0 {
			t.names[old.names-1] = methodNames{}
			t.freeNames = append(t.freeNames, old.names)
		}
		*old = rec
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

// compactRaw copies the payloads methods refer to into new chunks,
// dropping the rest.
func (t *SymbolTable) compactRaw() {
	old := t.chunks
	t.chunks, t.rawLive, t.rawDead = nil, 0, 0
	for i := range t.methods {
		if m := &t.methods[i]; m.n > 0 {
			t.store(m, old[m.chunk][m.off:m.off+m.n])
		}
	}
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
	// The extensions compare without case (no lower-cased copy of the
	// path: every module event would allocate one).
	for _, ext := range [...]string{".ni.dll", ".ni.exe", ".dll", ".exe"} {
		if n := len(path) - len(ext); n >= 0 && strings.EqualFold(path[n:], ext) {
			return path[:n]
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
	if m.names == 0 {
		name, sig := decodeNames(t.payload(m), m.version, m.start)
		t.setNames(m, name, sig)
		t.dropPayload(m)
	}
	n := &t.names[m.names-1]
	return Symbol{Name: n.name, Signature: n.signature, Module: t.modules[m.moduleID], Start: m.start}, true
}

// index is the method an address resolves to as Lookup resolves it, -1 for
// none. The index stays valid until the next addition.
func (t *SymbolTable) index(addr uint64) int {
	t.sort()
	n := t.upTo(addr)
	if i := t.holding(addr, n); i >= 0 || addr == 0 {
		return i
	}
	// The starts at or before addr-1 are those at or before addr but one
	// equal to addr (they are distinct): no second search.
	if n > 0 && t.starts[n-1] == addr {
		n--
	}
	return t.holding(addr-1, n)
}

// payload is the undecoded payload of a method added by AddMethodPayload.
func (t *SymbolTable) payload(m *method) []byte { return t.chunks[m.chunk][m.off : m.off+m.n] }

// decodeNames decodes the names of a method payload whose range decoded.
func decodeNames(payload []byte, version uint8, start uint64) (name, signature string) {
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
	if m.names == 0 {
		out, n, err := clrevents.AppendMethodNames(dst, t.payload(m), m.version)
		if err == nil {
			return out, n
		}
		name, sig := decodeNames(t.payload(m), m.version, m.start)
		return append(append(dst, name...), sig...), len(name)
	}
	n := &t.names[m.names-1]
	return append(append(dst, n.name...), n.signature...), len(n.name)
}

// method returns method i's start address and module name.
func (t *SymbolTable) method(i int) (start uint64, module string) {
	m := &t.methods[i]
	return m.start, t.modules[m.moduleID]
}

// sort makes starts and byStart for the methods added so far.
func (t *SymbolTable) sort() {
	if t.sorted {
		return
	}
	t.starts = t.starts[:0]
	for i := range t.methods {
		t.starts = append(t.starts, t.methods[i].start)
	}
	slices.Sort(t.starts)
	// The starts are distinct: put replaces a method with the same
	// start (keeping its index).
	t.byStart = t.byStart[:0]
	for _, start := range t.starts {
		t.byStart = append(t.byStart, int32(t.lookupStart(start)))
	}
	t.sorted = true
}

// upTo returns the number of methods starting at or before addr (sort
// must have run).
func (t *SymbolTable) upTo(addr uint64) int {
	lo, hi := 0, len(t.starts)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if t.starts[h] <= addr {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// holding returns the method whose range holds addr, -1 for none, given
// the number n of methods starting at or before addr: the last of them
// whose range holds it, looking a few ranges back in case code ranges
// overlap (rare: code reuse after unload).
func (t *SymbolTable) holding(addr uint64, n int) int {
	for k := n - 1; k >= 0 && k > n-5; k-- {
		if i := int(t.byStart[k]); addr < t.methods[i].end {
			return i
		}
	}
	return -1
}
