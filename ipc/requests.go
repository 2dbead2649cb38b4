package ipc

import (
	"fmt"
)

// Request is a request payload that knows its command.
type Request interface {
	// Command returns the command set and id the payload is sent with.
	Command() (set, id uint8)
	// AppendBinary appends the payload bytes (without the header).
	AppendBinary(b []byte) ([]byte, error)
}

// trailing reports bytes left after a request payload was decoded.
func trailing(d *decoder) error {
	if d.err == nil && d.remaining() != 0 {
		d.err = &ProtocolError{What: d.what, Offset: d.offset(), Reason: fmt.Sprintf("%d unexpected trailing bytes", d.remaining())}
	}
	return d.err
}

// DumpType is the kind of dump GenerateCoreDump writes.
type DumpType uint32

// Dump types.
const (
	DumpNormal   DumpType = 1 // "Mini" in dotnet-dump
	DumpWithHeap DumpType = 2 // "Heap"
	DumpTriage   DumpType = 3
	DumpFull     DumpType = 4
)

func (t DumpType) String() string {
	switch t {
	case DumpNormal:
		return "Normal"
	case DumpWithHeap:
		return "WithHeap"
	case DumpTriage:
		return "Triage"
	case DumpFull:
		return "Full"
	}
	return fmt.Sprintf("DumpType(%d)", uint32(t))
}

// DumpFlags are GenerateCoreDump2/3 flags. Version 1 knows only
// DumpLoggingEnabled (its "diagnostics" u32).
type DumpFlags uint32

// Dump flags.
const (
	DumpLoggingEnabled        DumpFlags = 1
	DumpVerboseLoggingEnabled DumpFlags = 2
	DumpCrashReportEnabled    DumpFlags = 4
)

// GenerateCoreDumpRequest is the payload of GenerateCoreDump 1-3:
// string path, u32 type, u32 flags.
type GenerateCoreDumpRequest struct {
	// Version is 1, 2 or 3 and picks the command id; 0 means 1.
	Version int
	Path    string
	Type    DumpType
	Flags   DumpFlags
}

// Command implements Request.
func (r *GenerateCoreDumpRequest) Command() (uint8, uint8) {
	switch r.Version {
	case 2:
		return SetDump, CmdGenerateCoreDump2
	case 3:
		return SetDump, CmdGenerateCoreDump3
	}
	return SetDump, CmdGenerateCoreDump
}

// AppendBinary implements Request.
func (r *GenerateCoreDumpRequest) AppendBinary(b []byte) ([]byte, error) {
	if r.Version < 0 || r.Version > 3 {
		return b, fmt.Errorf("GenerateCoreDump version %d: want 1, 2 or 3", r.Version)
	}
	if r.Version <= 1 && r.Flags&^DumpLoggingEnabled != 0 {
		return b, fmt.Errorf("GenerateCoreDump (version 1) supports only the logging flag, got flags 0x%x: %w", uint32(r.Flags), ErrInvalidArgument)
	}
	b = appendString(b, r.Path)
	b = appendU32(b, uint32(r.Type))
	return appendU32(b, uint32(r.Flags)), nil
}

