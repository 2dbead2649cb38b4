package clrevents

import (
	"slices"
	"sort"
	"strings"
)

// Provider names of the runtime's native (manifest-based) providers.
const (
	ProviderRuntime        = "Microsoft-Windows-DotNETRuntime"
	ProviderRundown        = "Microsoft-Windows-DotNETRuntimeRundown"
	ProviderSampleProfiler = "Microsoft-DotNETCore-SampleProfiler"
)

// Keyword is a bit of a provider's keyword mask, as used to enable events.
type Keyword uint64

// Keywords of Microsoft-Windows-DotNETRuntime (the rundown provider reuses
// Loader, Jit and NGen and adds StartEnumeration and EndEnumeration).
const (
	KeywordGC                        Keyword = 0x1
	KeywordGCHandle                  Keyword = 0x2
	KeywordBinder                    Keyword = 0x4
	KeywordLoader                    Keyword = 0x8
	KeywordJit                       Keyword = 0x10
	KeywordNGen                      Keyword = 0x20
	KeywordStartEnumeration          Keyword = 0x40
	KeywordEndEnumeration            Keyword = 0x80
	KeywordSecurity                  Keyword = 0x400
	KeywordAppDomainResource         Keyword = 0x800
	KeywordJitTracing                Keyword = 0x1000
	KeywordInterop                   Keyword = 0x2000
	KeywordContention                Keyword = 0x4000
	KeywordException                 Keyword = 0x8000
	KeywordThreading                 Keyword = 0x10000
	KeywordJittedMethodILToNativeMap Keyword = 0x20000
	KeywordType                      Keyword = 0x80000
	KeywordGCHeapDump                Keyword = 0x100000
	KeywordStack                     Keyword = 0x40000000
	KeywordThreadTransfer            Keyword = 0x80000000
	KeywordCompilation               Keyword = 0x1000000000
	KeywordWaitHandle                Keyword = 0x40000000000
	KeywordAllocationSampling        Keyword = 0x80000000000
)

// Event ids of Microsoft-Windows-DotNETRuntime that this package decodes.
const (
	IDGCStart                     uint16 = 1
	IDGCEnd                       uint16 = 2
	IDGCRestartEEEnd              uint16 = 3
	IDGCHeapStats                 uint16 = 4
	IDGCRestartEEBegin            uint16 = 7
	IDGCSuspendEEEnd              uint16 = 8
	IDGCSuspendEEBegin            uint16 = 9
	IDGCAllocationTick            uint16 = 10
	IDGCTriggered                 uint16 = 35
	IDThreadPoolWorkerThreadStart uint16 = 50
	IDThreadPoolWorkerThreadStop  uint16 = 51
	IDThreadPoolAdjustmentSample  uint16 = 54
	IDThreadPoolAdjustment        uint16 = 55
	IDThreadPoolAdjustmentStats   uint16 = 56
	IDThreadPoolWorkerThreadWait  uint16 = 57
	IDThreadPoolEnqueue           uint16 = 61
	IDThreadPoolDequeue           uint16 = 62
	IDExceptionThrown             uint16 = 80
	IDContentionStart             uint16 = 81
	IDContentionStop              uint16 = 91
	IDMethodLoadVerbose           uint16 = 143
	IDMethodUnloadVerbose         uint16 = 144
	IDMethodJittingStarted        uint16 = 145
	IDModuleLoad                  uint16 = 152
	IDModuleUnload                uint16 = 153
	IDAssemblyLoad                uint16 = 154
	IDRuntimeInformationStart     uint16 = 187
	IDMethodILToNativeMap         uint16 = 190
	IDExceptionCatchStart         uint16 = 250
	IDExceptionCatchStop          uint16 = 251
	IDExceptionFinallyStart       uint16 = 252
	IDExceptionFinallyStop        uint16 = 253
	IDExceptionFilterStart        uint16 = 254
	IDExceptionFilterStop         uint16 = 255
	IDWaitHandleWaitStart         uint16 = 301
	IDWaitHandleWaitStop          uint16 = 302
)

