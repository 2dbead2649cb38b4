//go:build unix

package stacks_test

import (
	"context"
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/stacks"
	"github.com/clrdiag/clrdiag/stacks/stackstest"
)

// A stack snapshot of a (fake) .NET Core 3.1 process, printed as
// dotnet-stack prints it.
func Example() {
	app, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET3_1, Tracing: func(ctx context.Context, s *ipctest.TracingSession) error {
		return stackstest.WriteSession(ctx, s, stackstest.Config{})
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	snap, err := stacks.Capture(context.Background(), diag.NewClient(app, nil), stacks.Config{
		Notify: func(n stacks.Note) { fmt.Println("note:", n) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := snap.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Thread (0x101):
	//   App!App.Program.Wait
	//   App!App.Program.Main
	//
	// Thread (0x202):
	//   0xdead0000 (unresolved)
	//   App!App.Worker.Spin
	//   App!App.Program.Main
}
