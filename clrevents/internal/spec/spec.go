// Package spec is what clrevents/internal/gen reads to generate
// clrevents/events_gen.go: the runtime's ETW manifest (a trimmed copy, see
// Manifest), from which every event's name, keywords, task, opcode and
// field layout per version come, and the table of what the manifest does
// not say: exported id constants, other names, C padding of struct arrays,
// events newer than the copy, and the typed payloads (a Go struct and
// Decode<Name> each), which the generator checks field by field against the
// manifest.
//
// A payload whose shape the generator cannot express can be declared Custom
// with a hand-written Decode<Name> in package clrevents; an Untyped payload
// gets no struct, only its layout (for events the manifest copy lacks).
package spec

// Type is the wire type of a payload field; the names match the
// clrevents.FieldType constants without their "Type" prefix.
type Type string

// Field types.
const (
	Uint8       Type = "Uint8"
	Uint16      Type = "Uint16"
	Uint32      Type = "Uint32"
	Uint64      Type = "Uint64"
	Float64     Type = "Float64"
	Pointer     Type = "Pointer" // 4 or 8 bytes, as the trace says
	String      Type = "String"  // UTF-16LE, NUL-terminated
	GUID        Type = "GUID"
	Uint32Array Type = "Uint32Array" // length in the earlier field named by Count
)

// Field is one field of a payload version.
type Field struct {
	Name string
	Type Type
	// Count names the earlier field holding the length of a Uint32Array.
	Count string
	// Go is the struct field that receives the value: "" for Name, "-" for
	// none (reserved fields, array counts), "X[i]" for element i of an
	// array field X.
	Go string
	// GoType is a named type for the struct field (GCReason).
	GoType string
	// Hex marks addresses, ids, tokens and flags, shown in hexadecimal.
	Hex bool
	// Doc documents the struct field (the first non-empty Doc of the field
	// in any version is used).
	Doc string
}

// Payload is the layout of an event's payload in every version, and the
// typed struct it decodes to. Newer versions normally append fields.
type Payload struct {
	// Name is the Go type (and Decode<Name>) in package clrevents.
	Name string
	Doc  string
	// Versions[v] is the layout of version v; versions above the last
	// decode as the last.
	Versions [][]Field
	// Custom: struct and decoder are hand-written; PtrSize says whether the
	// decoder takes the pointer size.
	Custom, PtrSize bool
	// Untyped: no struct or decoder, only the layout.
	Untyped bool
}

// Empty is the Payload of events that carry no payload in any version;
// clrevents.Decode gives struct{}{} for them.
const Empty = "struct{}"

// Event is a row of a provider's table: what the generator adds to the
// manifest's event of that id (Name must be the manifest's), or an event
// the manifest copy lacks.
type Event struct {
	ID   uint16
	Name string
	// Keywords is a Go expression of clrevents Keyword constants, for an
	// event the manifest copy lacks (the manifest gives the others').
	Keywords string
	// Const is the exported id constant of package clrevents, if any.
	Const string
	// Payload names the payload in Payloads ("" when the layout is not in
	// the table, Empty for none).
	Payload string
	// Aliases are other names people use for the event, such as
	// TraceEvent's "Task/Opcode" names; filters accept them.
	Aliases []string
	// Aligned names the struct fields of the manifest's templates for this
	// event whose elements the runtime sends as a C struct, with the
	// compiler's padding (which the manifest cannot express).
	Aligned []string
}

// Provider is a native provider and its events, sorted by id.
type Provider struct {
	Name string
	// Const is the exported constant holding the name; Table the
	// unexported table variable generated for it.
	Const, Table string
	Doc          string
	Events       []Event
}

func f(name string, t Type) Field   { return Field{Name: name, Type: t} }
func hex(name string, t Type) Field { return Field{Name: name, Type: t, Hex: true} }
func doc(fd Field, d string) Field  { fd.Doc = d; return fd }

// versions builds a layout list in which each version appends fields to the
// previous one.
func versions(base []Field, appended ...[]Field) [][]Field {
	out := [][]Field{base}
	cur := base
	for _, a := range appended {
		cur = append(cur[:len(cur):len(cur)], a...)
		out = append(out, cur)
	}
	return out
}

func cat(ls ...[]Field) []Field {
	var out []Field
	for _, l := range ls {
		out = append(out, l...)
	}
	return out
}

