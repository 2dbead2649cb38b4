// Package reverse is the tool side of a connect-mode diagnostic port: a server
// that .NET runtimes connect to, instead of clrdiag connecting to them.
//
// A runtime started with
//
//	DOTNET_DiagnosticPorts=/path/to/clrdiag.socket[,suspend|,nosuspend],connect
//
// (suspend is the runtime's default) dials that socket (a named pipe on
// Windows), sends a 34-byte Advertise message (ADVR_V1, its instance cookie,
// its pid) and then waits for one command on the connection. After the
// command the runtime dials again and advertises again, so every command needs
// a fresh connection from the runtime. A runtime started suspended waits for
// ResumeRuntime before it runs the application.
//
// # Usage
//
//	srv, err := reverse.Listen("/tmp/app.socket", nil)
//	if err != nil {
//		return err // a *ListenError; errors.Is(err, reverse.ErrAddressInUse) for a live listener
//	}
//	defer srv.Close() // removes the socket
//	rt, err := srv.Accept(ctx) // the next runtime not seen before
//	c := diag.NewClient(rt, nil) // *Runtime is a diag.Dialer
//	err = c.ResumeRuntime(ctx)
//
// Runtime.Dial waits for the runtime's next connection (or returns the one it
// is already holding). The server reads each Advertise within
// Config.AdvertiseTimeout (250 ms, as the .NET tools do) and drops connections
// whose Advertise is malformed, partial or late. It keeps only the newest
// connection per runtime cookie. A connection that the runtime closes while
// the server holds it means the runtime has exited: Dial then returns an error
// matching ErrRuntimeGone until the runtime connects again.
//
// # Sockets
//
// Listen creates the socket with mode 0600 (bound under a temporary name,
// restricted, then renamed into place, so no other user can connect in
// between) and Close removes it. A socket file left behind by a dead listener
// is replaced; a path where another process is listening is refused with
// ErrAddressInUse; any other existing file is never removed.
//
// # Concurrency
//
// Server and Runtime are safe for concurrent use. Concurrent Dial calls on one
// Runtime each get their own connection, one per runtime reconnection.
// The package has no package-level mutable state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package reverse
