package ipc

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. A *ServerError matches the sentinel of its HRESULT with
// errors.Is, so callers can write errors.Is(err, ipc.ErrUnknownCommand)
// whatever layer wrapped the error.
var (
	// ErrUnknownCommand: the runtime does not know the command (it is too old).
	ErrUnknownCommand = errors.New("command not supported by this runtime")
	// ErrBadEncoding: the runtime could not parse the request payload.
	ErrBadEncoding = errors.New("runtime rejected the request encoding")
	// ErrUnknownMagic: the runtime did not recognise the header magic.
	ErrUnknownMagic = errors.New("runtime rejected the protocol magic")
	// ErrNotSupported: the runtime knows the command but does not support it
	// in this configuration or on this platform.
	ErrNotSupported = errors.New("operation not supported by the runtime")
	// ErrInvalidArgument: an argument was rejected (E_INVALIDARG). Startup
	// commands also answer this when the runtime is not suspended.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFail is the generic failure E_FAIL.
	ErrFail = errors.New("operation failed")
	// ErrNotYetAvailable: the runtime is not ready for the command yet.
	ErrNotYetAvailable = errors.New("not yet available")
	// ErrRuntimeUninitialized: the runtime has not finished starting.
	ErrRuntimeUninitialized = errors.New("runtime not initialized")
	// ErrProfilerAlreadyActive: a profiler is attached or still detaching.
	ErrProfilerAlreadyActive = errors.New("a profiler is already active")
	// ErrProfilerNotAttachable: the profiler cannot be attached.
	ErrProfilerNotAttachable = errors.New("profiler not attachable")
	// ErrModuleNotFound: a library could not be loaded.
	ErrModuleNotFound = errors.New("module not found")
	// ErrEntryPointNotFound: an exported function is missing from a library.
	ErrEntryPointNotFound = errors.New("entry point not found")
	// ErrClassNotAvailable: the library does not provide the requested CLSID.
	ErrClassNotAvailable = errors.New("class not available")
	// ErrTimeout: the runtime gave up waiting (for attach: a concurrent GC).
	ErrTimeout = errors.New("runtime timed out")
	// ErrEnvVarNotFound: an environment variable does not exist.
	ErrEnvVarNotFound = errors.New("environment variable not found")

	// ErrPayloadTooLarge: a message does not fit the u16 size field
	// (MaxPayloadSize bytes of payload).
	ErrPayloadTooLarge = errors.New("payload too large for one IPC message")
	// ErrProtocol matches every *ProtocolError.
	ErrProtocol = errors.New("diagnostic IPC protocol violation")
)

// Well-known HRESULT values of the diagnostic server and the profiling API.
const (
	HRSuccess                       uint32 = 0x00000000
	HRBadEncoding                   uint32 = 0x80131384
	HRUnknownCommand                uint32 = 0x80131385
	HRUnknownMagic                  uint32 = 0x80131386
	HRUnknownError                  uint32 = 0x80131387
	HRNotSupported                  uint32 = 0x80131515
	HRFail                          uint32 = 0x80004005
	HRNotImpl                       uint32 = 0x80004001
	HRNoInterface                   uint32 = 0x80004002
	HROutOfMemory                   uint32 = 0x8007000E
	HRAccessDenied                  uint32 = 0x80070005
	HRNotYetAvailable               uint32 = 0x8013135B
	HRRuntimeUninitialized          uint32 = 0x80131371
	HRInvalidArg                    uint32 = 0x80070057
	HRInsufficientBuffer            uint32 = 0x8007007A
	HREnvVarNotFound                uint32 = 0x800000CB
	HRModNotFound                   uint32 = 0x8007007E
	HRProcNotFound                  uint32 = 0x8007007F
	HRClassNotAvailable             uint32 = 0x80040111
	HRProfilerDetaching             uint32 = 0x80131367
	HRProfilerNotAttachable         uint32 = 0x80131368
	HRProfilerAlreadyActive         uint32 = 0x8013136A
	HRUnsupportedForAttachProfiler  uint32 = 0x8013136F
	HRProfilerNotYetInitialized     uint32 = 0x80131373
	HRTimeoutWaitingForConcurrentGC uint32 = 0x80131379
)

// HRESULT describes one known HRESULT.
type HRESULT struct {
	Code uint32
	// Name is the symbolic name, e.g. "CORDIAGIPC_E_UNKNOWN_COMMAND".
	Name string
	// Meaning says in plain language what happened.
	Meaning string
	// Advice says what to try, or is empty.
	Advice string
	// Sentinel is the error a *ServerError with this code matches.
	Sentinel error
}

