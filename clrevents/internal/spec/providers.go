package spec

// The rows below add to the manifest's events what it does not say: the
// exported id constant, the typed payload, other names (TraceEvent's
// "Task/Opcode" names) and the C padding of struct arrays. An event of the
// manifest needs no row; its name here must be the manifest's.

// ev returns a row for the manifest's event id, to be completed with as,
// with or aligned.
func ev(id uint16, name string) Event { return Event{ID: id, Name: name} }

// typed returns a row with an id constant, a typed payload and aliases.
func typed(id uint16, name, constName, payload string, aliases ...string) Event {
	return Event{ID: id, Name: name, Const: constName, Payload: payload, Aliases: aliases}
}

// extra returns a row for an event the manifest copy does not have (sent by
// runtimes newer than it), with its keywords, a Go expression of clrevents
// Keyword constants.
func extra(id uint16, name, keywords string) Event {
	return Event{ID: id, Name: name, Keywords: keywords}
}

func (e Event) as(aliases ...string) Event { e.Aliases = aliases; return e }

func (e Event) with(payload string) Event { e.Payload = payload; return e }

// typed gives a row an id constant, a typed payload and aliases.
func (e Event) typed(constName, payload string, aliases ...string) Event {
	e.Const, e.Payload, e.Aliases = constName, payload, aliases
	return e
}

// aligned marks struct fields whose elements carry C padding.
func (e Event) aligned(fields ...string) Event { e.Aligned = fields; return e }

// Providers are the native providers, in the order of their tables.
var Providers = []Provider{
	{Name: "Microsoft-Windows-DotNETRuntime", Const: "ProviderRuntime", Table: "runtimeEvents",
		Doc: "Events of Microsoft-Windows-DotNETRuntime.", Events: runtime},
	{Name: "Microsoft-Windows-DotNETRuntimeRundown", Const: "ProviderRundown", Table: "rundownEvents",
		Doc: "Events of Microsoft-Windows-DotNETRuntimeRundown. Rundown events describe, at the end (DCEnd) or\n" +
			"start (DCStart) of a session, what was already loaded: they are what symbolises stacks.",
		Events: rundown},
	{Name: "Microsoft-Windows-DotNETRuntimePrivate", Const: "ProviderPrivate", Table: "privateEvents",
		Doc: "Events of Microsoft-Windows-DotNETRuntimePrivate (keywords not recorded).", Events: private},
	{Name: "Microsoft-Windows-DotNETRuntimeStress", Const: "ProviderStress", Table: "stressEvents",
		Doc: "Events of Microsoft-Windows-DotNETRuntimeStress.", Events: nil},
	{Name: "Microsoft-DotNETCore-SampleProfiler", Const: "ProviderSampleProfiler", Table: "sampleProfilerEvents",
		Doc: "The only event of Microsoft-DotNETCore-SampleProfiler.", Events: []Event{
			extra(0, "ThreadSample", "0").typed("IDThreadSample", "ThreadSample", "Thread/Sample")}},
}

