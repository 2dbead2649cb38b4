package ipc_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/clrdiag/clrdiag/ipc"
)

// A request is encoded, written as one message, and the reply read back;
// here a bytes.Buffer stands in for the connection and holds an error reply
// as a .NET Core 3.1 runtime sends it for ProcessInfo.
func Example() {
	var conn bytes.Buffer
	if err := ipc.WriteMessage(&conn, ipc.SetProcess, ipc.CmdProcessInfo, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("request: % x\n", conn.Bytes()[14:])

	conn.Reset()
	_ = ipc.WriteMessage(&conn, ipc.SetServer, ipc.CmdError, ipc.AppendHRESULTReply(nil, ipc.HRUnknownCommand))
	_, err := ipc.ReadReply(&conn)
	var se *ipc.ServerError
	if errors.As(err, &se) {
		se.CommandSet, se.CommandID = ipc.SetProcess, ipc.CmdProcessInfo
	}
	fmt.Println(errors.Is(err, ipc.ErrUnknownCommand))
	fmt.Println(err)
	// Output:
	// request: 14 00 04 00 00 00
	// true
	// ProcessInfo: this runtime does not support it; it needs .NET 5 or later (CORDIAGIPC_E_UNKNOWN_COMMAND, HRESULT 0x80131385)
}

func ExampleParseGUID() {
	g, _ := ipc.ParseGUID("cf0d821e-299b-5307-a3d8-b283c03916dd")
	fmt.Printf("% x\n%s\n", g[:], g)
	// Output:
	// 1e 82 0d cf 9b 29 07 53 a3 d8 b2 83 c0 39 16 dd
	// cf0d821e-299b-5307-a3d8-b283c03916dd
}
