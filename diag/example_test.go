package diag_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// A client asks a (fake) .NET 6 runtime who it is, falling back from
// ProcessInfo3 to ProcessInfo2, and tries a .NET 8-only command.
func Example() {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET6, PID: 4242,
		ProcessInfo: ipc.ProcessInfo{ClrProductVersion: "6.0.36"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	c := diag.NewClient(srv, &diag.Config{Timeout: 5 * time.Second})
	ctx := context.Background()
	info, err := c.ProcessInfo(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.PID, info.ClrProductVersion, "answered by ProcessInfo", info.Version)

	err = c.EnablePerfMap(ctx, ipc.PerfMapAll)
	fmt.Println(errors.Is(err, ipc.ErrUnknownCommand))
	fmt.Println(err)
	// Output:
	// 4242 6.0.36 answered by ProcessInfo 2
	// true
	// EnablePerfMap: this runtime does not support it; it needs .NET 8 or later (CORDIAGIPC_E_UNKNOWN_COMMAND, HRESULT 0x80131385)
}