var runtime = []Event{
	typed(1, "GCStart", "IDGCStart", "GCStart", "GC/Start"),
	typed(2, "GCEnd", "IDGCEnd", "GCEnd", "GC/Stop"),
	typed(3, "GCRestartEEEnd", "IDGCRestartEEEnd", "GCPhase", "GC/RestartEEStop"),
	typed(4, "GCHeapStats", "IDGCHeapStats", "GCHeapStats", "GC/HeapStats"),
	typed(5, "GCCreateSegment", "", "GCCreateSegment", "GC/CreateSegment"),
	typed(6, "GCFreeSegment", "", "GCFreeSegment", "GC/FreeSegment"),
	typed(7, "GCRestartEEBegin", "IDGCRestartEEBegin", "GCPhase", "GC/RestartEEStart"),
	typed(8, "GCSuspendEEEnd", "IDGCSuspendEEEnd", "GCPhase", "GC/SuspendEEStop"),
	typed(9, "GCSuspendEEBegin", "IDGCSuspendEEBegin", "GCSuspendEEBegin", "GC/SuspendEEStart"),
	typed(10, "GCAllocationTick", "IDGCAllocationTick", "GCAllocationTick", "GC/AllocationTick"),
	typed(11, "GCCreateConcurrentThread", "", "GCPhase", "GC/CreateConcurrentThread"),
	typed(12, "GCTerminateConcurrentThread", "", "GCPhase", "GC/TerminateConcurrentThread"),
	typed(13, "GCFinalizersEnd", "", "GCFinalizersEnd", "GC/FinalizersStop"),
	typed(14, "GCFinalizersBegin", "", "GCPhase", "GC/FinalizersStart"),
	ev(22, "GCBulkMovedObjectRanges").as("GC/BulkMovedObjectRanges"),
	ev(23, "GCGenerationRange").as("GC/GenerationRange"),
	ev(33, "PinObjectAtGCTime").as("GC/PinObjectAtGCTime"),
	typed(35, "GCTriggered", "IDGCTriggered", "GCTriggered", "GC/Triggered"),
	typed(50, "ThreadPoolWorkerThreadStart", "IDThreadPoolWorkerThreadStart", "ThreadPoolWorkerThread", "ThreadPoolWorkerThread/Start"),
	typed(51, "ThreadPoolWorkerThreadStop", "IDThreadPoolWorkerThreadStop", "ThreadPoolWorkerThread", "ThreadPoolWorkerThread/Stop"),
	typed(52, "ThreadPoolWorkerThreadRetirementStart", "", "ThreadPoolWorkerThread", "ThreadPoolWorkerThreadRetirement/Start"),
	typed(53, "ThreadPoolWorkerThreadRetirementStop", "", "ThreadPoolWorkerThread", "ThreadPoolWorkerThreadRetirement/Stop"),
	typed(54, "ThreadPoolWorkerThreadAdjustmentSample", "IDThreadPoolAdjustmentSample", "ThreadPoolAdjustmentSample", "ThreadPoolWorkerThreadAdjustment/Sample"),
	typed(55, "ThreadPoolWorkerThreadAdjustmentAdjustment", "IDThreadPoolAdjustment", "ThreadPoolAdjustment", "ThreadPoolWorkerThreadAdjustment/Adjustment"),
	typed(56, "ThreadPoolWorkerThreadAdjustmentStats", "IDThreadPoolAdjustmentStats", "ThreadPoolAdjustmentStats", "ThreadPoolWorkerThreadAdjustment/Stats"),
	typed(57, "ThreadPoolWorkerThreadWait", "IDThreadPoolWorkerThreadWait", "ThreadPoolWorkerThread", "ThreadPoolWorkerThread/Wait"),
	typed(60, "ThreadPoolWorkingThreadCount", "", "ThreadPoolWorkingThreadCount"),
	typed(61, "ThreadPoolEnqueue", "IDThreadPoolEnqueue", "ThreadPoolWorkItem", "ThreadPool/Enqueue"),
	typed(62, "ThreadPoolDequeue", "IDThreadPoolDequeue", "ThreadPoolWorkItem", "ThreadPool/Dequeue"),
	typed(80, "ExceptionThrown", "IDExceptionThrown", "ExceptionThrown", "Exception/Start"),
	typed(81, "ContentionStart", "IDContentionStart", "ContentionStart", "Contention/Start"),
	ev(85, "ThreadCreated").as("AppDomainResourceManagement/ThreadCreated"),
	ev(90, "LockCreated").as("ContentionLockCreated"),
	typed(91, "ContentionStop", "IDContentionStop", "ContentionStop", "Contention/Stop"),
	ev(141, "MethodLoad").as("Method/Load"),
	ev(142, "MethodUnload").as("Method/Unload"),
	typed(143, "MethodLoadVerbose", "IDMethodLoadVerbose", "MethodLoadVerbose", "Method/LoadVerbose"),
	typed(144, "MethodUnloadVerbose", "IDMethodUnloadVerbose", "MethodLoadVerbose", "Method/UnloadVerbose"),
	typed(145, "MethodJittingStarted", "IDMethodJittingStarted", "MethodJittingStarted", "Method/JittingStarted"),
	ev(151, "DomainModuleLoad").as("Loader/DomainModuleLoad"),
	typed(152, "ModuleLoad", "IDModuleLoad", "ModuleLoad", "Loader/ModuleLoad"),
	typed(153, "ModuleUnload", "IDModuleUnload", "ModuleLoad", "Loader/ModuleUnload"),
	typed(154, "AssemblyLoad", "IDAssemblyLoad", "AssemblyLoad", "Loader/AssemblyLoad"),
	typed(155, "AssemblyUnload", "", "AssemblyLoad", "Loader/AssemblyUnload"),
	ev(156, "AppDomainLoad").as("Loader/AppDomainLoad"),
	ev(157, "AppDomainUnload").as("Loader/AppDomainUnload"),
	ev(159, "R2RGetEntryPoint").as("Method/R2RGetEntryPoint"),
	ev(160, "R2RGetEntryPointStart").as("Method/R2RGetEntryPointStart"),
	typed(187, "RuntimeInformationStart", "IDRuntimeInformationStart", "RuntimeInformation", "Runtime/Start"),
	typed(190, "MethodILToNativeMap", "IDMethodILToNativeMap", "MethodILToNativeMap", "Method/ILToNativeMap"),
	ev(202, "GCMarkWithType").as("GC/MarkWithType"),
	ev(204, "GCPerHeapHistory").as("GC/PerHeapHistory"),
	ev(205, "GCGlobalHeapHistory").as("GC/GlobalHeapHistory"),
	ev(208, "GCLOHCompact").aligned("Values"),
	ev(209, "GCFitBucketInfo").aligned("Values"),
	typed(250, "ExceptionCatchStart", "IDExceptionCatchStart", "ExceptionClause", "ExceptionCatch/Start"),
	typed(251, "ExceptionCatchStop", "IDExceptionCatchStop", Empty, "ExceptionCatch/Stop"),
	typed(252, "ExceptionFinallyStart", "IDExceptionFinallyStart", "ExceptionClause", "ExceptionFinally/Start"),
	typed(253, "ExceptionFinallyStop", "IDExceptionFinallyStop", Empty, "ExceptionFinally/Stop"),
	typed(254, "ExceptionFilterStart", "IDExceptionFilterStart", "ExceptionClause", "ExceptionFilter/Start"),
	typed(255, "ExceptionFilterStop", "IDExceptionFilterStop", Empty, "ExceptionFilter/Stop"),
	ev(256, "ExceptionThrownStop").as("Exception/Stop").with(Empty),
	// .NET 9 and later; not in the manifest copy yet.
	extra(301, "WaitHandleWaitStart", "KeywordWaitHandle").typed("IDWaitHandleWaitStart", "WaitHandleWaitStart"),
	extra(302, "WaitHandleWaitStop", "KeywordWaitHandle").typed("IDWaitHandleWaitStop", "WaitHandleWaitStop"),
	extra(303, "AllocationSampled", "KeywordAllocationSampling"),
}

