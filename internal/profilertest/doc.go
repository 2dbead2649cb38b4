// Package profilertest builds and observes the example CoreCLR profiler in
// examples/profiler for tests: Build compiles profiler.c with gcc into the
// git-ignored .cache/profiler, ReadLog parses the log the profiler writes to
// the file named by the target's CLRDIAG_PROFILER_LOG, and Mapped tells
// whether the library is loaded in a process (from /proc/PID/maps).
//
// When gcc is missing, tests that need the profiler skip with a loud reason,
// except when the environment variable CI is "true": then they fail.
//
// Environment:
//
//	CLRDIAG_GCC   path of the C compiler (default: gcc on PATH)
package profilertest

// CLSID is the class id of the example profiler, as written in
// examples/profiler/profiler.c and its README.
const CLSID = "2fb05c3a-1410-4825-9389-c5f72ecddf83"

// LogEnv is the environment variable, set on the target process, naming the
// file the profiler appends its events to.
const LogEnv = "CLRDIAG_PROFILER_LOG"
