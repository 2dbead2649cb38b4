// Package ipctest provides a fake .NET diagnostic server for tests, in the
// spirit of net/http/httptest. It listens on a real Unix socket named like a
// runtime's (dotnet-diagnostic-{pid}-{key}-socket, so discovery finds it),
// speaks the Diagnostic IPC protocol byte for byte as documented for .NET
// Core 3.1 and .NET 5 to 11, and imitates the state of a process: its
// environment, startup suspension, an attached profiler, perf maps, dumps
// and EventPipe sessions.
//
// # Usage
//
//	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET6, Suspended: true})
//	if err != nil { t.Fatal(err) }
//	defer srv.Close()
//	c := diag.NewClient(srv, nil) // *Server is a diag.Dialer
//	info, err := c.ProcessInfo(ctx) // answered by ProcessInfo2 on .NET 6
//
// The Runtime profile decides which commands exist; the others are answered
// exactly as a runtime does (an Error reply with UNKNOWN_COMMAND, then the
// connection closes). A bad magic gets UNKNOWN_MAGIC and a malformed payload
// BAD_ENCODING. Config.Fault injects misbehaviour per command: closing early,
// a short reply, never answering, an oversize reply, an E_FAIL error reply,
// or an answer after Config.Delay. Requests records
// every request, decoded.
//
// Config.Tracing receives each CollectTracing* session with the connection
// to stream nettrace bytes into and a channel closed by StopTracing.
//
// ConnectTo imitates a runtime with a connect-mode diagnostic port: it
// dials a listener, sends the Advertise message, serves one command and
// reconnects; StartConnecting runs one for the length of a test.
//
// # Concurrency
//
// A Server serves connections concurrently; its accessor methods are safe
// for concurrent use. Close ends every connection and session and waits for
// them.
//
// The server uses AF_UNIX sockets on every platform, including Windows 10
// and later, rather than named pipes. SocketPath and ShortDir give a
// test socket paths short enough for AF_UNIX, removed when it ends.
//
// Stability: test support, public so that programs built on diag can test
// against it; it follows the ipc command table and may change with it.
package ipctest