var (
	clr  = []Field{f("ClrInstanceID", Uint16)}
	none = []Field{}

	gcStartV1 = []Field{
		doc(f("Count", Uint32), "Count is the collection's sequence number in the process."),
		doc(f("Depth", Uint32), "Depth is the generation collected (0, 1 or 2)."),
		doc(Field{Name: "Reason", Type: Uint32, GoType: "GCReason"}, "Reason is why the collection happened; see GCReason."),
		doc(f("Type", Uint32), "Type is 0 blocking outside background GC, 1 background, 2 blocking\nduring background GC."),
		f("ClrInstanceID", Uint16)}

	gcHeapStatsV0 = []Field{
		doc(Field{Name: "GenerationSize0", Type: Uint64, Go: "GenerationSize[0]"},
			"GenerationSize and TotalPromotedSize are indexed by generation: 0,\n1, 2, 3 (large object heap) and 4 (pinned object heap, version 2)."),
		{Name: "TotalPromotedSize0", Type: Uint64, Go: "TotalPromotedSize[0]"},
		{Name: "GenerationSize1", Type: Uint64, Go: "GenerationSize[1]"},
		{Name: "TotalPromotedSize1", Type: Uint64, Go: "TotalPromotedSize[1]"},
		{Name: "GenerationSize2", Type: Uint64, Go: "GenerationSize[2]"},
		{Name: "TotalPromotedSize2", Type: Uint64, Go: "TotalPromotedSize[2]"},
		{Name: "GenerationSize3", Type: Uint64, Go: "GenerationSize[3]"},
		{Name: "TotalPromotedSize3", Type: Uint64, Go: "TotalPromotedSize[3]"},
		f("FinalizationPromotedSize", Uint64), f("FinalizationPromotedCount", Uint64),
		f("PinnedObjectCount", Uint32), f("SinkBlockCount", Uint32), f("GCHandleCount", Uint32)}

	contention = []Field{doc(Field{Name: "ContentionFlags", Type: Uint8, Go: "Flags"}, "Flags: 0 managed lock, 1 native."),
		f("ClrInstanceID", Uint16)}

	exceptionClause = []Field{hex("EntryEIP", Uint64), hex("MethodID", Uint64), f("MethodName", String), f("ClrInstanceID", Uint16)}

	methodVerboseV0 = []Field{hex("MethodID", Uint64), hex("ModuleID", Uint64), hex("MethodStartAddress", Uint64),
		f("MethodSize", Uint32), hex("MethodToken", Uint32),
		doc(hex("MethodFlags", Uint32), "MethodFlags: 0x1 dynamic, 0x2 generic, 0x4 shared generic code,\n0x8 jitted, 0x10 JIT helper; bits 7-9 the optimization tier."),
		doc(f("MethodNamespace", String), "MethodNamespace is the full name of the declaring type\n(\"System.Collections.Generic.List`1[System.Int32]\")."),
		f("MethodName", String), f("MethodSignature", String)}

	moduleLoadV0 = []Field{hex("ModuleID", Uint64), hex("AssemblyID", Uint64), hex("ModuleFlags", Uint32),
		{Name: "Reserved1", Type: Uint32, Go: "-"}, f("ModuleILPath", String), f("ModuleNativePath", String)}
	moduleLoadV2 = []Field{doc(f("ManagedPdbSignature", GUID), "The PDB fields come with version 2."),
		f("ManagedPdbAge", Uint32), f("ManagedPdbBuildPath", String),
		f("NativePdbSignature", GUID), f("NativePdbAge", Uint32), f("NativePdbBuildPath", String)}

	workerThread = []Field{f("ActiveWorkerThreadCount", Uint32), f("RetiredWorkerThreadCount", Uint32), f("ClrInstanceID", Uint16)}
)

