package clrevents

import "encoding/binary"

// MethodLoadVerbose is the payload of MethodLoadVerbose (runtime 143),
// MethodUnloadVerbose (runtime 144) and the rundown's MethodDCStartVerbose
// (143) and MethodDCEndVerbose (144): where a method's native code lives.
// An instruction pointer in [MethodStartAddress, MethodStartAddress +
// MethodSize) belongs to the method.
type MethodLoadVerbose struct {
	MethodID           uint64
	ModuleID           uint64
	MethodStartAddress uint64
	MethodSize         uint32
	MethodToken        uint32
	// MethodFlags: 0x1 dynamic, 0x2 generic, 0x4 shared generic code,
	// 0x8 jitted, 0x10 JIT helper; bits 7-9 the optimization tier.
	MethodFlags uint32
	// MethodNamespace is the full name of the declaring type
	// ("System.Collections.Generic.List`1[System.Int32]").
	MethodNamespace string
	MethodName      string
	MethodSignature string
	ClrInstanceID   uint16
	ReJITID         uint64
}

// FullName is MethodNamespace.MethodName, or MethodName alone when the
// namespace is empty.
func (m *MethodLoadVerbose) FullName() string {
	if m.MethodNamespace == "" {
		return m.MethodName
	}
	return m.MethodNamespace + "." + m.MethodName
}

// DecodeMethodLoadVerbose decodes versions 0-2 of the verbose method load
// and rundown events. It allocates only the three strings.
func DecodeMethodLoadVerbose(payload []byte, version uint8) (MethodLoadVerbose, error) {
	var e MethodLoadVerbose
	err := DecodeMethodLoadVerboseInto(&e, payload, version)
	return e, err
}

// DecodeMethodLoadVerboseInto is DecodeMethodLoadVerbose filling a
// caller-owned value.
func DecodeMethodLoadVerboseInto(e *MethodLoadVerbose, payload []byte, version uint8) error {
	c := newCursor("MethodLoadVerbose", payload, version, 8)
	e.MethodID = c.u64("MethodID")
	e.ModuleID = c.u64("ModuleID")
	e.MethodStartAddress = c.u64("MethodStartAddress")
	e.MethodSize = c.u32("MethodSize")
	e.MethodToken = c.u32("MethodToken")
	e.MethodFlags = c.u32("MethodFlags")
	e.MethodNamespace = c.str("MethodNamespace")
	e.MethodName = c.str("MethodName")
	e.MethodSignature = c.str("MethodSignature")
	e.ClrInstanceID, e.ReJITID = 0, 0
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	if version >= 2 {
		e.ReJITID = c.u64("ReJITID")
	}
	return c.err
}

// MethodJittingStarted (runtime event 145): the JIT starts compiling a
// method.
type MethodJittingStarted struct {
	MethodID        uint64
	ModuleID        uint64
	MethodToken     uint32
	MethodILSize    uint32
	MethodNamespace string
	MethodName      string
	MethodSignature string
	ClrInstanceID   uint16
}

// DecodeMethodJittingStarted decodes event 145 versions 0-1.
func DecodeMethodJittingStarted(payload []byte, version uint8) (MethodJittingStarted, error) {
	c := newCursor("MethodJittingStarted", payload, version, 8)
	var e MethodJittingStarted
	e.MethodID = c.u64("MethodID")
	e.ModuleID = c.u64("ModuleID")
	e.MethodToken = c.u32("MethodToken")
	e.MethodILSize = c.u32("MethodILSize")
	e.MethodNamespace = c.str("MethodNamespace")
	e.MethodName = c.str("MethodName")
	e.MethodSignature = c.str("MethodSignature")
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	return e, c.err
}

// MethodILToNativeMap is the payload of MethodILToNativeMap (runtime 190)
// and the rundown's MethodDCStart/EndILToNativeMap (149/150): pairs of IL
// offset and native offset from the method's start.
type MethodILToNativeMap struct {
	MethodID uint64
	ReJITID  uint64
	// MethodExtent: 0 the main body, 1 a cold region.
	MethodExtent  uint8
	ILOffsets     []uint32
	NativeOffsets []uint32
	ClrInstanceID uint16
}

