package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/clrdiag/clrdiag/transport"
)

// The main flow: find a process's endpoint, then dial it once per command.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	ep, err := transport.Resolve(ctx, 1234, nil) // nil: default TMPDIR and /proc
	if err != nil {
		fmt.Println(err) // says what was checked and what to try
		return
	}
	conn, err := ep.Dial(ctx) // retries a socket that is not accepting yet
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	// Write one request, read its reply, close; dial again for the next.
}

func ExampleDiscover() {
	ps, err := transport.Discover(context.Background(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range ps {
		fmt.Printf("%7d %-16s %s\n", p.PID, p.Name, p.Endpoint.Address)
	}
}

func ExampleParseDiagnosticPort() {
	p, err := transport.ParseDiagnosticPort("/tmp/myport.sock,connect")
	if err != nil {
		fmt.Println(err)
		return
	}
	ep, err := p.Endpoint()
	fmt.Println(p.Mode, ep.Address, err)

	// Listen is the default mode, and not supported yet.
	p, _ = transport.ParseDiagnosticPort("/tmp/myport.sock")
	_, err = p.Endpoint()
	fmt.Println(p.Mode, errors.Is(err, transport.ErrListenNotSupported))
	// Output:
	// connect /tmp/myport.sock <nil>
	// listen true
}

// Record a connection's traffic, then serve it back without the process.
func ExampleReplay() {
	dir, _ := os.MkdirTemp("", "recording")
	defer os.RemoveAll(dir)
	rec, err := transport.NewRecorder(dir)
	if err != nil {
		fmt.Println(err)
		return
	}

	// A live exchange; here the "runtime" is the other end of a net.Pipe.
	// With a real target, set Dialer.Recorder instead of calling Wrap.
	client, server := net.Pipe()
	go func() {
		req := make([]byte, 4)
		io.ReadFull(server, req)
		server.Write([]byte("reply to " + string(req)))
		server.Close()
	}()
	conn, _ := rec.Wrap(client, transport.Endpoint{Network: transport.NetworkUnix, Address: "/tmp/x"})
	conn.Write([]byte("ping"))
	live, _ := io.ReadAll(conn)
	conn.Close()

	// Later, anywhere: the replay checks the request and returns the reply.
	rd, err := transport.Replay(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	conn, _ = rd.Dial(context.Background())
	conn.Write([]byte("ping"))
	replayed, _ := io.ReadAll(conn)
	conn.Close()
	fmt.Printf("%s / %s\n", live, replayed)

	// A client that now sends something else is told where it diverged.
	rd, _ = transport.Replay(dir)
	conn, _ = rd.Dial(context.Background())
	_, err = conn.Write([]byte("pong"))
	conn.Close()
	fmt.Println(err)
	// Output:
	// reply to ping / reply to ping
	// transport: replay conn-0001.rec: client output differs from the recording at offset 1: got 6f 6e 67, recorded 69 6e 67
}
