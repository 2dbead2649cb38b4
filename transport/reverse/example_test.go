//go:build unix

package reverse_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/transport/reverse"
)

// A (fake) .NET 8 runtime started with
// DOTNET_DiagnosticPorts=<socket>,suspend,connect connects to clrdiag, which
// asks who it is and lets it run.
func Example() {
	dir, err := os.MkdirTemp("", "rv")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := reverse.Listen(filepath.Join(dir, "app.socket"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	app, err := ipctest.NewServer(ipctest.Config{PID: 4242, Suspended: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	go app.ConnectTo(ctx, srv.Addr())

	rt, err := srv.Accept(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := diag.NewClient(rt, nil)
	info, err := c.ProcessInfo(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runtime", rt.PID, "runs", info.CommandLine)
	if err := c.ResumeRuntime(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("suspended:", app.Suspended())
	// Output:
	// runtime 4242 runs /usr/bin/dotnet app.dll
	// suspended: false
}