// hresults is the read-only table of known codes.
var hresults = [...]HRESULT{
	{HRBadEncoding, "CORDIAGIPC_E_BAD_ENCODING", "the runtime could not parse the request",
		"the runtime may be older than the request format, or a value is out of range; retry with an older command version or check the arguments", ErrBadEncoding},
	{HRUnknownCommand, "CORDIAGIPC_E_UNKNOWN_COMMAND", "this runtime does not support the command",
		"upgrade the target's .NET runtime or use an older command", ErrUnknownCommand},
	{HRUnknownMagic, "CORDIAGIPC_E_UNKNOWN_MAGIC", "the runtime did not recognise the protocol magic",
		"the endpoint speaks another protocol version; check that it is a .NET diagnostic port", ErrUnknownMagic},
	{HRUnknownError, "CORDIAGIPC_E_UNKNOWN_ERROR", "the diagnostic server hit an unexpected error",
		"retry; if it persists, check the target's own logs", nil},
	{HRNotSupported, "COR_E_NOTSUPPORTED", "the runtime does not support this operation here",
		"the feature may be unavailable on this platform or runtime flavour", ErrNotSupported},
	{HRFail, "E_FAIL", "the operation failed",
		"check the arguments and the target's own logs", ErrFail},
	{HRNotImpl, "E_NOTIMPL", "the operation is not implemented", "", ErrNotSupported},
	{HRNoInterface, "E_NOINTERFACE", "a required COM interface is missing", "", nil},
	{HROutOfMemory, "E_OUTOFMEMORY", "the target ran out of memory", "", nil},
	{HRAccessDenied, "E_ACCESSDENIED", "access was denied", "run the tool as the target's user or as root", nil},
	{HRNotYetAvailable, "CORPROF_E_NOT_YET_AVAILABLE", "the runtime is not ready for this yet",
		"retry once the runtime has finished starting", ErrNotYetAvailable},
	{HRRuntimeUninitialized, "CORPROF_E_RUNTIME_UNINITIALIZED", "the runtime has not been initialized",
		"retry once the runtime has finished starting", ErrRuntimeUninitialized},
	{HRInvalidArg, "E_INVALIDARG", "the runtime rejected an argument",
		"check the arguments", ErrInvalidArgument},
	{HRInsufficientBuffer, "ERROR_INSUFFICIENT_BUFFER", "a buffer was too small", "", nil},
	{HREnvVarNotFound, "ERROR_ENVVAR_NOT_FOUND", "the environment variable was not found", "", ErrEnvVarNotFound},
	{HRModNotFound, "ERROR_MOD_NOT_FOUND", "the library could not be loaded",
		"give an absolute path to an existing library built for the target's OS and architecture", ErrModuleNotFound},
	{HRProcNotFound, "ERROR_PROC_NOT_FOUND", "an exported function was not found in the library",
		"a profiler library must export DllGetClassObject", ErrEntryPointNotFound},
	{HRClassNotAvailable, "CLASS_E_CLASSNOTAVAILABLE", "the library does not provide the requested class",
		"check the profiler CLSID; it must be the one the library's DllGetClassObject serves", ErrClassNotAvailable},
	{HRProfilerDetaching, "CORPROF_E_PROFILER_DETACHING", "the profiler is detaching", "wait until the detach has finished", ErrProfilerAlreadyActive},
	{HRProfilerNotAttachable, "CORPROF_E_PROFILER_NOT_ATTACHABLE", "the profiler cannot be attached",
		"the profiler must implement ICorProfilerCallback3 and its InitializeForAttach must succeed", ErrProfilerNotAttachable},
	{HRProfilerAlreadyActive, "CORPROF_E_PROFILER_ALREADY_ACTIVE", "a profiler is already attached or still detaching",
		"only one profiler can be active; wait for a detaching profiler to be unloaded (at least 300 ms, 5 s by default) and retry", ErrProfilerAlreadyActive},
	{HRUnsupportedForAttachProfiler, "CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER", "this is not allowed for a profiler that attached after startup", "", ErrNotSupported},
	{HRProfilerNotYetInitialized, "CORPROF_E_PROFILER_NOT_YET_INITIALIZED", "the profiler has not finished initializing", "", ErrNotYetAvailable},
	{HRTimeoutWaitingForConcurrentGC, "CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC", "the runtime timed out waiting for a background GC to finish",
		"retry, or give a longer attach timeout", ErrTimeout},
}

// commandHRESULTs refine what an HRESULT means for one command (id 0xFF:
// every command of the set), where the generic text would point the wrong
// way. Read-only.
var commandHRESULTs = [...]struct {
	set, id         uint8
	hr              uint32
	meaning, advice string
}{
	{SetDump, 0xFF, HRFail, "the runtime could not write the dump (createdump failed)",
		"check that the directory exists in the target's file system and is writable by the target's user, that its disk has room, " +
			"and that createdump may ptrace the process (CAP_SYS_PTRACE in a container, kernel.yama.ptrace_scope); --diag logs createdump's reasons in the target's output"},
	{SetProfiler, CmdAttachProfiler, HRFail, "the profiler failed to load or initialize",
		"check the arguments (a non-empty absolute path) and the target's own logs"},
	{SetProfiler, CmdStartupProfiler, HRFail, "the runtime could not register the startup profiler",
		"check the arguments (a non-empty absolute path) and the target's own logs"},
	{SetProfiler, CmdStartupProfiler, HRInvalidArg, "the runtime refused the startup profiler",
		"a startup profiler is taken only by a runtime suspended at startup (DOTNET_DiagnosticPorts=...,suspend), before resume; check the path is absolute"},
	{SetProcess, CmdApplyStartupHook, HRInvalidArg, "the runtime refused the startup hook",
		"give the absolute path of an assembly that exists in the target's file system (a running runtime runs the hook at once, a suspended one at resume)"},
}