// Payloads are the payload layouts, by Go type name.
var Payloads = []Payload{
	{Name: "GCStart", Doc: "GCStart (runtime event 1) begins a garbage collection.",
		Versions: [][]Field{{gcStartV1[0], gcStartV1[2]}, gcStartV1, cat(gcStartV1, []Field{f("ClientSequenceNumber", Uint64)})}},
	{Name: "GCEnd", Doc: "GCEnd (runtime event 2) ends a garbage collection.",
		Versions: [][]Field{{f("Count", Uint32), f("Depth", Uint16)}, {f("Count", Uint32), f("Depth", Uint32), f("ClrInstanceID", Uint16)}}},
	{Name: "GCPhase", Doc: "GCPhase is the payload of GCRestartEEBegin (7), GCRestartEEEnd (3),\n" +
		"GCSuspendEEEnd (8) and the other events that carry only ClrInstanceID\n(version 1 and later; version 0 is empty).",
		Versions: versions(none, clr)},
	{Name: "GCHeapStats", Doc: "GCHeapStats (runtime event 4) is the heap after a collection.",
		Versions: versions(gcHeapStatsV0, clr, []Field{
			{Name: "GenerationSize4", Type: Uint64, Go: "GenerationSize[4]"},
			{Name: "TotalPromotedSize4", Type: Uint64, Go: "TotalPromotedSize[4]"}})},
	{Name: "GCCreateSegment", Doc: "GCCreateSegment (runtime event 5): the GC reserved a heap segment.",
		Versions: versions([]Field{hex("Address", Uint64), f("Size", Uint64),
			doc(f("Type", Uint32), "Type: 0 small object heap, 1 large object heap, 2 read-only, 3 pinned.")}, clr)},
	{Name: "GCFreeSegment", Doc: "GCFreeSegment (runtime event 6): the GC released a heap segment.",
		Versions: versions([]Field{hex("Address", Uint64)}, clr)},
	{Name: "GCSuspendEEBegin", Doc: "GCSuspendEEBegin (runtime event 9) starts suspending managed threads. The\n" +
		"pause of a collection runs from here to the next GCRestartEEEnd.",
		Versions: [][]Field{{f("Reason", Uint16)}, {
			doc(f("Reason", Uint32), "Reason: 0 Other, 1 GC, 2 AppDomain shutdown, 3 code pitching,\n4 shutdown, 5 debugger, 6 GC prep, 7 debugger sweep."),
			f("Count", Uint32), f("ClrInstanceID", Uint16)}}},
	{Name: "GCAllocationTick", Doc: "GCAllocationTick (runtime event 10) is raised about every 100 KiB of\n" +
		"allocation; it names the type of the object that crossed the threshold.",
		Versions: versions(
			[]Field{doc(f("AllocationAmount", Uint32), "AllocationAmount is the bytes allocated since the previous tick\n(AllocationAmount64 from version 2 on, which does not wrap)."),
				doc(f("AllocationKind", Uint32), "AllocationKind: 0 small object heap, 1 large, 2 pinned.")},
			clr,
			[]Field{{Name: "AllocationAmount64", Type: Uint64, Go: "AllocationAmount"}, hex("TypeID", Pointer), f("TypeName", String), f("HeapIndex", Uint32)},
			[]Field{hex("Address", Pointer)},
			[]Field{f("ObjectSize", Uint64)})},
	{Name: "GCFinalizersEnd", Doc: "GCFinalizersEnd (runtime event 13): the finalizer thread ran Count\nfinalizers.",
		Versions: versions([]Field{f("Count", Uint32)}, clr)},
	{Name: "GCTriggered", Doc: "GCTriggered (runtime event 35) says why a collection is about to start.",
		Versions: [][]Field{{{Name: "Reason", Type: Uint32, GoType: "GCReason"}, f("ClrInstanceID", Uint16)}}},
	{Name: "ThreadPoolWorkerThread", Doc: "ThreadPoolWorkerThread is the payload of ThreadPoolWorkerThreadStart (50),\n" +
		"Stop (51), RetirementStart/Stop (52/53) and Wait (57).",
		Versions: [][]Field{workerThread}},
	{Name: "ThreadPoolAdjustmentSample", Doc: "ThreadPoolAdjustmentSample (runtime event 54) is a throughput sample of\n" +
		"the thread pool's hill-climbing algorithm.",
		Versions: [][]Field{{f("Throughput", Float64), f("ClrInstanceID", Uint16)}}},
	{Name: "ThreadPoolAdjustment", Doc: "ThreadPoolAdjustment (runtime event 55) is a change of the worker count.",
		Versions: [][]Field{{f("AverageThroughput", Float64), f("NewWorkerThreadCount", Uint32),
			doc(f("Reason", Uint32), "Reason: 0 warmup, 1 initializing, 2 random move, 3 climbing move,\n4 change point, 5 stabilizing, 6 starvation, 7 thread timed out."),
			f("ClrInstanceID", Uint16)}}},
	{Name: "ThreadPoolAdjustmentStats", Doc: "ThreadPoolAdjustmentStats (runtime event 56) is the state of the\n" +
		"hill-climbing algorithm at an adjustment.",
		Versions: [][]Field{{f("Duration", Float64), f("Throughput", Float64), f("ThreadWave", Float64),
			f("ThroughputWave", Float64), f("ThroughputErrorEstimate", Float64),
			f("AverageThroughputErrorEstimate", Float64), f("ThroughputRatio", Float64),
			f("Confidence", Float64), f("NewControlSetting", Float64),
			f("NewThreadWaveMagnitude", Uint16), f("ClrInstanceID", Uint16)}}},
	{Name: "ThreadPoolWorkingThreadCount", Doc: "ThreadPoolWorkingThreadCount (runtime event 60) is the number of\nworker threads running work items.",
		Versions: [][]Field{{f("Count", Uint32), f("ClrInstanceID", Uint16)}}},
	{Name: "ThreadPoolWorkItem", Doc: "ThreadPoolWorkItem is the payload of ThreadPoolEnqueue (61) and\n" +
		"ThreadPoolDequeue (62): the work item's identity.",
		Versions: [][]Field{{hex("WorkID", Pointer), f("ClrInstanceID", Uint16)}}},
	{Name: "ExceptionThrown", Doc: "ExceptionThrown (runtime event 80) is raised when managed code throws.\nThe event's stack is the throw site.",
		Versions: [][]Field{none, {f("ExceptionType", String), f("ExceptionMessage", String),
			doc(hex("ExceptionEIP", Pointer), "ExceptionEIP is the faulting instruction address."),
			hex("ExceptionHRESULT", Uint32),
			doc(hex("ExceptionFlags", Uint16), "ExceptionFlags: 0x1 has inner exception, 0x2 nested, 0x4 rethrown,\n0x8 corrupted state, 0x10 CLS compliant."),
			f("ClrInstanceID", Uint16)}}},
	{Name: "ExceptionClause", Doc: "ExceptionClause is the payload of ExceptionCatchStart (250),\n" +
		"ExceptionFinallyStart (252) and ExceptionFilterStart (254): the handler\n" +
		"that runs while an exception unwinds. The matching Stop events (251, 253,\n255) have no payload.",
		Versions: [][]Field{exceptionClause}},
	{Name: "ContentionStart", Doc: "ContentionStart (runtime event 81): a thread starts waiting for a lock.",
		Versions: [][]Field{none, contention, cat(contention, []Field{
			doc(hex("LockID", Pointer), "LockID, AssociatedObjectID and LockOwnerThreadID come with version\n2 (.NET 8); version 0 is empty."),
			hex("AssociatedObjectID", Pointer), f("LockOwnerThreadID", Uint64)})}},
	{Name: "ContentionStop", Doc: "ContentionStop (runtime event 91): the waiting thread got the lock.",
		Versions: versions(contention, []Field{doc(f("DurationNs", Float64), "DurationNs is the wait (version 1; .NET Core 3.1.2 already sends it);\n0 in version 0.")})},
	{Name: "MethodLoadVerbose", Doc: "MethodLoadVerbose is the payload of MethodLoadVerbose (runtime 143),\n" +
		"MethodUnloadVerbose (runtime 144) and the rundown's MethodDCStartVerbose\n" +
		"(143) and MethodDCEndVerbose (144): where a method's native code lives.\n" +
		"An instruction pointer in [MethodStartAddress, MethodStartAddress +\nMethodSize) belongs to the method.",
		Versions: versions(methodVerboseV0, clr, []Field{f("ReJITID", Uint64)})},
	{Name: "MethodJittingStarted", Doc: "MethodJittingStarted (runtime event 145): the JIT starts compiling a\nmethod.",
		Versions: versions([]Field{hex("MethodID", Uint64), hex("ModuleID", Uint64), hex("MethodToken", Uint32),
			f("MethodILSize", Uint32), f("MethodNamespace", String), f("MethodName", String), f("MethodSignature", String)}, clr)},
	{Name: "MethodILToNativeMap", Doc: "MethodILToNativeMap is the payload of MethodILToNativeMap (runtime 190)\n" +
		"and the rundown's MethodDCStart/EndILToNativeMap (149/150): pairs of IL\n" +
		"offset and native offset from the method's start. The two offset slices\nshare one allocation.",
		Versions: versions([]Field{hex("MethodID", Uint64), f("ReJITID", Uint64),
			doc(f("MethodExtent", Uint8), "MethodExtent: 0 the main body, 1 a cold region."),
			{Name: "CountOfMapEntries", Type: Uint16, Go: "-"},
			{Name: "ILOffsets", Type: Uint32Array, Count: "CountOfMapEntries"},
			{Name: "NativeOffsets", Type: Uint32Array, Count: "CountOfMapEntries"},
			f("ClrInstanceID", Uint16)},
			[]Field{doc(f("ILVersionID", Uint64), "ILVersionID comes with version 1 (.NET 8 sends it).")})},
	{Name: "ModuleLoad", Doc: "ModuleLoad is the payload of ModuleLoad/ModuleUnload (runtime 152/153)\n" +
		"and the rundown's ModuleDCStart/ModuleDCEnd (153/154).",
		Versions: versions(moduleLoadV0, clr, moduleLoadV2)},
	{Name: "AssemblyLoad", Doc: "AssemblyLoad is the payload of AssemblyLoad/AssemblyUnload (runtime\n" +
		"154/155) and the rundown's AssemblyDCStart/AssemblyDCEnd (155/156).",
		Versions: [][]Field{
			{hex("AssemblyID", Uint64), hex("AppDomainID", Uint64), hex("AssemblyFlags", Uint32), f("FullyQualifiedAssemblyName", String)},
			{hex("AssemblyID", Uint64), hex("AppDomainID", Uint64), hex("BindingID", Uint64),
				hex("AssemblyFlags", Uint32), f("FullyQualifiedAssemblyName", String), f("ClrInstanceID", Uint16)}}},
	{Name: "RuntimeInformation", Doc: "RuntimeInformation is the payload of RuntimeInformationStart (runtime\n" +
		"187) and RuntimeInformationDCStart (rundown 187): the runtime's version,\n" +
		"command line and path, the best in-trace source for \"which .NET\".",
		Versions: [][]Field{{f("ClrInstanceID", Uint16), f("Sku", Uint16),
			f("BclMajorVersion", Uint16), f("BclMinorVersion", Uint16), f("BclBuildNumber", Uint16), f("BclQfeNumber", Uint16),
			f("VMMajorVersion", Uint16), f("VMMinorVersion", Uint16), f("VMBuildNumber", Uint16), f("VMQfeNumber", Uint16),
			hex("StartupFlags", Uint32), f("StartupMode", Uint8), f("CommandLine", String),
			{Name: "ComObjectGuid", Type: GUID, Go: "ComObjectGUID"}, f("RuntimeDllPath", String)}}},
	{Name: "RundownMarker", Doc: "RundownMarker is the payload of the rundown's DCStartInit/DCEndInit and\n" +
		"DCStartComplete/DCEndComplete (145-148): empty in version 0,\n" +
		"ClrInstanceID from version 1. DCEndComplete marks the end of the rundown.",
		Versions: versions(none, clr)},
	{Name: "WaitHandleWaitStart", Doc: "WaitHandleWaitStart (runtime event 301, .NET 8+): a thread blocks on a\n" +
		"wait handle (Monitor.Wait, WaitHandle.WaitOne...).",
		Versions: [][]Field{{doc(f("WaitSource", Uint8), "WaitSource: 0 unknown, 1 Monitor.Wait."),
			hex("AssociatedObjectID", Pointer), f("ClrInstanceID", Uint16)}}},
	{Name: "WaitHandleWaitStop", Doc: "WaitHandleWaitStop (runtime event 302) ends the wait.",
		Versions: [][]Field{clr}},
	{Name: "ThreadSample", Doc: "ThreadSample is the payload of the SampleProfiler's event 0. The event's\n" +
		"thread and stack are the sampled thread's.",
		Versions: [][]Field{{{Name: "Type", Type: Uint32, GoType: "SampleKind"}}}},
}