// DecodeMethodILToNativeMap decodes the IL-to-native map events. The two
// offset slices share one allocation, sized from the payload only after
// checking that the payload holds them.
func DecodeMethodILToNativeMap(payload []byte, version uint8) (MethodILToNativeMap, error) {
	c := newCursor("MethodILToNativeMap", payload, version, 8)
	var e MethodILToNativeMap
	e.MethodID = c.u64("MethodID")
	e.ReJITID = c.u64("ReJITID")
	e.MethodExtent = c.u8("MethodExtent")
	n := int(c.u16("CountOfMapEntries"))
	if c.err == nil && n*8 > len(payload)-c.off {
		c.fail("ILOffsets", ErrCountTooLarge)
	}
	if c.err != nil {
		return e, c.err
	}
	all := make([]uint32, 2*n)
	for i := range all {
		name := "ILOffsets"
		if i >= n {
			name = "NativeOffsets"
		}
		all[i] = c.u32(name)
	}
	e.ILOffsets, e.NativeOffsets = all[:n:n], all[n:]
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ModuleLoad is the payload of ModuleLoad/ModuleUnload (runtime 152/153)
// and the rundown's ModuleDCStart/ModuleDCEnd (153/154).
type ModuleLoad struct {
	ModuleID         uint64
	AssemblyID       uint64
	ModuleFlags      uint32
	ModuleILPath     string
	ModuleNativePath string
	ClrInstanceID    uint16
	// The PDB fields come with version 2.
	ManagedPdbSignature [16]byte
	ManagedPdbAge       uint32
	ManagedPdbBuildPath string
	NativePdbSignature  [16]byte
	NativePdbAge        uint32
	NativePdbBuildPath  string
}

// DecodeModuleLoad decodes versions 0-2 of the module events.
func DecodeModuleLoad(payload []byte, version uint8) (ModuleLoad, error) {
	c := newCursor("ModuleLoad", payload, version, 8)
	var e ModuleLoad
	e.ModuleID = c.u64("ModuleID")
	e.AssemblyID = c.u64("AssemblyID")
	e.ModuleFlags = c.u32("ModuleFlags")
	c.u32("Reserved1")
	e.ModuleILPath = c.str("ModuleILPath")
	e.ModuleNativePath = c.str("ModuleNativePath")
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	if version >= 2 {
		e.ManagedPdbSignature = c.guid("ManagedPdbSignature")
		e.ManagedPdbAge = c.u32("ManagedPdbAge")
		e.ManagedPdbBuildPath = c.str("ManagedPdbBuildPath")
		e.NativePdbSignature = c.guid("NativePdbSignature")
		e.NativePdbAge = c.u32("NativePdbAge")
		e.NativePdbBuildPath = c.str("NativePdbBuildPath")
	}
	return e, c.err
}

// AssemblyLoad is the payload of AssemblyLoad/AssemblyUnload (runtime
// 154/155) and the rundown's AssemblyDCStart/AssemblyDCEnd (155/156).
type AssemblyLoad struct {
	AssemblyID                 uint64
	AppDomainID                uint64
	BindingID                  uint64
	AssemblyFlags              uint32
	FullyQualifiedAssemblyName string
	ClrInstanceID              uint16
}

// DecodeAssemblyLoad decodes versions 0-1 of the assembly events.
func DecodeAssemblyLoad(payload []byte, version uint8) (AssemblyLoad, error) {
	c := newCursor("AssemblyLoad", payload, version, 8)
	var e AssemblyLoad
	e.AssemblyID = c.u64("AssemblyID")
	e.AppDomainID = c.u64("AppDomainID")
	if version >= 1 {
		e.BindingID = c.u64("BindingID")
	}
	e.AssemblyFlags = c.u32("AssemblyFlags")
	e.FullyQualifiedAssemblyName = c.str("FullyQualifiedAssemblyName")
	if version >= 1 {
		e.ClrInstanceID = c.u16("ClrInstanceID")
	}
	return e, c.err
}

// RuntimeInformation is the payload of RuntimeInformationStart (runtime
// 187) and RuntimeInformationDCStart (rundown 187): the runtime's version,
// command line and path, the best in-trace source for "which .NET".
type RuntimeInformation struct {
	ClrInstanceID   uint16
	Sku             uint16
	BclMajorVersion uint16
	BclMinorVersion uint16
	BclBuildNumber  uint16
	BclQfeNumber    uint16
	VMMajorVersion  uint16
	VMMinorVersion  uint16
	VMBuildNumber   uint16
	VMQfeNumber     uint16
	StartupFlags    uint32
	StartupMode     uint8
	CommandLine     string
	ComObjectGUID   [16]byte
	RuntimeDllPath  string
}

// VMVersion formats the runtime build version, e.g. "4.700.19.56402".
func (r *RuntimeInformation) VMVersion() string {
	return itoa(uint64(r.VMMajorVersion)) + "." + itoa(uint64(r.VMMinorVersion)) + "." +
		itoa(uint64(r.VMBuildNumber)) + "." + itoa(uint64(r.VMQfeNumber))
}

// DecodeRuntimeInformation decodes event 187 of either provider.
func DecodeRuntimeInformation(payload []byte, version uint8) (RuntimeInformation, error) {
	c := newCursor("RuntimeInformation", payload, version, 8)
	var e RuntimeInformation
	e.ClrInstanceID = c.u16("ClrInstanceID")
	e.Sku = c.u16("Sku")
	e.BclMajorVersion = c.u16("BclMajorVersion")
	e.BclMinorVersion = c.u16("BclMinorVersion")
	e.BclBuildNumber = c.u16("BclBuildNumber")
	e.BclQfeNumber = c.u16("BclQfeNumber")
	e.VMMajorVersion = c.u16("VMMajorVersion")
	e.VMMinorVersion = c.u16("VMMinorVersion")
	e.VMBuildNumber = c.u16("VMBuildNumber")
	e.VMQfeNumber = c.u16("VMQfeNumber")
	e.StartupFlags = c.u32("StartupFlags")
	e.StartupMode = c.u8("StartupMode")
	e.CommandLine = c.str("CommandLine")
	e.ComObjectGUID = c.guid("ComObjectGuid")
	e.RuntimeDllPath = c.str("RuntimeDllPath")
	return e, c.err
}

// RundownMarker is the payload of the rundown's DCStartInit/DCEndInit and
// DCStartComplete/DCEndComplete (145-148): empty in version 0,
// ClrInstanceID from version 1. DCEndComplete marks the end of the rundown.
type RundownMarker struct {
	ClrInstanceID uint16
}

// DecodeRundownMarker decodes rundown events 145-148.
func DecodeRundownMarker(payload []byte, version uint8) (RundownMarker, error) {
	p, err := DecodeGCPhase(payload, version)
	return RundownMarker(p), err
}

// MethodRange is the fixed-size start of a MethodLoadVerbose payload: what
// a symboliser needs to index a method before it needs its name.
type MethodRange struct {
	MethodID           uint64
	ModuleID           uint64
	MethodStartAddress uint64
	MethodSize         uint32
	MethodToken        uint32
	MethodFlags        uint32
}

// DecodeMethodRange decodes the fixed-size fields of any version of the
// verbose method events without allocating; DecodeMethodLoadVerbose on the
// same payload gives the names later.
func DecodeMethodRange(payload []byte, version uint8) (MethodRange, error) {
	if len(payload) >= 36 { // fast path: every field is there
		le := binary.LittleEndian
		return MethodRange{MethodID: le.Uint64(payload), ModuleID: le.Uint64(payload[8:]),
			MethodStartAddress: le.Uint64(payload[16:]), MethodSize: le.Uint32(payload[24:]),
			MethodToken: le.Uint32(payload[28:]), MethodFlags: le.Uint32(payload[32:])}, nil
	}
	c := newCursor("MethodLoadVerbose", payload, version, 8)
	var e MethodRange
	e.MethodID = c.u64("MethodID")
	e.ModuleID = c.u64("ModuleID")
	e.MethodStartAddress = c.u64("MethodStartAddress")
	e.MethodSize = c.u32("MethodSize")
	e.MethodToken = c.u32("MethodToken")
	e.MethodFlags = c.u32("MethodFlags")
	return e, c.err
}