// MarshalBinary returns the payload.
func (r *GenerateCoreDumpRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload; Version is left as is.
func (r *GenerateCoreDumpRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("GenerateCoreDump request", b)
	r.Path = d.str("path")
	r.Type = DumpType(d.u32("type"))
	r.Flags = DumpFlags(d.u32("flags"))
	return trailing(d)
}

// StopTracingRequest is the payload of StopTracing: u64 sessionId.
type StopTracingRequest struct {
	SessionID uint64
}

// Command implements Request.
func (r *StopTracingRequest) Command() (uint8, uint8) { return SetEventPipe, CmdStopTracing }

// AppendBinary implements Request.
func (r *StopTracingRequest) AppendBinary(b []byte) ([]byte, error) {
	return appendU64(b, r.SessionID), nil
}

// MarshalBinary returns the payload.
func (r *StopTracingRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *StopTracingRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("StopTracing request", b)
	r.SessionID = d.u64("session id")
	return trailing(d)
}

// AttachProfilerRequest is the payload of AttachProfiler:
// u32 attachTimeout, GUID clsid, string path, array<byte> clientData.
type AttachProfilerRequest struct {
	// AttachTimeoutMS is sent as is. The runtime treats it as milliseconds
	// (the spec says so and the runtime passes it to LoadProfilerForAttach);
	// the .NET client sends seconds by mistake. It only bounds the wait for a
	// background GC when the profiler enables GC events after attach.
	AttachTimeoutMS uint32
	CLSID           GUID
	Path            string
	ClientData      []byte
}

// Command implements Request.
func (r *AttachProfilerRequest) Command() (uint8, uint8) { return SetProfiler, CmdAttachProfiler }

// AppendBinary implements Request. The clientData size is always the real
// length (3.1 trusts it and over-reads otherwise).
func (r *AttachProfilerRequest) AppendBinary(b []byte) ([]byte, error) {
	if len(r.ClientData) > MaxPayloadSize {
		return b, fmt.Errorf("AttachProfiler: %d bytes of client data: %w", len(r.ClientData), ErrPayloadTooLarge)
	}
	b = appendU32(b, r.AttachTimeoutMS)
	b = append(b, r.CLSID[:]...)
	b = appendString(b, r.Path)
	b = appendU32(b, uint32(len(r.ClientData)))
	return append(b, r.ClientData...), nil
}

// MarshalBinary returns the payload.
func (r *AttachProfilerRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *AttachProfilerRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("AttachProfiler request", b)
	r.AttachTimeoutMS = d.u32("attach timeout")
	r.CLSID = d.guid("clsid")
	r.Path = d.str("path")
	n := d.count("client data", 1)
	r.ClientData = nil
	if p := d.take("client data", n); n > 0 && p != nil {
		r.ClientData = append([]byte(nil), p...)
	}
	return trailing(d)
}

// StartupProfilerRequest is the payload of StartupProfiler: GUID clsid,
// string path. The runtime accepts it only while suspended at startup.
type StartupProfilerRequest struct {
	CLSID GUID
	Path  string
}

// Command implements Request.
func (r *StartupProfilerRequest) Command() (uint8, uint8) { return SetProfiler, CmdStartupProfiler }

// AppendBinary implements Request.
func (r *StartupProfilerRequest) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, r.CLSID[:]...)
	return appendString(b, r.Path), nil
}

// MarshalBinary returns the payload.
func (r *StartupProfilerRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *StartupProfilerRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("StartupProfiler request", b)
	r.CLSID = d.guid("clsid")
	r.Path = d.str("path")
	return trailing(d)
}

// SetEnvironmentVariableRequest is the payload of SetEnvironmentVariable:
// string name, string value. An empty Value goes as a null string (count
// 0), which the runtime passes on as SetEnvironmentVariable(name, NULL):
// the variable is removed (a string of just its NUL would set it to "").
type SetEnvironmentVariableRequest struct {
	Name, Value string
}

// Command implements Request.
func (r *SetEnvironmentVariableRequest) Command() (uint8, uint8) {
	return SetProcess, CmdSetEnvironmentVariable
}

// AppendBinary implements Request.
func (r *SetEnvironmentVariableRequest) AppendBinary(b []byte) ([]byte, error) {
	if r.Name == "" {
		return b, fmt.Errorf("SetEnvironmentVariable: empty variable name: %w", ErrInvalidArgument)
	}
	b = appendString(b, r.Name)
	return appendOptionalString(b, r.Value), nil
}

// MarshalBinary returns the payload.
func (r *SetEnvironmentVariableRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *SetEnvironmentVariableRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("SetEnvironmentVariable request", b)
	r.Name = d.str("name")
	r.Value = d.str("value")
	return trailing(d)
}

// PerfMapType selects what EnablePerfMap writes.
type PerfMapType uint32

// Perf map types.
const (
	PerfMapDisabled PerfMapType = 0
	PerfMapAll      PerfMapType = 1 // perf map and jitdump
	PerfMapJitDump  PerfMapType = 2
	PerfMapPerfMap  PerfMapType = 3
)

func (t PerfMapType) String() string {
	switch t {
	case PerfMapDisabled:
		return "Disabled"
	case PerfMapAll:
		return "All"
	case PerfMapJitDump:
		return "JitDump"
	case PerfMapPerfMap:
		return "PerfMap"
	}
	return fmt.Sprintf("PerfMapType(%d)", uint32(t))
}

// EnablePerfMapRequest is the payload of EnablePerfMap: u32 type.
type EnablePerfMapRequest struct {
	Type PerfMapType
}