// lookupForCommand returns the table entry of hr with the meaning and
// advice refined for the command set/id.
func lookupForCommand(set, id uint8, hr uint32) (HRESULT, bool) {
	h, ok := LookupHRESULT(hr)
	if !ok {
		return h, false
	}
	for _, c := range commandHRESULTs {
		if c.set == set && (c.id == id || c.id == 0xFF) && c.hr == hr {
			h.Meaning, h.Advice = c.meaning, c.advice
		}
	}
	if hr == HRBadEncoding {
		// A runtime older than the command may answer BAD_ENCODING instead
		// of UNKNOWN_COMMAND (.NET Core 3.1 does for StartupProfiler).
		if c, known := LookupCommand(set, id); known && c.Major > 3 {
			h.Advice = fmt.Sprintf("%s needs %s or later (an older runtime answers BAD_ENCODING for a command it does not know); on %s or later, check the arguments", c.Name, c.Since, c.Since)
		}
	}
	return h, true
}

// LookupHRESULT returns the table entry of hr.
func LookupHRESULT(hr uint32) (HRESULT, bool) {
	for _, h := range hresults {
		if h.Code == hr {
			return h, true
		}
	}
	return HRESULT{}, false
}

// HRESULTInfo returns the symbolic name and plain-language meaning of hr.
func HRESULTInfo(hr uint32) (name, meaning string, ok bool) {
	h, ok := LookupHRESULT(hr)
	return h.Name, h.Meaning, ok
}

// HRESULTs returns a copy of the table of known codes.
func HRESULTs() []HRESULT { return append([]HRESULT(nil), hresults[:]...) }

// ServerError is an error reply from the diagnostic server (command set
// 0xFF, id 0xFF), or an OK reply whose HRESULT payload is a failure.
type ServerError struct {
	// CommandSet and CommandID name the request that failed; both are zero
	// when unknown (ReadReply does not know the request).
	CommandSet, CommandID uint8
	HRESULT               uint32
	// Message is the runtime's own text, sent by GenerateCoreDump3.
	Message string
}

// Error gives the command, the HRESULT name, its meaning and what to try.
func (e *ServerError) Error() string {
	var b strings.Builder
	if e.CommandSet != 0 || e.CommandID != 0 {
		b.WriteString(CommandName(e.CommandSet, e.CommandID))
		b.WriteString(": ")
	}
	h, known := lookupForCommand(e.CommandSet, e.CommandID, e.HRESULT)
	switch {
	case e.HRESULT == HRUnknownCommand && (e.CommandSet != 0 || e.CommandID != 0):
		b.WriteString("this runtime does not support it")
		if c, ok := LookupCommand(e.CommandSet, e.CommandID); ok && c.Since != "" {
			fmt.Fprintf(&b, "; it needs %s or later", c.Since)
		}
		fmt.Fprintf(&b, " (%s, HRESULT 0x%08X)", h.Name, e.HRESULT)
	case known:
		fmt.Fprintf(&b, "%s (%s, HRESULT 0x%08X)", h.Meaning, h.Name, e.HRESULT)
	default:
		fmt.Fprintf(&b, "the runtime failed with HRESULT 0x%08X", e.HRESULT)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": runtime says %q", e.Message)
	}
	if known && h.Advice != "" && e.HRESULT != HRUnknownCommand {
		b.WriteString("; ")
		b.WriteString(h.Advice)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's HRESULT.
func (e *ServerError) Is(target error) bool {
	h, ok := LookupHRESULT(e.HRESULT)
	return ok && h.Sentinel != nil && h.Sentinel == target
}

// ProtocolError reports a malformed or truncated message.
type ProtocolError struct {
	// What names the structure or field, e.g. "reply header".
	What string
	// Offset is the byte offset in the payload or stream where it failed.
	Offset int
	// Expected and Got are byte counts for short reads (Expected > 0).
	Expected, Got int
	// Reason explains other failures.
	Reason string
	// Err is an underlying I/O error, if any.
	Err error
}

func (e *ProtocolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "malformed %s", e.What)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Expected > 0 {
		fmt.Fprintf(&b, ": expected %d bytes at offset %d, got %d", e.Expected, e.Offset, e.Got)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Expected > 0 || e.Err != nil {
		// A short read: the usual causes.
		b.WriteString(" (the peer may have closed the connection early or is not a .NET diagnostic server)")
	} else {
		b.WriteString(" (the peer is not a .NET runtime, or a broken one)")
	}
	return b.String()
}

// Unwrap returns the underlying I/O error.
func (e *ProtocolError) Unwrap() error { return e.Err }

// Is makes every *ProtocolError match ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }
