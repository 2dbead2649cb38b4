package ipc

import "fmt"

// DecodeHRESULTReply decodes the payload of an OK reply that carries an
// HRESULT (most commands): i32 hresult, 4 bytes. Extra bytes are ignored.
func DecodeHRESULTReply(payload []byte) (uint32, error) {
	d := newDecoder("HRESULT reply", payload)
	return d.u32("hresult"), d.finish()
}

// AppendHRESULTReply appends an HRESULT reply payload.
func AppendHRESULTReply(b []byte, hr uint32) []byte { return appendU32(b, hr) }

// DecodeSessionIDReply decodes the OK reply of CollectTracing* and
// StopTracing: u64 sessionId.
func DecodeSessionIDReply(payload []byte) (uint64, error) {
	d := newDecoder("session id reply", payload)
	return d.u64("session id"), d.finish()
}

// AppendSessionIDReply appends a session id reply payload.
func AppendSessionIDReply(b []byte, id uint64) []byte { return appendU64(b, id) }

// DecodeErrorReply decodes the payload of an Error reply: i32 hresult,
// optionally followed (GenerateCoreDump3) by a string message. A message
// that does not decode is dropped: the HRESULT is what counts.
func DecodeErrorReply(payload []byte) (hr uint32, message string, err error) {
	d := newDecoder("error reply", payload)
	hr = d.u32("hresult")
	if d.err != nil {
		return 0, "", d.err
	}
	if d.remaining() >= 4 {
		message = d.str("message")
		if d.err != nil {
			message = ""
		}
	}
	return hr, message, nil
}

// AppendErrorReply appends an Error reply payload. A non-empty message is
// written after the HRESULT as GenerateCoreDump3 does; withMessage forces
// the string even when empty.
func AppendErrorReply(b []byte, hr uint32, message string, withMessage bool) []byte {
	b = appendU32(b, hr)
	if withMessage || message != "" {
		b = appendString(b, message)
	}
	return b
}

// ProcessInfo is the reply of ProcessInfo, ProcessInfo2 and ProcessInfo3.
type ProcessInfo struct {
	// Version is the command that answered: 1 (ProcessInfo), 2 or 3.
	Version int
	// PayloadVersion is ProcessInfo3's own version field (RuntimeIdentifier
	// is present from 1 on).
	PayloadVersion uint32
	PID            uint64
	RuntimeCookie  GUID
	CommandLine    string
	OS             string
	Arch           string
	// ManagedEntrypointAssemblyName and ClrProductVersion are sent from
	// version 2 on.
	ManagedEntrypointAssemblyName string
	ClrProductVersion             string
	// RuntimeIdentifier (e.g. "linux-x64") is sent by version 3.
	RuntimeIdentifier string
}

// ProcessInfoCommand returns the command id of ProcessInfo version v (1-3).
func ProcessInfoCommand(v int) (uint8, error) {
	switch v {
	case 1:
		return CmdProcessInfo, nil
	case 2:
		return CmdProcessInfo2, nil
	case 3:
		return CmdProcessInfo3, nil
	}
	return 0, fmt.Errorf("ProcessInfo version %d: want 1, 2 or 3", v)
}

// DecodeProcessInfo decodes the reply of ProcessInfo version v (1, 2 or 3).
// Bytes left over after the last field are a *ProtocolError, except in a
// ProcessInfo3 reply whose payload version is above 1: that one is
// designed to grow, and its new fields are skipped.
func DecodeProcessInfo(v int, payload []byte) (*ProcessInfo, error) {
	id, err := ProcessInfoCommand(v)
	if err != nil {
		return nil, err
	}
	d := newDecoder(CommandName(SetProcess, id)+" reply", payload)
	p := &ProcessInfo{Version: v}
	if v == 3 {
		p.PayloadVersion = d.u32("version")
	}
	p.PID = d.u64("pid")
	p.RuntimeCookie = d.guid("runtime cookie")
	p.CommandLine = d.str("command line")
	p.OS = d.str("os")
	p.Arch = d.str("arch")
	if v >= 2 {
		p.ManagedEntrypointAssemblyName = d.str("entrypoint assembly")
		p.ClrProductVersion = d.str("clr product version")
	}
	if v == 3 && p.PayloadVersion >= 1 {
		p.RuntimeIdentifier = d.str("runtime identifier")
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	if n := d.remaining(); n > 0 && (v < 3 || p.PayloadVersion <= 1) {
		return nil, &ProtocolError{What: CommandName(SetProcess, id) + " reply", Offset: d.offset(),
			Reason: fmt.Sprintf("%d bytes left over after the last field", n)}
	}
	return p, nil
}

// AppendBinary appends the reply payload for p.Version (1-3).
func (p *ProcessInfo) AppendBinary(b []byte) ([]byte, error) {
	if _, err := ProcessInfoCommand(p.Version); err != nil {
		return b, err
	}
	if p.Version == 3 {
		b = appendU32(b, p.PayloadVersion)
	}
	b = appendU64(b, p.PID)
	b = append(b, p.RuntimeCookie[:]...)
	b = appendString(b, p.CommandLine)
	b = appendString(b, p.OS)
	b = appendString(b, p.Arch)
	if p.Version >= 2 {
		b = appendString(b, p.ManagedEntrypointAssemblyName)
		b = appendString(b, p.ClrProductVersion)
	}
	if p.Version == 3 && p.PayloadVersion >= 1 {
		b = appendString(b, p.RuntimeIdentifier)
	}
	return b, nil
}

// MarshalBinary returns the reply payload.
func (p *ProcessInfo) MarshalBinary() ([]byte, error) { return p.AppendBinary(nil) }

// EnvironmentReply is the OK payload of ProcessEnvironment: the size of the
// continuation that follows on the connection.
type EnvironmentReply struct {
	IncomingBytes uint32
	Future        uint16
}

// DecodeEnvironmentReply decodes u32 nIncomingBytes, u16 future.
func DecodeEnvironmentReply(payload []byte) (EnvironmentReply, error) {
	d := newDecoder("ProcessEnvironment reply", payload)
	r := EnvironmentReply{IncomingBytes: d.u32("incoming bytes"), Future: d.u16("future")}
	return r, d.finish()
}

// AppendBinary appends the 6 payload bytes.
func (r EnvironmentReply) AppendBinary(b []byte) ([]byte, error) {
	return appendU16(appendU32(b, r.IncomingBytes), r.Future), nil
}

// DecodeEnvironment decodes the ProcessEnvironment continuation: u32 count,
// then count strings "NAME=value". The whole continuation must be consumed.
func DecodeEnvironment(block []byte) ([]string, error) {
	d := newDecoder("environment block", block)
	n := d.count("entries", 4)
	var env []string
	if n > 0 {
		env = make([]string, 0, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		env = append(env, d.str("entry"))
	}
	if err := trailing(d); err != nil {
		return nil, err
	}
	if env == nil {
		env = []string{}
	}
	return env, nil
}

// AppendEnvironment appends an environment block continuation.
func AppendEnvironment(b []byte, env []string) []byte {
	b = appendU32(b, uint32(len(env)))
	for _, e := range env {
		b = appendString(b, e)
	}
	return b
}
