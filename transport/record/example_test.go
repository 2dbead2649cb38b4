package record_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/clrdiag/clrdiag/transport"
	"github.com/clrdiag/clrdiag/transport/record"
)

// Record a connection's traffic, then serve it back without the process.
func ExampleReplay() {
	dir, _ := os.MkdirTemp("", "recording")
	defer os.RemoveAll(dir)
	rec, err := record.NewRecorder(dir)
	if err != nil {
		fmt.Println(err)
		return
	}

	// A live exchange; here the "runtime" is the other end of a net.Pipe.
	// With a real target, set transport.Dialer.Recorder instead of calling Wrap.
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
	rd, err := record.Replay(dir)
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
	rd, _ = record.Replay(dir)
	conn, _ = rd.Dial(context.Background())
	_, err = conn.Write([]byte("pong"))
	conn.Close()
	fmt.Println(err)
	// Output:
	// reply to ping / reply to ping
	// transport: replay conn-0001.rec: client output differs from the recording at offset 1: got 6f 6e 67, recorded 69 6e 67
}
