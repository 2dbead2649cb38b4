package transport_test

import (
	"context"
	"errors"
	"fmt"
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