// Event ids of Microsoft-Windows-DotNETRuntimeRundown that this package
// decodes. Rundown events describe, at the end (DCEnd) or start (DCStart) of
// a session, what was already loaded: they are what symbolises stacks.
const (
	IDMethodDCStartVerbose       uint16 = 143
	IDMethodDCEndVerbose         uint16 = 144
	IDDCStartComplete            uint16 = 145
	IDDCEndComplete              uint16 = 146
	IDDCStartInit                uint16 = 147
	IDDCEndInit                  uint16 = 148
	IDMethodDCStartILToNativeMap uint16 = 149
	IDMethodDCEndILToNativeMap   uint16 = 150
	IDModuleDCStart              uint16 = 153
	IDModuleDCEnd                uint16 = 154
	IDAssemblyDCStart            uint16 = 155
	IDAssemblyDCEnd              uint16 = 156
	IDRuntimeInformationDCStart  uint16 = 187
)

// IDThreadSample is the only event of Microsoft-DotNETCore-SampleProfiler.
const IDThreadSample uint16 = 0

// FieldType is the wire type of a payload field.
type FieldType uint8

// Field types. Integers are little-endian; nothing is aligned.
const (
	TypeUint8 FieldType = iota + 1
	TypeUint16
	TypeUint32
	TypeUint64
	TypeFloat64
	// TypePointer is 4 or 8 bytes depending on the trace's pointer size.
	TypePointer
	// TypeString is UTF-16LE terminated by a 16-bit NUL.
	TypeString
	TypeGUID
	// TypeUint32Array is a run of uint32 whose length is the value of the
	// earlier field named by Field.Count.
	TypeUint32Array
)

var typeNames = [...]string{
	TypeUint8: "uint8", TypeUint16: "uint16", TypeUint32: "uint32", TypeUint64: "uint64",
	TypeFloat64: "float64", TypePointer: "pointer", TypeString: "string", TypeGUID: "guid",
	TypeUint32Array: "uint32[]",
}

func (t FieldType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "invalid"
}

// Field is one field of a payload layout.
type Field struct {
	Name string
	Type FieldType
	// Count names the earlier field that holds the element count of a
	// TypeUint32Array field.
	Count string
}

// Info describes one event of a native runtime provider.
type Info struct {
	Provider string
	ID       uint16
	Name     string
	Keywords Keyword
	// MaxVersion is the newest payload version whose layout is known. Newer
	// versions only append fields, so they decode as MaxVersion.
	MaxVersion uint8

	layouts [][]Field
}

// Fields returns the payload layout of the given version (the newest known
// layout for versions above MaxVersion). The slice is a copy.
func (i Info) Fields(version uint8) []Field {
	if len(i.layouts) == 0 {
		return nil
	}
	if int(version) >= len(i.layouts) {
		version = uint8(len(i.layouts) - 1)
	}
	return slices.Clone(i.layouts[version])
}

// Lookup returns what the table knows about an event. Provider names match
// case-insensitively, as in the runtime.
func Lookup(provider string, id uint16) (Info, bool) {
	p, table := providerTable(provider)
	if table == nil {
		return Info{}, false
	}
	e, ok := findEntry(table, id)
	if !ok {
		return Info{}, false
	}
	return Info{Provider: p, ID: e.id, Name: e.name, Keywords: e.keywords,
		MaxVersion: uint8(max(len(e.layouts)-1, 0)), layouts: e.layouts}, true
}

// entry is a row of a provider table. Rows are sorted by id.
type entry struct {
	id       uint16
	name     string
	keywords Keyword
	// layouts[v] is the payload of version v; nil for events known by name
	// only.
	layouts [][]Field
}

func providerTable(provider string) (string, []entry) {
	switch {
	case strings.EqualFold(provider, ProviderRuntime):
		return ProviderRuntime, runtimeEvents[:]
	case strings.EqualFold(provider, ProviderRundown):
		return ProviderRundown, rundownEvents[:]
	case strings.EqualFold(provider, ProviderSampleProfiler):
		return ProviderSampleProfiler, sampleProfilerEvents[:]
	}
	return "", nil
}

