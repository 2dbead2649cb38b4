// Package ipc is the wire codec of the .NET Diagnostic IPC protocol: the
// 20-byte message header, every command's request payload, the server's OK
// and Error replies, the HRESULTs the runtime answers with, and the Advertise
// message of reverse (connect-mode) diagnostic ports.
//
// The package does no I/O of its own beyond reading and writing whole
// messages on a caller's io.Reader/io.Writer; dialing, deadlines and
// command fallback live in package diag.
//
// # Wire rules
//
// Everything is little-endian. A message is a Header (magic
// "DOTNET_IPC_V1\0", u16 size of the whole message, u8 command set, u8
// command id, u16 reserved) and a payload of at most MaxPayloadSize bytes;
// larger payloads are refused with ErrPayloadTooLarge before anything is
// written. Strings are a u32 count of UTF-16 code units including the NUL,
// then the code units; the encoder writes "" as count 1 and the decoder reads
// count 0 as "". GUIDs travel in Windows byte order (see GUID). Every length
// read from the wire is checked against the bytes actually present before
// anything is allocated, and malformed input gives a *ProtocolError (which
// says how many bytes were expected for short reads), never a panic.
//
// # Usage
//
//	req := &ipc.AttachProfilerRequest{AttachTimeoutMS: 30000, CLSID: clsid, Path: "/opt/prof.so"}
//	payload, err := req.MarshalBinary()
//	...
//	err = ipc.WriteMessage(conn, ipc.SetProfiler, ipc.CmdAttachProfiler, payload)
//	reply, err := ipc.ReadReply(conn)
//	if errors.Is(err, ipc.ErrProfilerAlreadyActive) { ... }
//
// Error replies become a *ServerError; errors.Is matches it against the
// sentinel of its HRESULT (ErrUnknownCommand, ErrProfilerAlreadyActive,
// ErrInvalidArgument, ...), and its message names the command, the HRESULT
// and what to try. HRESULTInfo and LookupHRESULT expose the table.
//
// # Concurrency
//
// The package has no mutable state; all functions are safe for concurrent
// use. Request and reply values are plain data and are not synchronised.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package ipc