var rundown = []Event{
	ev(141, "MethodDCStart").as("Method/DCStart"),
	ev(142, "MethodDCEnd").as("Method/DCStop"),
	typed(143, "MethodDCStartVerbose", "IDMethodDCStartVerbose", "MethodLoadVerbose", "Method/DCStartVerbose"),
	typed(144, "MethodDCEndVerbose", "IDMethodDCEndVerbose", "MethodLoadVerbose", "Method/DCStopVerbose"),
	typed(145, "DCStartComplete", "IDDCStartComplete", "RundownMarker", "Method/DCStartComplete"),
	typed(146, "DCEndComplete", "IDDCEndComplete", "RundownMarker", "Method/DCStopComplete"),
	typed(147, "DCStartInit", "IDDCStartInit", "RundownMarker", "Method/DCStartInit"),
	typed(148, "DCEndInit", "IDDCEndInit", "RundownMarker", "Method/DCStopInit"),
	typed(149, "MethodDCStartILToNativeMap", "IDMethodDCStartILToNativeMap", "MethodILToNativeMap"),
	typed(150, "MethodDCEndILToNativeMap", "IDMethodDCEndILToNativeMap", "MethodILToNativeMap"),
	ev(151, "DomainModuleDCStart").as("Loader/DomainModuleDCStart"),
	ev(152, "DomainModuleDCEnd").as("Loader/DomainModuleDCStop"),
	typed(153, "ModuleDCStart", "IDModuleDCStart", "ModuleLoad", "Loader/ModuleDCStart"),
	typed(154, "ModuleDCEnd", "IDModuleDCEnd", "ModuleLoad", "Loader/ModuleDCStop"),
	typed(155, "AssemblyDCStart", "IDAssemblyDCStart", "AssemblyLoad", "Loader/AssemblyDCStart"),
	typed(156, "AssemblyDCEnd", "IDAssemblyDCEnd", "AssemblyLoad", "Loader/AssemblyDCStop"),
	ev(157, "AppDomainDCStart").as("Loader/AppDomainDCStart"),
	ev(158, "AppDomainDCEnd").as("Loader/AppDomainDCStop"),
	typed(187, "RuntimeInformationDCStart", "IDRuntimeInformationDCStart", "RuntimeInformation", "Runtime/Start"),
	ev(300, "ExecutionCheckpointDCEnd").as("ExecutionCheckpointRundown/ExecutionCheckpointDCEnd"),
}

var private = []Event{
	ev(199, "PinPlugAtGCTime").as("GC/PinPlugAtGCTime"),
}
