package record

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/transport"
)

// TestReplayOrderAcrossConnections: a reply that arrived, when recorded,
// after the client wrote on another connection (an EventPipe session's
// rundown after StopTracing on a second connection) is held back in replay
// until the client has written that again.
func TestReplayOrderAcrossConnections(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	ep := transport.Endpoint{Network: transport.NetworkUnix, Address: "/tmp/x"}
	// Recording: session connection A, then stop connection B.
	aClient, aServer := net.Pipe()
	a, err := rec.Wrap(aClient, ep)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 3)
		io.ReadFull(aServer, buf) // "req"
		aServer.Write([]byte("events"))
	}()
	must(t, write(a, "req"))
	must(t, readN(a, 6))
	bClient, bServer := net.Pipe()
	b, err := rec.Wrap(bClient, ep)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4)
		io.ReadFull(bServer, buf) // "stop"
		bServer.Write([]byte("ok"))
		bServer.Close()
		aServer.Write([]byte("rundown"))
		aServer.Close()
	}()
	must(t, write(b, "stop"))
	must(t, readN(b, 2))
	must(t, readN(a, 7))
	a.Close()
	b.Close()

	// Replay: the rundown waits for "stop" on the second connection.
	d, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	must(t, write(ra, "req"))
	must(t, readN(ra, 6))
	ra.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := ra.Read(make([]byte, 7)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the rundown came before the stop was sent: %v", err)
	}
	ra.SetReadDeadline(time.Time{})
	got := make(chan error, 1)
	go func() { got <- readN(ra, 7) }()
	rb, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	must(t, write(rb, "stop"))
	must(t, readN(rb, 2))
	if err := <-got; err != nil {
		t.Fatalf("rundown after the stop: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(c net.Conn, s string) error {
	_, err := c.Write([]byte(s))
	return err
}

func readN(c net.Conn, n int) error {
	_, err := io.ReadFull(c, make([]byte, n))
	return err
}