func findEntry(table []entry, id uint16) (entry, bool) {
	i := sort.Search(len(table), func(i int) bool { return table[i].id >= id })
	if i < len(table) && table[i].id == id {
		return table[i], true
	}
	return entry{}, false
}

// versions builds a layout list in which each version appends fields to the
// previous one: versions(v0, more1, more2) = [v0, v0+more1, v0+more1+more2].
func versions(base []Field, appended ...[]Field) [][]Field {
	out := [][]Field{base}
	cur := base
	for _, a := range appended {
		cur = append(slices.Clip(cur), a...)
		out = append(out, cur)
	}
	return out
}

// same repeats one layout for versions 0..n-1.
func same(n int, l []Field) [][]Field {
	out := make([][]Field, n)
	for i := range out {
		out[i] = l
	}
	return out
}

func f(name string, t FieldType) Field { return Field{Name: name, Type: t} }

var (
	clrInstance = []Field{f("ClrInstanceID", TypeUint16)}
	none        = []Field{}

	gcStartV1 = []Field{f("Count", TypeUint32), f("Depth", TypeUint32), f("Reason", TypeUint32),
		f("Type", TypeUint32), f("ClrInstanceID", TypeUint16)}
	gcHeapStatsV0 = []Field{
		f("GenerationSize0", TypeUint64), f("TotalPromotedSize0", TypeUint64),
		f("GenerationSize1", TypeUint64), f("TotalPromotedSize1", TypeUint64),
		f("GenerationSize2", TypeUint64), f("TotalPromotedSize2", TypeUint64),
		f("GenerationSize3", TypeUint64), f("TotalPromotedSize3", TypeUint64),
		f("FinalizationPromotedSize", TypeUint64), f("FinalizationPromotedCount", TypeUint64),
		f("PinnedObjectCount", TypeUint32), f("SinkBlockCount", TypeUint32), f("GCHandleCount", TypeUint32)}
	workerThread = []Field{f("ActiveWorkerThreadCount", TypeUint32),
		f("RetiredWorkerThreadCount", TypeUint32), f("ClrInstanceID", TypeUint16)}
	workItem        = []Field{f("WorkID", TypePointer), f("ClrInstanceID", TypeUint16)}
	contentionV1    = []Field{f("ContentionFlags", TypeUint8), f("ClrInstanceID", TypeUint16)}
	exceptionClause = []Field{f("EntryEIP", TypeUint64), f("MethodID", TypeUint64), f("MethodName", TypeString), f("ClrInstanceID", TypeUint16)}
	methodVerboseV0 = []Field{f("MethodID", TypeUint64), f("ModuleID", TypeUint64), f("MethodStartAddress", TypeUint64),
		f("MethodSize", TypeUint32), f("MethodToken", TypeUint32), f("MethodFlags", TypeUint32),
		f("MethodNamespace", TypeString), f("MethodName", TypeString), f("MethodSignature", TypeString)}
	methodVerbose = versions(methodVerboseV0, clrInstance, []Field{f("ReJITID", TypeUint64)})
	ilToNativeMap = [][]Field{{f("MethodID", TypeUint64), f("ReJITID", TypeUint64), f("MethodExtent", TypeUint8),
		f("CountOfMapEntries", TypeUint16),
		{Name: "ILOffsets", Type: TypeUint32Array, Count: "CountOfMapEntries"},
		{Name: "NativeOffsets", Type: TypeUint32Array, Count: "CountOfMapEntries"},
		f("ClrInstanceID", TypeUint16)}}
	moduleLoad = versions([]Field{f("ModuleID", TypeUint64), f("AssemblyID", TypeUint64), f("ModuleFlags", TypeUint32),
		f("Reserved1", TypeUint32), f("ModuleILPath", TypeString), f("ModuleNativePath", TypeString)},
		clrInstance,
		[]Field{f("ManagedPdbSignature", TypeGUID), f("ManagedPdbAge", TypeUint32), f("ManagedPdbBuildPath", TypeString),
			f("NativePdbSignature", TypeGUID), f("NativePdbAge", TypeUint32), f("NativePdbBuildPath", TypeString)})
	assemblyLoad = [][]Field{
		{f("AssemblyID", TypeUint64), f("AppDomainID", TypeUint64), f("AssemblyFlags", TypeUint32),
			f("FullyQualifiedAssemblyName", TypeString)},
		{f("AssemblyID", TypeUint64), f("AppDomainID", TypeUint64), f("BindingID", TypeUint64),
			f("AssemblyFlags", TypeUint32), f("FullyQualifiedAssemblyName", TypeString), f("ClrInstanceID", TypeUint16)},
	}
	runtimeInformation = [][]Field{{f("ClrInstanceID", TypeUint16), f("Sku", TypeUint16),
		f("BclMajorVersion", TypeUint16), f("BclMinorVersion", TypeUint16), f("BclBuildNumber", TypeUint16), f("BclQfeNumber", TypeUint16),
		f("VMMajorVersion", TypeUint16), f("VMMinorVersion", TypeUint16), f("VMBuildNumber", TypeUint16), f("VMQfeNumber", TypeUint16),
		f("StartupFlags", TypeUint32), f("StartupMode", TypeUint8), f("CommandLine", TypeString),
		f("ComObjectGuid", TypeGUID), f("RuntimeDllPath", TypeString)}}
	rundownComplete = versions(none, clrInstance)
)