// Command implements Request.
func (r *EnablePerfMapRequest) Command() (uint8, uint8) { return SetProcess, CmdEnablePerfMap }

// AppendBinary implements Request.
func (r *EnablePerfMapRequest) AppendBinary(b []byte) ([]byte, error) {
	return appendU32(b, uint32(r.Type)), nil
}

// MarshalBinary returns the payload.
func (r *EnablePerfMapRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *EnablePerfMapRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("EnablePerfMap request", b)
	r.Type = PerfMapType(d.u32("type"))
	return trailing(d)
}

// ApplyStartupHookRequest is the payload of ApplyStartupHook: string path.
type ApplyStartupHookRequest struct {
	Path string
}

// Command implements Request.
func (r *ApplyStartupHookRequest) Command() (uint8, uint8) { return SetProcess, CmdApplyStartupHook }

// AppendBinary implements Request.
func (r *ApplyStartupHookRequest) AppendBinary(b []byte) ([]byte, error) {
	return appendString(b, r.Path), nil
}

// MarshalBinary returns the payload.
func (r *ApplyStartupHookRequest) MarshalBinary() ([]byte, error) { return r.AppendBinary(nil) }

// UnmarshalBinary decodes the payload.
func (r *ApplyStartupHookRequest) UnmarshalBinary(b []byte) error {
	d := newDecoder("ApplyStartupHook request", b)
	r.Path = d.str("path")
	return trailing(d)
}

// EmptyRequest is a command without payload: ProcessInfo 1-3,
// ResumeRuntime, ProcessEnvironment, DisablePerfMap.
type EmptyRequest struct {
	Set, ID uint8
}

// Command implements Request.
func (r *EmptyRequest) Command() (uint8, uint8) { return r.Set, r.ID }

// AppendBinary implements Request; it appends nothing.
func (r *EmptyRequest) AppendBinary(b []byte) ([]byte, error) { return b, nil }

// UnmarshalBinary accepts only an empty payload.
func (r *EmptyRequest) UnmarshalBinary(b []byte) error {
	return trailing(newDecoder(CommandName(r.Set, r.ID)+" request", b))
}

// RawRequest sends Payload as is under an arbitrary command.
type RawRequest struct {
	Set, ID uint8
	Payload []byte
}

// Command implements Request.
func (r *RawRequest) Command() (uint8, uint8) { return r.Set, r.ID }

// AppendBinary implements Request.
func (r *RawRequest) AppendBinary(b []byte) ([]byte, error) { return append(b, r.Payload...), nil }

// DecodeRequest decodes the payload of a request into its typed form. An
// unknown command gives a *RawRequest and no error; a malformed payload gives
// a *ProtocolError (a server answers it with BAD_ENCODING).
func DecodeRequest(set, id uint8, payload []byte) (Request, error) {
	var r interface {
		Request
		UnmarshalBinary([]byte) error
	}
	switch set {
	case SetDump:
		switch id {
		case CmdGenerateCoreDump, CmdGenerateCoreDump2, CmdGenerateCoreDump3:
			r = &GenerateCoreDumpRequest{Version: int(id)}
		}
	case SetEventPipe:
		switch {
		case id == CmdStopTracing:
			r = &StopTracingRequest{}
		case id >= CmdCollectTracing && id <= CmdCollectTracing6:
			r = &CollectTracingRequest{Version: int(id-CmdCollectTracing) + 1}
		}
	case SetProfiler:
		switch id {
		case CmdAttachProfiler:
			r = &AttachProfilerRequest{}
		case CmdStartupProfiler:
			r = &StartupProfilerRequest{}
		}
	case SetProcess:
		switch id {
		case CmdProcessInfo, CmdResumeRuntime, CmdProcessEnvironment, CmdProcessInfo2, CmdDisablePerfMap, CmdProcessInfo3:
			r = &EmptyRequest{Set: set, ID: id}
		case CmdSetEnvironmentVariable:
			r = &SetEnvironmentVariableRequest{}
		case CmdEnablePerfMap:
			r = &EnablePerfMapRequest{}
		case CmdApplyStartupHook:
			r = &ApplyStartupHookRequest{}
		}
	}
	if r == nil {
		return &RawRequest{Set: set, ID: id, Payload: append([]byte(nil), payload...)}, nil
	}
	if err := r.UnmarshalBinary(payload); err != nil {
		return r, err
	}
	return r, nil
}
