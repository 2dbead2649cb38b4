package ipctest_test

import (
	"context"
	"fmt"

	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
)

// A fake .NET 8 runtime suspended at startup: a startup hook is accepted,
// then ResumeRuntime lets it run.
func Example() {
	srv, err := ipctest.NewServer(ipctest.Config{Runtime: ipctest.NET8, Suspended: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	send := func(set, id uint8, payload []byte) error {
		c, err := srv.Dial(context.Background())
		if err != nil {
			return err
		}
		defer c.Close()
		if err := ipc.WriteMessage(c, set, id, payload); err != nil {
			return err
		}
		_, err = ipc.ReadReply(c)
		return err
	}
	hook, _ := (&ipc.ApplyStartupHookRequest{Path: "/srv/hook.dll"}).MarshalBinary()
	fmt.Println(send(ipc.SetProcess, ipc.CmdApplyStartupHook, hook))
	fmt.Println(send(ipc.SetProcess, ipc.CmdResumeRuntime, nil))
	fmt.Println(srv.StartupHooks(), srv.Suspended())
	fmt.Println(send(ipc.SetProcess, ipc.CmdApplyStartupHook, hook) != nil)
	// Output:
	// <nil>
	// <nil>
	// [/srv/hook.dll] false
	// true
}