// runtimeEvents is the Microsoft-Windows-DotNETRuntime table, sorted by id.
// Events without layouts are there so that traces can name them.
var runtimeEvents = [...]entry{
	{IDGCStart, "GCStart", KeywordGC, [][]Field{{f("Count", TypeUint32), f("Reason", TypeUint32)}, gcStartV1,
		append(slices.Clip(gcStartV1), f("ClientSequenceNumber", TypeUint64))}},
	{IDGCEnd, "GCEnd", KeywordGC, [][]Field{{f("Count", TypeUint32), f("Depth", TypeUint16)},
		{f("Count", TypeUint32), f("Depth", TypeUint32), f("ClrInstanceID", TypeUint16)}}},
	{IDGCRestartEEEnd, "GCRestartEEEnd", KeywordGC, rundownComplete},
	{IDGCHeapStats, "GCHeapStats", KeywordGC, versions(gcHeapStatsV0, clrInstance,
		[]Field{f("GenerationSize4", TypeUint64), f("TotalPromotedSize4", TypeUint64)})},
	{5, "GCCreateSegment", KeywordGC, versions([]Field{f("Address", TypeUint64), f("Size", TypeUint64), f("Type", TypeUint32)}, clrInstance)},
	{6, "GCFreeSegment", KeywordGC, versions([]Field{f("Address", TypeUint64)}, clrInstance)},
	{IDGCRestartEEBegin, "GCRestartEEBegin", KeywordGC, rundownComplete},
	{IDGCSuspendEEEnd, "GCSuspendEEEnd", KeywordGC, rundownComplete},
	{IDGCSuspendEEBegin, "GCSuspendEEBegin", KeywordGC, [][]Field{{f("Reason", TypeUint16)},
		{f("Reason", TypeUint32), f("Count", TypeUint32), f("ClrInstanceID", TypeUint16)}}},
	{IDGCAllocationTick, "GCAllocationTick", KeywordGC, versions(
		[]Field{f("AllocationAmount", TypeUint32), f("AllocationKind", TypeUint32)},
		clrInstance,
		[]Field{f("AllocationAmount64", TypeUint64), f("TypeID", TypePointer), f("TypeName", TypeString), f("HeapIndex", TypeUint32)},
		[]Field{f("Address", TypePointer)},
		[]Field{f("ObjectSize", TypeUint64)})},
	{11, "GCCreateConcurrentThread", KeywordGC, rundownComplete},
	{12, "GCTerminateConcurrentThread", KeywordGC, rundownComplete},
	{13, "GCFinalizersEnd", KeywordGC, versions([]Field{f("Count", TypeUint32)}, clrInstance)},
	{14, "GCFinalizersBegin", KeywordGC, rundownComplete},
	{15, "BulkType", KeywordType, nil},
	{16, "GCBulkRootEdge", KeywordGCHeapDump, nil},
	{17, "GCBulkRootConditionalWeakTableElementEdge", KeywordGCHeapDump, nil},
	{18, "GCBulkNode", KeywordGCHeapDump, nil},
	{19, "GCBulkEdge", KeywordGCHeapDump, nil},
	{20, "GCSampledObjectAllocationHigh", 0x200000, nil},
	{21, "GCBulkSurvivingObjectRanges", 0x400000, nil},
	{22, "GCBulkMovedObjectRanges", 0x400000, nil},
	{23, "GCGenerationRange", 0x400000, nil},
	{25, "GCMarkStackRoots", KeywordGC, nil},
	{26, "GCMarkFinalizeQueueRoots", KeywordGC, nil},
	{27, "GCMarkHandles", KeywordGC, nil},
	{28, "GCMarkOlderGenerationRoots", KeywordGC, nil},
	{29, "FinalizeObject", KeywordGC, nil},
	{30, "SetGCHandle", KeywordGCHandle, nil},
	{31, "DestroyGCHandle", KeywordGCHandle, nil},
	{32, "GCSampledObjectAllocationLow", 0x2000000, nil},
	{33, "PinObjectAtGCTime", KeywordGC, nil},
	{IDGCTriggered, "GCTriggered", KeywordGC, [][]Field{{f("Reason", TypeUint32), f("ClrInstanceID", TypeUint16)}}},
	{36, "GCBulkRootCCW", KeywordGCHeapDump, nil},
	{37, "GCBulkRCW", KeywordGCHeapDump, nil},
	{38, "GCBulkRootStaticVar", KeywordGCHeapDump, nil},
	{39, "GCDynamicEvent", KeywordGC, nil},
	{40, "WorkerThreadCreate", KeywordThreading, nil},
	{41, "WorkerThreadTerminate", KeywordThreading, nil},
	{42, "WorkerThreadRetire", KeywordThreading, nil},
	{43, "WorkerThreadUnretire", KeywordThreading, nil},
	{44, "IOThreadCreate", KeywordThreading, nil},
	{45, "IOThreadTerminate", KeywordThreading, nil},
	{46, "IOThreadRetire", KeywordThreading, nil},
	{47, "IOThreadUnretire", KeywordThreading, nil},
	{48, "ThreadpoolSuspensionSuspendThread", KeywordThreading, nil},
	{49, "ThreadpoolSuspensionResumeThread", KeywordThreading, nil},
	{IDThreadPoolWorkerThreadStart, "ThreadPoolWorkerThreadStart", KeywordThreading, same(1, workerThread)},
	{IDThreadPoolWorkerThreadStop, "ThreadPoolWorkerThreadStop", KeywordThreading, same(1, workerThread)},
	{52, "ThreadPoolWorkerThreadRetirementStart", KeywordThreading, same(1, workerThread)},
	{53, "ThreadPoolWorkerThreadRetirementStop", KeywordThreading, same(1, workerThread)},
	{IDThreadPoolAdjustmentSample, "ThreadPoolWorkerThreadAdjustmentSample", KeywordThreading,
		[][]Field{{f("Throughput", TypeFloat64), f("ClrInstanceID", TypeUint16)}}},
	{IDThreadPoolAdjustment, "ThreadPoolWorkerThreadAdjustmentAdjustment", KeywordThreading,
		[][]Field{{f("AverageThroughput", TypeFloat64), f("NewWorkerThreadCount", TypeUint32), f("Reason", TypeUint32), f("ClrInstanceID", TypeUint16)}}},
	{IDThreadPoolAdjustmentStats, "ThreadPoolWorkerThreadAdjustmentStats", KeywordThreading,
		[][]Field{{f("Duration", TypeFloat64), f("Throughput", TypeFloat64), f("ThreadWave", TypeFloat64),
			f("ThroughputWave", TypeFloat64), f("ThroughputErrorEstimate", TypeFloat64),
			f("AverageThroughputErrorEstimate", TypeFloat64), f("ThroughputRatio", TypeFloat64),
			f("Confidence", TypeFloat64), f("NewControlSetting", TypeFloat64),
			f("NewThreadWaveMagnitude", TypeUint16), f("ClrInstanceID", TypeUint16)}}},
	{IDThreadPoolWorkerThreadWait, "ThreadPoolWorkerThreadWait", KeywordThreading, same(1, workerThread)},
	{58, "YieldProcessorMeasurement", KeywordThreading, nil},
	{59, "ThreadPoolMinMaxThreads", KeywordThreading, nil},
	{60, "ThreadPoolWorkingThreadCount", KeywordThreading, [][]Field{{f("Count", TypeUint32), f("ClrInstanceID", TypeUint16)}}},
	{IDThreadPoolEnqueue, "ThreadPoolEnqueue", KeywordThreading | KeywordThreadTransfer, same(1, workItem)},
	{IDThreadPoolDequeue, "ThreadPoolDequeue", KeywordThreading | KeywordThreadTransfer, same(1, workItem)},
	{63, "ThreadPoolIOEnqueue", KeywordThreading | KeywordThreadTransfer, nil},
	{64, "ThreadPoolIODequeue", KeywordThreading | KeywordThreadTransfer, nil},
	{65, "ThreadPoolIOPack", KeywordThreading, nil},
	{70, "ThreadCreating", KeywordThreading, nil},
	{71, "ThreadRunning", KeywordThreading, nil},
	{72, "MethodDetails", 0x10000000000, nil},
	{73, "TypeLoadStart", 0x8000000000, nil},
	{74, "TypeLoadStop", 0x8000000000, nil},
	{IDExceptionThrown, "ExceptionThrown", KeywordException, [][]Field{none,
		{f("ExceptionType", TypeString), f("ExceptionMessage", TypeString), f("ExceptionEIP", TypePointer),
			f("ExceptionHRESULT", TypeUint32), f("ExceptionFlags", TypeUint16), f("ClrInstanceID", TypeUint16)}}},
	{IDContentionStart, "ContentionStart", KeywordContention, versions(contentionV1, nil,
		[]Field{f("LockID", TypePointer), f("AssociatedObjectID", TypePointer), f("LockOwnerThreadID", TypeUint64)})},
	{82, "CLRStackWalk", KeywordStack, nil},
	{83, "AppDomainMemAllocated", KeywordAppDomainResource, nil},
	{84, "AppDomainMemSurvived", KeywordAppDomainResource, nil},
	{85, "ThreadCreated", KeywordAppDomainResource | KeywordThreading, nil},
	{86, "ThreadTerminated", KeywordAppDomainResource | KeywordThreading, nil},
	{87, "ThreadDomainEnter", KeywordAppDomainResource | KeywordThreading, nil},
	{88, "ILStubGenerated", KeywordInterop, nil},
	{89, "ILStubCacheHit", KeywordInterop, nil},
	{90, "ContentionLockCreated", KeywordContention, nil},
	{IDContentionStop, "ContentionStop", KeywordContention, versions(contentionV1, []Field{f("DurationNs", TypeFloat64)})},
	{135, "DCStartCompleteV2", KeywordJit, nil},
	{136, "DCEndCompleteV2", KeywordJit, nil},
	{137, "MethodDCStartV2", KeywordJit, nil},
	{138, "MethodDCEndV2", KeywordJit, nil},
	{139, "MethodDCStartVerboseV2", KeywordJit, nil},
	{140, "MethodDCEndVerboseV2", KeywordJit, nil},
	{141, "MethodLoad", KeywordJit | KeywordNGen, nil},
	{142, "MethodUnload", KeywordJit | KeywordNGen, nil},
	{IDMethodLoadVerbose, "MethodLoadVerbose", KeywordJit | KeywordNGen, methodVerbose},
	{IDMethodUnloadVerbose, "MethodUnloadVerbose", KeywordJit | KeywordNGen, methodVerbose},
	{IDMethodJittingStarted, "MethodJittingStarted", KeywordJit, versions([]Field{f("MethodID", TypeUint64),
		f("ModuleID", TypeUint64), f("MethodToken", TypeUint32), f("MethodILSize", TypeUint32),
		f("MethodNamespace", TypeString), f("MethodName", TypeString), f("MethodSignature", TypeString)}, clrInstance)},
	{146, "MethodJitMemoryAllocatedForCode", KeywordJit, nil},
	{151, "DomainModuleLoad", KeywordLoader, nil},
	{IDModuleLoad, "ModuleLoad", KeywordLoader, moduleLoad},
	{IDModuleUnload, "ModuleUnload", KeywordLoader, moduleLoad},
	{IDAssemblyLoad, "AssemblyLoad", KeywordLoader, assemblyLoad},
	{155, "AssemblyUnload", KeywordLoader, assemblyLoad},
	{156, "AppDomainLoad", KeywordLoader, nil},
	{157, "AppDomainUnload", KeywordLoader, nil},
	{158, "ModuleRangeLoad", 0x20000000, nil},
	{185, "MethodJitInliningSucceeded", KeywordJitTracing, nil},
	{186, "MethodJitInliningFailedAnsi", KeywordJitTracing, nil},
	{IDRuntimeInformationStart, "RuntimeInformationStart", 0, runtimeInformation},
	{188, "MethodJitTailCallSucceeded", KeywordJitTracing, nil},
	{189, "MethodJitTailCallFailedAnsi", KeywordJitTracing, nil},
	{IDMethodILToNativeMap, "MethodILToNativeMap", KeywordJittedMethodILToNativeMap, ilToNativeMap},
	{191, "MethodJitTailCallFailed", KeywordJitTracing, nil},
	{192, "MethodJitInliningFailed", KeywordJitTracing, nil},
	{200, "IncreaseMemoryPressure", KeywordGC, nil},
	{201, "DecreaseMemoryPressure", KeywordGC, nil},
	{202, "GCMarkWithType", KeywordGC, nil},
	{203, "GCJoin", KeywordGC, nil},
	{204, "GCPerHeapHistory", KeywordGC, nil},
	{205, "GCGlobalHeapHistory", KeywordGC, nil},
	{206, "GenAwareBegin", KeywordGC, nil},
	{207, "GenAwareEnd", KeywordGC, nil},
	{208, "GCLOHCompact", KeywordGC, nil},
	{209, "GCFitBucketInfo", KeywordGC, nil},
	{IDExceptionCatchStart, "ExceptionCatchStart", KeywordException, same(1, exceptionClause)},
	{IDExceptionCatchStop, "ExceptionCatchStop", KeywordException, same(1, none)},
	{IDExceptionFinallyStart, "ExceptionFinallyStart", KeywordException, same(1, exceptionClause)},
	{IDExceptionFinallyStop, "ExceptionFinallyStop", KeywordException, same(1, none)},
	{IDExceptionFilterStart, "ExceptionFilterStart", KeywordException, same(1, exceptionClause)},
	{IDExceptionFilterStop, "ExceptionFilterStop", KeywordException, same(1, none)},
	{256, "ExceptionThrownStop", KeywordException, nil},
	{260, "CodeSymbols", 0x400000000, nil},
	{270, "EventSource", 0x800000000, nil},
	{280, "TieredCompilationSettings", KeywordCompilation, nil},
	{281, "TieredCompilationPause", KeywordCompilation, nil},
	{282, "TieredCompilationResume", KeywordCompilation, nil},
	{283, "TieredCompilationBackgroundJitStart", KeywordCompilation, nil},
	{284, "TieredCompilationBackgroundJitStop", KeywordCompilation, nil},
	{290, "AssemblyLoadStart", KeywordBinder, nil},
	{291, "AssemblyLoadStop", KeywordBinder, nil},
	{292, "ResolutionAttempted", KeywordBinder, nil},
	{293, "AssemblyLoadContextResolvingHandlerInvoked", KeywordBinder, nil},
	{294, "AppDomainAssemblyResolveHandlerInvoked", KeywordBinder, nil},
	{295, "AssemblyLoadFromResolveHandlerInvoked", KeywordBinder, nil},
	{296, "KnownPathProbed", KeywordBinder, nil},
	{297, "JitInstrumentationData", 0x10000000000, nil},
	{298, "JitInstrumentationDataVerbose", 0x10000000000, nil},
	{299, "ProfilerMessage", 0x20000000000, nil},
	{300, "ExecutionCheckpoint", 0, nil},
	{IDWaitHandleWaitStart, "WaitHandleWaitStart", KeywordWaitHandle,
		[][]Field{{f("WaitSource", TypeUint8), f("AssociatedObjectID", TypePointer), f("ClrInstanceID", TypeUint16)}}},
	{IDWaitHandleWaitStop, "WaitHandleWaitStop", KeywordWaitHandle, same(1, clrInstance)},
	{303, "AllocationSampled", KeywordAllocationSampling, nil},
}

// rundownEvents is the Microsoft-Windows-DotNETRuntimeRundown table.
var rundownEvents = [...]entry{
	{10, "GCSettingsRundown", KeywordGC, nil},
	{141, "MethodDCStart", KeywordJit | KeywordNGen | KeywordStartEnumeration, nil},
	{142, "MethodDCEnd", KeywordJit | KeywordNGen | KeywordEndEnumeration, nil},
	{IDMethodDCStartVerbose, "MethodDCStartVerbose", KeywordJit | KeywordNGen | KeywordStartEnumeration, methodVerbose},
	{IDMethodDCEndVerbose, "MethodDCEndVerbose", KeywordJit | KeywordNGen | KeywordEndEnumeration, methodVerbose},
	{IDDCStartComplete, "DCStartComplete", KeywordStartEnumeration, rundownComplete},
	{IDDCEndComplete, "DCEndComplete", KeywordEndEnumeration, rundownComplete},
	{IDDCStartInit, "DCStartInit", KeywordStartEnumeration, rundownComplete},
	{IDDCEndInit, "DCEndInit", KeywordEndEnumeration, rundownComplete},
	{IDMethodDCStartILToNativeMap, "MethodDCStartILToNativeMap", KeywordJittedMethodILToNativeMap | KeywordStartEnumeration, ilToNativeMap},
	{IDMethodDCEndILToNativeMap, "MethodDCEndILToNativeMap", KeywordJittedMethodILToNativeMap | KeywordEndEnumeration, ilToNativeMap},
	{151, "DomainModuleDCStart", KeywordLoader | KeywordStartEnumeration, nil},
	{152, "DomainModuleDCEnd", KeywordLoader | KeywordEndEnumeration, nil},
	{IDModuleDCStart, "ModuleDCStart", KeywordLoader | KeywordStartEnumeration, moduleLoad},
	{IDModuleDCEnd, "ModuleDCEnd", KeywordLoader | KeywordEndEnumeration, moduleLoad},
	{IDAssemblyDCStart, "AssemblyDCStart", KeywordLoader | KeywordStartEnumeration, assemblyLoad},
	{IDAssemblyDCEnd, "AssemblyDCEnd", KeywordLoader | KeywordEndEnumeration, assemblyLoad},
	{157, "AppDomainDCStart", KeywordLoader | KeywordStartEnumeration, nil},
	{158, "AppDomainDCEnd", KeywordLoader | KeywordEndEnumeration, nil},
	{159, "ThreadDC", KeywordThreading, nil},
	{160, "ModuleRangeDCStart", 0x20000000, nil},
	{161, "ModuleRangeDCEnd", 0x20000000, nil},
	{IDRuntimeInformationDCStart, "RuntimeInformationDCStart", 0, runtimeInformation},
	{300, "ExecutionCheckpointDCEnd", 0, nil},
}

// sampleProfilerEvents is the Microsoft-DotNETCore-SampleProfiler table.
var sampleProfilerEvents = [...]entry{
	{IDThreadSample, "ThreadSample", 0, [][]Field{{f("Type", TypeUint32)}}},
}
