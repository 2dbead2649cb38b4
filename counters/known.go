package counters

// Known describes a well-known counter of a provider.
type Known struct {
	Name        string
	Description string
	Unit        string
	// Since is the first runtime that publishes it, e.g. ".NET Core 3.0".
	Since string
	// Meter marks a System.Diagnostics.Metrics instrument of the .NET 9+
	// System.Runtime meter rather than a legacy EventCounter.
	Meter bool
}

// KnownCounters returns the documented counters of System.Runtime: the
// legacy EventCounters (.NET Core 3.0 to 8, still published later) and the
// instruments of the System.Runtime meter of .NET 9 and later.
func KnownCounters() []Known {
	return []Known{
		{"cpu-usage", "Percentage of time the process used the CPU", "%", ".NET Core 3.0", false},
		{"working-set", "Working set of the process", "MB", ".NET Core 3.0", false},
		{"gc-heap-size", "Bytes thought to be allocated in the managed heap", "MB", ".NET Core 3.0", false},
		{"gen-0-gc-count", "Number of gen 0 collections in the interval", "count", ".NET Core 3.0", false},
		{"gen-1-gc-count", "Number of gen 1 collections in the interval", "count", ".NET Core 3.0", false},
		{"gen-2-gc-count", "Number of gen 2 collections in the interval", "count", ".NET Core 3.0", false},
		{"time-in-gc", "Percentage of time spent in GC since the last GC", "%", ".NET Core 3.0", false},
		{"gen-0-size", "Size of generation 0", "B", ".NET Core 3.0", false},
		{"gen-1-size", "Size of generation 1", "B", ".NET Core 3.0", false},
		{"gen-2-size", "Size of generation 2", "B", ".NET Core 3.0", false},
		{"loh-size", "Size of the large object heap", "B", ".NET Core 3.0", false},
		{"poh-size", "Size of the pinned object heap", "B", ".NET 5", false},
		{"alloc-rate", "Bytes allocated in the managed heap in the interval", "B", ".NET Core 3.0", false},
		{"gc-fragmentation", "Fragmentation of the managed heap", "%", ".NET 5", false},
		{"gc-committed", "Bytes of memory committed by the GC", "MB", ".NET 6", false},
		{"assembly-count", "Number of assemblies loaded", "count", ".NET Core 3.0", false},
		{"exception-count", "Number of exceptions thrown in the interval", "count", ".NET Core 3.0", false},
		{"threadpool-thread-count", "Number of thread pool threads", "count", ".NET Core 3.0", false},
		{"monitor-lock-contention-count", "Number of times there was contention taking a monitor lock in the interval", "count", ".NET Core 3.0", false},
		{"threadpool-queue-length", "Number of work items queued to the thread pool", "count", ".NET Core 3.0", false},
		{"threadpool-completed-items-count", "Number of work items the thread pool completed in the interval", "count", ".NET Core 3.0", false},
		{"active-timer-count", "Number of timers currently active", "count", ".NET Core 3.0", false},
		{"il-bytes-jitted", "Total size of IL compiled by the JIT", "B", ".NET 5", false},
		{"methods-jitted-count", "Number of methods compiled by the JIT", "count", ".NET 5", false},
		{"dotnet.process.cpu.count", "Number of processors available to the process", "{cpu}", ".NET 9", true},
		{"dotnet.process.cpu.time", "CPU time used by the process, by cpu.mode (user, system)", "s", ".NET 9", true},
		{"dotnet.process.memory.working_set", "Working set of the process", "By", ".NET 9", true},
		{"dotnet.gc.collections", "Number of garbage collections, by gc.heap.generation", "{collection}", ".NET 9", true},
		{"dotnet.gc.heap.total_allocated", "Bytes allocated on the managed heap since the process started", "By", ".NET 9", true},
		{"dotnet.gc.last_collection.memory.committed_size", "Memory committed by the GC at the end of the last collection", "By", ".NET 9", true},
		{"dotnet.gc.last_collection.heap.size", "Managed heap size at the end of the last collection, by generation", "By", ".NET 9", true},
		{"dotnet.gc.last_collection.heap.fragmentation.size", "Heap fragmentation at the end of the last collection, by generation", "By", ".NET 9", true},
		{"dotnet.gc.pause.time", "Total time paused in GC since the process started", "s", ".NET 9", true},
		{"dotnet.jit.compiled_il.size", "Bytes of IL compiled by the JIT since the process started", "By", ".NET 9", true},
		{"dotnet.jit.compiled_methods", "Number of methods compiled by the JIT since the process started", "{method}", ".NET 9", true},
		{"dotnet.jit.compilation.time", "Time the JIT spent compiling since the process started", "s", ".NET 9", true},
		{"dotnet.thread_pool.thread.count", "Number of thread pool threads", "{thread}", ".NET 9", true},
		{"dotnet.thread_pool.work_item.count", "Work items the thread pool completed since the process started", "{work_item}", ".NET 9", true},
		{"dotnet.thread_pool.queue.length", "Work items queued to the thread pool", "{work_item}", ".NET 9", true},
		{"dotnet.monitor.lock_contentions", "Times there was contention taking a monitor lock since the process started", "{contention}", ".NET 9", true},
		{"dotnet.timer.count", "Number of timers currently active", "{timer}", ".NET 9", true},
		{"dotnet.assembly.count", "Number of assemblies loaded", "{assembly}", ".NET 9", true},
		{"dotnet.exceptions", "Exceptions thrown in managed code, by error.type", "{exception}", ".NET 9", true},
	}
}
